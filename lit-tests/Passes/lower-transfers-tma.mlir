// chunk-lower-transfers, backend tma: the same copy programs as ldst
// (lower-transfers-ldst.mlir), but each moves its blocks of a chunk with
// bulk tensor copies: it makes one tensor descriptor of each buffer it
// copies between (the source's through the peer mapping, one per source
// rank), at the first chunk that needs it, orders earlier generic writes
// before the copies (a proxy fence), copies blocks pid, pid + C, ... of the
// chunk at its place in the buffers with tt.descriptor_load /
// tt.descriptor_store, waits until its bulk stores are complete, then
// counts itself done, and the last program publishes the flag, as ldst's
// do.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers{copy-programs=4})' \
// RUN:   | FileCheck %s
//
// The input is in the state chunk-expand-collectives and chunk-bind-kernel
// leave (see lower-transfers-ldst.mlir).

// Contiguous chunks: the 512 x 64 bf16 buffer is rows of 128 bytes (64
// elements) to its tensor maps; a chunk of 256 rows is copied in blocks of
// 128 x 64 (16 KiB) from its first element's row, element / 64, in a loop
// Triton pipelines in 3 stages (two blocks loading while one is stored).
// CHECK:      copy_programs = 4 : i64
// CHECK-SAME: num_flags = 4 : i64
// CHECK-LABEL: "tt.func"
// CHECK:      ^bb0(%arg0: !tt.ptr<bf16>, %arg1: i32, %arg2: i32, %arg3: !tt.ptr<i64>, %arg4: !tt.ptr<i32>, %arg5: i32, %arg6: !tt.ptr<i32>):
// CHECK:      %[[PID:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK:      %[[C4:.*]] = arith.constant 4 : i32
// CHECK:      %[[COPIER:.*]] = arith.cmpi slt, %[[PID]], %[[C4]]
// CHECK:      scf.if %[[COPIER]] {
// CHECK:        %[[DELTA:.*]] = arith.divsi {{.*}} {tt.divisibility = dense<16> : tensor<1xi32>} : i64
// CHECK:        %[[PEER:.*]] = "tt.addptr"(%arg0, %[[DELTA]])
// CHECK:        %[[SDESC:.*]] = "tt.make_tensor_descriptor"(%[[PEER]], {{.*}}) {padding = 1 : i32} : (!tt.ptr<bf16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<128x64xbf16>>
// CHECK:        %[[DDESC:.*]] = "tt.make_tensor_descriptor"(%arg0, {{.*}}) {padding = 1 : i32} : (!tt.ptr<bf16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<128x64xbf16>>
// CHECK-NEXT:   "tt.elementwise_inline_asm"() {asm_string = "{ fence.proxy.async.global; mov.u32 $0, 0; }", constraints = "=r", packed_element = 1 : i32, pure = false}
// CHECK-NEXT:   %[[C64:.*]] = arith.constant 64 : i64
// CHECK-NEXT:   %[[SROW64:.*]] = arith.divsi %{{.*}}, %[[C64]] : i64
// CHECK-NEXT:   %[[SROW:.*]] = arith.trunci %[[SROW64]] : i64 to i32
// CHECK:        %[[DROW64:.*]] = arith.divsi %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:   %[[DROW:.*]] = arith.trunci %[[DROW64]] : i64 to i32
// CHECK:        scf.for %[[B:.*]] = %[[PID]] to %{{.*}} step %[[C4]] : i32 {
// CHECK:          %[[R:.*]] = arith.addi %[[SROW]], %{{.*}} : i32
// CHECK-NEXT:     %[[C:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:     %[[BLOCK:.*]] = "tt.descriptor_load"(%[[SDESC]], %[[R]], %[[C]]) {cache = 1 : i32, evict = 1 : i32} : (!tt.tensordesc<tensor<128x64xbf16>>, i32, i32) -> tensor<128x64xbf16>
// CHECK-NEXT:     %[[DR:.*]] = arith.addi %[[DROW]], %{{.*}} : i32
// CHECK-NEXT:     %[[DC:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:     "tt.descriptor_store"(%[[DDESC]], %[[BLOCK]], %[[DR]], %[[DC]])
// CHECK-NEXT:   } {tt.num_stages = 3 : i32}
// CHECK-NEXT:   "tt.elementwise_inline_asm"() {asm_string = "{ cp.async.bulk.wait_group 0; mov.u32 $0, 0; }"
// CHECK:        gpu.barrier
// CHECK:        "tt.atomic_rmw"({{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 4 : i32}
// CHECK:        scf.if
// CHECK:          "tt.atomic_rmw"({{.*}}, %arg5, %{{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
// CHECK:      } else {
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(1) backend(tma), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "rows", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Two buffers gathered in place (an attention kernel's K and V): each gets
// tensor maps of its own. V's source map is made over V's peer mapping:
// sharing K's, V's copies would move K's rows.
// CHECK-LABEL: sym_name = "two"
// CHECK:      %[[KPEER:.*]] = "tt.addptr"(%arg0, %{{.*}}) : (!tt.ptr<bf16>, i64)
// CHECK:      "tt.make_tensor_descriptor"(%[[KPEER]],
// CHECK:      "tt.make_tensor_descriptor"(%arg0,
// CHECK:      %[[VPEER:.*]] = "tt.addptr"(%arg1, %{{.*}}) : (!tt.ptr<bf16>, i64)
// CHECK:      "tt.make_tensor_descriptor"(%[[VPEER]],
// CHECK:      "tt.make_tensor_descriptor"(%arg1,
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @K : !chunk.buffer<512x64xbf16> bind(0)
    chunk.buffer @V : !chunk.buffer<512x64xbf16> bind(1)
    chunk.transfer @K_p0_c0 local copy_engine from <@K[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@K[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_p1_c0 pull tma from <@K[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@K[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @V_p0_c0 local copy_engine from <@V[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@V[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_V"}
    chunk.transfer @V_p1_c0 pull tma from <@V[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@V[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_V"}
    chunk.consume @K dim(0) tile(128)
    chunk.consume @V dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, !tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "two", sym_visibility = "public"}> ({
  ^bb0(%k: !tt.ptr<bf16>, %v: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid, %c128 : i32
    %pk = "tt.addptr"(%k, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %pv = "tt.addptr"(%v, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%pk) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    %y = "tt.load"(%pv) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    %z = arith.addf %x, %y : bf16
    "tt.store"(%pk, %z) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Gathering columns: each chunk is a box of 512 rows of 4096 elements, 8192
// apart in the buffer; the tensor maps are the buffer (512 rows of 8192,
// pitch 8192, unit stride) and the blocks 128 x 64: four down, 64 across,
// block b at the chunk's row plus (b / 64) * 128, its column plus
// (b % 64) * 64.
// CHECK-LABEL: sym_name = "columns"
// CHECK:       %[[C512:.*]] = arith.constant 512 : i32
// CHECK-NEXT:  %[[C8192:.*]] = arith.constant 8192 : i32
// CHECK-NEXT:  %[[P8192:.*]] = arith.constant 8192 : i64
// CHECK-NEXT:  %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT:  "tt.make_tensor_descriptor"(%{{.*}}, %[[C512]], %[[C8192]], %[[P8192]], %[[C1]]) {{.*}} -> !tt.tensordesc<tensor<128x64xbf16>>
// CHECK:       %[[COL64:.*]] = arith.remsi %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:  %[[COL:.*]] = arith.trunci %[[COL64]] : i64 to i32
// CHECK:       %[[BLOCKS:.*]] = arith.constant 256 : i32
// CHECK-NEXT:  scf.for %[[B:.*]] = %{{.*}} to %[[BLOCKS]] step %{{.*}} : i32 {
// CHECK-NEXT:    %[[ACROSS:.*]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[DOWN:.*]] = arith.divsi %[[B]], %[[ACROSS]]
// CHECK-NEXT:    %[[R128:.*]] = arith.constant 128 : i32
// CHECK-NEXT:    %[[ROW:.*]] = arith.muli %[[DOWN]], %[[R128]]
// CHECK-NEXT:    %[[ACROSS2:.*]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[RIGHT:.*]] = arith.remsi %[[B]], %[[ACROSS2]]
// CHECK-NEXT:    %[[C64:.*]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[BCOL:.*]] = arith.muli %[[RIGHT]], %[[C64]]
// CHECK-NEXT:    %[[AT_ROW:.*]] = arith.addi %{{.*}}, %[[ROW]]
// CHECK-NEXT:    %[[AT_COL:.*]] = arith.addi %[[COL]], %[[BCOL]]
// CHECK-NEXT:    "tt.descriptor_load"(%{{.*}}, %[[AT_ROW]], %[[AT_COL]])
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x8192xbf16> bind(0)
    // chunk.all_gather @A dim(1) chunks(1) backend(tma), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (0, d0 * 4096)] [512, 4096]> on (d0) -> (d0) to <@A[(d0) -> (0, d0 * 4096)] [512, 4096]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (0, ((d0 + 1) mod 2) * 4096)] [512, 4096]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (0, ((d0 + 1) mod 2) * 4096)] [512, 4096]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "columns", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Two chunks from the same peer: one tensor map of each buffer serves
// both (made at the first); each chunk is its own loop, count and flag.
// CHECK-LABEL: sym_name = "two_chunks"
// CHECK-COUNT-2: "tt.make_tensor_descriptor"
// CHECK-NOT:   "tt.make_tensor_descriptor"
// CHECK:       "tt.descriptor_load"
// CHECK:       "tt.descriptor_load"
// CHECK:       "tt.return"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(1)
    chunk.transfer @A_p1_c1 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(2)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "two_chunks", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A buffer of 8200 rows of 12 bf16 is not whole rows of 128 bytes, so no
// tensor map of the whole buffer: each chunk (4096 rows, 768 rows of 64
// elements from its first) gets tensor maps of its own.
// CHECK-LABEL: sym_name = "odd_buffer"
// CHECK:       %[[C768:.*]] = arith.constant 768 : i32
// CHECK-NEXT:  %[[C64:.*]] = arith.constant 64 : i32
// CHECK-NEXT:  %[[P64:.*]] = arith.constant 64 : i64
// CHECK-NEXT:  %{{.*}} = arith.constant 1 : i64
// CHECK-NEXT:  "tt.make_tensor_descriptor"(%{{.*}}, %[[C768]], %[[C64]], %[[P64]], %{{.*}}) {{.*}} -> !tt.tensordesc<tensor<128x64xbf16>>
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<8200x12xbf16> bind(0)
    chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 4096, 0)] [4096, 12]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 4096, 0)] [4096, 12]> on (d0) -> (d0) order(1)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "odd_buffer", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Rows of 4 bf16 (8 bytes): narrower than a bulk copy's 16 bytes.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<4096x8xbf16> bind(0)
    // expected-error @+1 {{the tma backend cannot copy this chunk: its rows of 4 elements are narrower than the 16 bytes a bulk copy moves at least}}
    chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (0, ((d0 + 1) mod 2) * 4)] [4096, 4]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (0, ((d0 + 1) mod 2) * 4)] [4096, 4]> on (d0) -> (d0) order(1)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "narrow", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A chunk whose source starts at row 1 of rows of 12 bf16: element 12, 24
// bytes into the buffer, where no bulk copy starts.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<8208x12xbf16> bind(0)
    // expected-error @+1 {{the tma backend cannot copy this chunk: on rank 0 in @A, it starts at element 12 of its buffer, not at a multiple of 16 bytes}}
    chunk.transfer @A_shifted pull tma from <@A[(d0) -> (1, 0)] [4096, 12]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (4096, 0)] [4096, 12]> on (d0) -> (d0) order(1)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "shifted", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}
