// chunk-lower-transfers, backend ldst: the fused kernel's
// first `copy-programs` programs copy the chunks from the peer (vector
// loads through the heap mapping), count themselves done per chunk
// (acq_rel/sys add), and the last one publishes the flag (release/sys
// exchange); the other programs run the original kernel with their
// program id shifted down.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers{copy-programs=4})' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,PROGRAMS
//
// The input is in the state chunk-expand-collectives and chunk-bind-kernel
// leave: the all-gathers are their transfers (or written as transfers by
// hand) and the kernels take the fused ABI's arguments (%rank, ...,
// %heap_bases, %flags, %epoch; chunk.abi_first_arg). The last case is a
// reduce-scatter after chunk-fuse-reductions{mode=stage} too.

// CHECK:      copy_programs = 4 : i64
// CHECK-SAME: num_flags = 4 : i64
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
    // chunk.all_gather @A dim(0) chunks(1) backend(ldst), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
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

// A chunk of 192 x 64 = 3 x 4096 elements: steps of 4096, the largest that
// divide it.
// CHECK-LABEL: sym_name = "odd_rows"
// CHECK:      scf.for
// CHECK:        "tt.make_range"() {end = 4096 : i32, start = 0 : i32}
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<384x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(1) backend(ldst), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 192, 0)] [192, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 192, 0)] [192, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 192, 0)] [192, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 192, 0)] [192, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(64)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "odd_rows", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c64 = arith.constant 64 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid, %c64 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
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
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "ring", sym_visibility = "public"}> ({
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

// 100 x 64 elements per chunk: not a multiple of 4096.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<200x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(1) backend(ldst), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 100, 0)] [100, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 100, 0)] [100, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    // expected-error @below {{the ldst backend copies chunks of a multiple of 4096 elements; this chunk has 6400}}
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 100, 0)] [100, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 100, 0)] [100, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
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
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
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
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// The copies a staged reduce-scatter recorded (chunk-fuse-reductions{mode=
// stage}, fuse-reductions-stage.mlir) are run by the same copy programs:
// rank r's programs take rank r's list in order, wait for the chunk's tiles
// (produced[g] >= epoch * 2) and for the owner's reads of the previous
// epoch (consumed[g] >= (epoch - 1) * 2), store 16384-element blocks into
// the owner's @P_staging through the peer mapping, count themselves on
// counter 20 + i (acq_rel/sys), and the last sets the owner's
// arrived[g * 2 + r] and its own copied[g] to the epoch (release/sys).
// The schedule: 4 copy programs, counters after the 20 flags, nothing for
// the side stream.
// PROGRAMS:      copy_programs = 4 : i64
// PROGRAMS-SAME: num_flags = 40 : i64
// PROGRAMS-SAME: reduction_copies = []
// PROGRAMS-LABEL: "tt.func"
// PROGRAMS:      ^bb0(%[[P:.*]]: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %{{.*}}: !tt.ptr<bf16>, %[[STAGING:.*]]: !tt.ptr<bf16>):
// PROGRAMS:      %[[PID:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// PROGRAMS:      %[[C4:.*]] = arith.constant 4 : i32
// PROGRAMS-NEXT: %[[COPIER:.*]] = arith.cmpi slt, %[[PID]], %[[C4]]
// PROGRAMS-NEXT: %[[COMPUTE:.*]] = arith.subi %[[PID]], %[[C4]]
// PROGRAMS:      scf.if %[[COPIER]] {
// Rank 0's list: its partial of rank 1's chunk 2, then chunk 3.
// PROGRAMS:        %[[R0:.*]] = arith.cmpi eq, %[[RANK]], %{{.*}}
// PROGRAMS:        scf.if %[[R0]] {
// PROGRAMS:          %[[C2:.*]] = arith.constant 2 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C2]]], %[[EPOCH]] count(2)
// PROGRAMS:          %[[C14:.*]] = arith.constant 14 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C14]]], %{{.*}} count(2)
// Rows 512.. of @P (element 32768) into slot 0 of rank 1's @P_staging.
// PROGRAMS:          %[[SRC_OFF:.*]] = arith.constant 32768 : i64
// PROGRAMS-NEXT:     %[[SRC:.*]] = "tt.addptr"(%[[P]], %[[SRC_OFF]])
// PROGRAMS:          %[[DST:.*]] = "tt.addptr"(%[[STAGING]], %{{.*}})
// PROGRAMS-NEXT:     %[[REMOTE:.*]] = chunk.peer_ptr %[[DST]], %{{.*}} : !tt.ptr<bf16>
// PROGRAMS:          scf.for %{{.*}} = %[[PID]] to %{{.*}} step %[[C4]]
// PROGRAMS:            "tt.make_range"() {end = 16384 : i32, start = 0 : i32}
// PROGRAMS:            "tt.splat"(%[[SRC]])
// PROGRAMS:            "tt.load"
// PROGRAMS:            "tt.splat"(%[[REMOTE]])
// PROGRAMS:            "tt.store"
// PROGRAMS:          %[[C20:.*]] = arith.constant 20 : i32
// PROGRAMS-NEXT:     gpu.barrier
// PROGRAMS-NEXT:     %[[COUNTER:.*]] = "tt.addptr"(%[[FLAGS]], %[[C20]])
// PROGRAMS:          "tt.atomic_rmw"(%[[COUNTER]], {{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 4 : i32}
// PROGRAMS:          arith.remsi
// PROGRAMS:          scf.if
// PROGRAMS:            %[[OWNER_FLAGS:.*]] = chunk.peer_ptr %[[FLAGS]], %{{.*}} : !tt.ptr<i32>
// PROGRAMS-NEXT:       %[[C8:.*]] = arith.constant 8 : i32
// PROGRAMS-NEXT:       %[[ARRIVED:.*]] = "tt.addptr"(%[[OWNER_FLAGS]], %[[C8]])
// PROGRAMS:            "tt.atomic_rmw"(%[[ARRIVED]], %[[EPOCH]], {{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
// PROGRAMS:            %[[C18:.*]] = arith.constant 18 : i32
// PROGRAMS-NEXT:       %[[COPIED:.*]] = "tt.addptr"(%[[FLAGS]], %[[C18]])
// PROGRAMS:            "tt.atomic_rmw"(%[[COPIED]], %[[EPOCH]], {{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
// PROGRAMS:          %[[C3:.*]] = arith.constant 3 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C3]]], %[[EPOCH]] count(2)
// PROGRAMS:          %[[C21:.*]] = arith.constant 21 : i32
// Rank 1's list.
// PROGRAMS:        scf.if
// PROGRAMS:          %[[C0:.*]] = arith.constant 0 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C0]]], %[[EPOCH]] count(2)
// The GEMM's programs come after the copy programs.
// PROGRAMS:      } else {
// PROGRAMS:        arith.divsi %[[COMPUTE]]
module {
  chunk.plan @p world_size(2) attributes {chunk.reduction_copies = [[{arrived = 8, bytes = 32768, consumed = array<i64: 14, 2>, copied = 18, dst_buffer = "P_staging", dst_offset = 0, owner = 1, produced = array<i64: 2, 2>, src_buffer = "P", src_offset = 65536}, {arrived = 10, bytes = 32768, consumed = array<i64: 15, 2>, copied = 19, dst_buffer = "P_staging", dst_offset = 32768, owner = 1, produced = array<i64: 3, 2>, src_buffer = "P", src_offset = 98304}], [{arrived = 5, bytes = 32768, consumed = array<i64: 12, 2>, copied = 16, dst_buffer = "P_staging", dst_offset = 0, owner = 0, produced = array<i64: 0, 2>, src_buffer = "P", src_offset = 0}, {arrived = 7, bytes = 32768, consumed = array<i64: 13, 2>, copied = 17, dst_buffer = "P_staging", dst_offset = 32768, owner = 0, produced = array<i64: 1, 2>, src_buffer = "P", src_offset = 32768}]], chunk.staged = ["P"]} {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
  }
  // The fused kernel, trimmed to what this pass reads: its ABI arguments
  // and its grid (the tiles' order starts from program_id(0) / 2). Its
  // fused tiles' waits, sums and arrivals pass through unchanged.
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>, %buffer_P_staging: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C", "P_staging"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Gathering columns: each chunk is 512 rows of 4096 elements, 8192 apart,
// copied in blocks of 16384 elements, element e of a block at row
// e / 4096, column e % 4096 in both buffers.
// CHECK:       name = "A", shape = array<i64: 512, 8192>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:           %[[E:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<16384xi32>
// CHECK:           %[[ROW:.*]] = arith.divsi %[[E]], %{{.*}} : tensor<16384xi32>
// CHECK:           %[[COL:.*]] = arith.remsi %[[E]], %{{.*}} : tensor<16384xi32>
// CHECK:           %[[AT:.*]] = arith.muli %[[ROW]], %{{.*}} : tensor<16384xi32>
// CHECK-NEXT:      arith.addi %[[AT]], %[[COL]] : tensor<16384xi32>
// CHECK:           "tt.load"
// CHECK:           "tt.store"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x8192xbf16> bind(0)
    // chunk.all_gather @A dim(1) chunks(1) backend(ldst), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (0, d0 * 4096)] [512, 4096]> on (d0) -> (d0) to <@A[(d0) -> (0, d0 * 4096)] [512, 4096]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (0, ((d0 + 1) mod 2) * 4096)] [512, 4096]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (0, ((d0 + 1) mod 2) * 4096)] [512, 4096]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}
