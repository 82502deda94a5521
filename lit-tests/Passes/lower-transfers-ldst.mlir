// chunk-lower-transfers, backend ldst: the fused kernel's
// first `copy-programs` programs copy the chunks from the peer (vector
// loads through the heap mapping), count themselves done per chunk
// (acq_rel/sys add), and the last one publishes the flag (release/sys
// exchange); the other programs run the original kernel with their
// program id shifted down.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives,chunk-bind-kernel,chunk-lower-transfers{copy-programs=4})' \
// RUN:   | FileCheck %s

// CHECK:      \22copy_programs\22:4
// CHECK-SAME: \22num_flags\22:4
// CHECK-LABEL: "tt.func"
// The ABI arguments: %arg1 rank, %arg3 heap bases, %arg4 flags, %arg5 epoch.
// CHECK:      ^bb0(%arg0: !tt.ptr<bf16>, %arg1: i32, %arg2: i32, %arg3: !tt.ptr<i64>, %arg4: !tt.ptr<i32>, %arg5: i32, %arg6: !tt.ptr<i32>):
// CHECK:      %[[PID:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK:      %[[C4:.*]] = arith.constant 4 : i32
// CHECK:      %[[COPIER:.*]] = arith.cmpi slt, %[[PID]], %[[C4]]
// CHECK:      %[[COMPUTE:.*]] = arith.subi %[[PID]], %[[C4]]
// CHECK:      scf.if %[[COPIER]] {
// The peer's heap base minus ours, in elements, a multiple of 16.
// CHECK:        "tt.addptr"(%arg3, %arg1)
// CHECK:        arith.divsi {{.*}} {tt.divisibility = dense<16> : tensor<1xi32>} : i64
// CHECK:        scf.for %[[B:.*]] = %[[PID]] to %{{.*}} step %[[C4]] : i32 {
// Each step moves 32 KiB: 16384 bf16 elements of the 256x64 chunk.
// CHECK:          "tt.make_range"() {end = 16384 : i32, start = 0 : i32}
// CHECK:          "tt.load"({{.*}}) {{.*}}: (tensor<16384x!tt.ptr<bf16>>) -> tensor<16384xbf16>
// CHECK:          "tt.store"
// CHECK:        }
// CHECK:        gpu.barrier
// CHECK:        "tt.atomic_rmw"({{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 4 : i32}
// CHECK:        arith.remsi
// CHECK:        scf.if
// CHECK:          "tt.atomic_rmw"({{.*}}, %arg5, %{{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
// CHECK:      } else {
// CHECK:        arith.muli %[[COMPUTE]], %{{.*}} : i32
// CHECK:        "tt.load"
// CHECK:        "tt.store"
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NEXT: "tt.return"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(1) backend(ldst)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}], function_type = (!tt.ptr<bf16>) -> (), sym_name = "rows", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// A chunk of 192 x 64 = 3 x 4096 elements: steps of 4096, the largest that
// divide it.
// CHECK-LABEL: sym_name = "odd_rows"
// CHECK:      scf.for
// CHECK:        "tt.make_range"() {end = 4096 : i32, start = 0 : i32}
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<384x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(1) backend(ldst)
    chunk.consume @A dim(0) tile(64)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}], function_type = (!tt.ptr<bf16>) -> (), sym_name = "odd_rows", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    %c64 = arith.constant 64 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid, %c64 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// Rank maps as a plan writes them: `(r - 1) mod 4` is 3 on rank 0, as the
// verifier evaluated it, so the copy corrects the truncating remainder
// (-1) before it indexes the heap bases. `(r + 2) mod 4` cannot go below
// zero and stays a plain remainder.
// CHECK-LABEL: sym_name = "ring"
// CHECK:      scf.if
// CHECK:        %[[M1:.*]] = arith.constant -1 : i32
// CHECK:        %[[SUB:.*]] = arith.addi %arg1, %[[M1]] : i32
// CHECK:        %[[C4:.*]] = arith.constant 4 : i32
// CHECK:        %[[REM:.*]] = arith.remsi %[[SUB]], %[[C4]] : i32
// CHECK:        %[[NEG:.*]] = arith.cmpi slt, %[[REM]], %{{.*}} : i32
// CHECK:        %[[UP:.*]] = arith.addi %[[REM]], %[[C4]] : i32
// CHECK:        %[[LEFT:.*]] = arith.select %[[NEG]], %[[UP]], %[[REM]] : i32
// CHECK:        "tt.addptr"(%arg3, %[[LEFT]])
// CHECK:        %[[TWO:.*]] = arith.addi %arg1, %{{.*}} : i32
// CHECK-NEXT:   arith.constant 4 : i32
// CHECK-NEXT:   %[[ACROSS:.*]] = arith.remsi %[[TWO]], %{{.*}} : i32
// CHECK-NOT:    arith.select
// CHECK:        "tt.addptr"(%arg3, %[[ACROSS]])
module {
  chunk.plan @p world_size(4) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_own local copy_engine from <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) order(0)
    chunk.transfer @A_left pull ldst from <@A[(r) -> (((r - 1) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r - 1) mod 4) to <@A[(r) -> (((r - 1) mod 4) * 256, 0)] [256, 64]> on (r) -> (r) order(1)
    chunk.transfer @A_across pull ldst from <@A[(r) -> (((r + 2) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r + 2) mod 4) to <@A[(r) -> (((r + 2) mod 4) * 256, 0)] [256, 64]> on (r) -> (r) order(2)
    chunk.transfer @A_right pull ldst from <@A[(r) -> (((r + 1) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r + 1) mod 4) to <@A[(r) -> (((r + 1) mod 4) * 256, 0)] [256, 64]> on (r) -> (r) order(3)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}], function_type = (!tt.ptr<bf16>) -> (), sym_name = "ring", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// Gathering columns: chunks are not contiguous.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x8192xbf16> bind(0)
    // expected-error @below {{the ldst backend copies contiguous chunks only (whole rows)}}
    chunk.all_gather @A dim(1) chunks(1) backend(ldst)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// 100 x 64 elements per chunk: not a multiple of 4096.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<200x64xbf16> bind(0)
    // expected-error @below {{the ldst backend copies chunks of a multiple of 4096 elements; this chunk has 6400}}
    chunk.all_gather @A dim(0) chunks(1) backend(ldst)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// The copy code computes rank maps and offsets in i32: a map that passes
// through 2^31 on some rank is refused, even where its value is small
// ((r * 2^30 + 1) mod 3 is (r + 1) mod 3, but 2 * 2^30 overflows).
module {
  chunk.plan @p world_size(3) {
    chunk.buffer @A : !chunk.buffer<768x64xbf16> bind(0)
    chunk.transfer @A_own local copy_engine from <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) order(0)
    // expected-error @below {{chunk-lower-transfers (ldst): `d0 * 1073741824` may reach 2147483648 on ranks 0 to 2, beyond the 32-bit arithmetic of the copy code}}
    chunk.transfer @A_next pull ldst from <@A[(r) -> (((r + 1) mod 3) * 256, 0)] [256, 64]> on (r) -> ((r * 1073741824 + 1) mod 3) to <@A[(r) -> (((r + 1) mod 3) * 256, 0)] [256, 64]> on (r) -> (r) order(1)
    chunk.transfer @A_prev pull ldst from <@A[(r) -> (((r + 2) mod 3) * 256, 0)] [256, 64]> on (r) -> ((r + 2) mod 3) to <@A[(r) -> (((r + 2) mod 3) * 256, 0)] [256, 64]> on (r) -> (r) order(2)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}], function_type = (!tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// Written from the source's side: rank r's instance writes rank r + 1's
// buffer, which rank r's copy programs cannot load into.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
    chunk.transfer @own local copy_engine from <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) order(0)
    // expected-error @below {{the ldst backend's copy programs load into their own rank's buffer, but on rank 0 this transfer writes rank 1's: write it from the destination's side, `to <...> on (r) -> (r)`, with its source rank map naming the peer}}
    chunk.transfer @out push ldst from <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> ((r + 1) mod 2) order(1)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}], function_type = (!tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) : () -> ()
}
