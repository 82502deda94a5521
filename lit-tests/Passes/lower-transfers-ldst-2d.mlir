// chunk-lower-transfers, backend ldst in a 2D-grid
// kernel: the runtime launches one more grid plane in front
// (program_id(2) = 0, recorded as copy_plane); its programs with linear id
// x + y * num_programs(0) below copy-programs copy the chunks, the others
// return; the kernel runs in the next plane and keeps its program ids.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers{copy-programs=4})' \
// RUN:   | FileCheck %s
//
// The input is in the state chunk-expand-collectives and chunk-bind-kernel
// leave: the all-gathers are their transfers (or written as transfers by
// hand) and the kernels take the fused ABI's arguments (%rank, ...,
// %heap_bases, %flags, %epoch; chunk.abi_first_arg).

// CHECK:      copy_plane = true
// CHECK-SAME: copy_programs = 4 : i64
// CHECK-LABEL: "tt.func"
// CHECK:      %[[X:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK-NEXT: %[[NX:.*]] = "tt.get_num_programs"() {axis = 0 : i32}
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[Y:.*]] = "tt.get_program_id"() {axis = 1 : i32}
// CHECK-NEXT: %[[YN:.*]] = arith.muli %[[Y]], %[[NX]]
// CHECK-NEXT: %[[ID:.*]] = arith.addi %[[X]], %[[YN]]
// CHECK-NEXT: %[[Z:.*]] = "tt.get_program_id"() {axis = 2 : i32}
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[PLANE0:.*]] = arith.cmpi eq, %[[Z]], %[[C0]]
// CHECK:      scf.if %[[PLANE0]] {
// CHECK-NEXT:   %[[COPIES:.*]] = arith.cmpi slt, %[[ID]], %[[C4]]
// CHECK-NEXT:   scf.if %[[COPIES]] {
// CHECK:          scf.for %{{.*}} = %[[ID]] to %{{.*}} step %[[C4]] : i32 {
// CHECK:          "tt.atomic_rmw"({{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 4 : i32}
// CHECK:      } else {
// The kernel, with its own program ids.
// CHECK:        %[[ROW:.*]] = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK-NEXT:   "tt.get_program_id"() <{axis = 1 : i32}>
// CHECK-NEXT:   arith.muli %[[ROW]], %{{.*}} : i32
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(1) backend(ldst), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}], function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "grid2d", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid, %c128 : i32
    %q = arith.addi %row, %pid_n : i32
    %p = "tt.addptr"(%a, %q) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A 3D grid leaves no plane for the copy programs.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(1) backend(ldst), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    // expected-error @below {{the ldst backend needs a 1D or 2D grid, but kernel @grid3d reads axis 2}}
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "grid3d", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %p2 = "tt.get_program_id"() <{axis = 2 : i32}> : () -> i32
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}
