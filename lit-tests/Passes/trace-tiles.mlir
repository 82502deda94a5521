// chunk-trace-tiles: the plan gets a trace buffer, the kernel takes it as
// its last argument, and every tile records its begin, its waits and its
// end at record `pid * R + i`.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-trace-tiles{records=64 tiles-per-program=2})' \
// RUN:   | FileCheck %s
//
// The input is in the state chunk-expand-collectives, chunk-bind-kernel,
// chunk-reorder-tiles and chunk-insert-waits leave: the all-gather is its
// transfers, the kernel takes the fused ABI's arguments, its row tile
// index is marked (chunk.tile_index = "A") and each tile waits for its
// chunk of A (chunk.wait) unless the rows are the rank's own.

// A persistent kernel: the tile index is computed in the tile loop, so a
// program's i-th tile is record pid * 2 + i, and its third tile would be
// record 64 (past the end: not recorded).
// CHECK-LABEL: chunk.plan @persistent
// CHECK:       chunk.buffer @synco_trace : !chunk.buffer<64x8xi64> {chunk.staging, chunk.trace}
// CHECK:       "tt.func"() <{function_type = ({{.*}}, !tt.ptr<i32>, !tt.ptr<i64>) -> ()
// CHECK-NEXT:  ^bb0({{.*}}, %[[TRACE:.*]]: !tt.ptr<i64>):
// CHECK:       %[[PID:.*]] = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK:       scf.for %[[IV:.*]] = %[[PID]] to %{{.*}} step %[[STEP:.*]] : i32 {
// The kernel reads grid axis 0 only: the program id is the linear one.
// CHECK:         %[[T:.*]] = arith.remsi {{.*}} {chunk.tile_index = "A"}
// CHECK-NEXT:    %[[LINEAR:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK-NEXT:    %[[R:.*]] = arith.constant 2 : i32
// CHECK-NEXT:    %[[DONE:.*]] = arith.subi %[[IV]], %[[PID]]
// CHECK-NEXT:    %[[I:.*]] = arith.divsi %[[DONE]], %[[STEP]]
// CHECK-NEXT:    %[[FIRST:.*]] = arith.muli %[[LINEAR]], %[[R]]
// CHECK-NEXT:    %[[REC:.*]] = arith.addi %[[FIRST]], %[[I]]
// CHECK-NEXT:    %[[FITS:.*]] = arith.cmpi slt, %[[I]], %[[R]]
// CHECK-NEXT:    %[[PAST:.*]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[RECORD:.*]] = arith.select %[[FITS]], %[[REC]], %[[PAST]]
// CHECK-NEXT:    chunk.trace tile_begin %[[TRACE]][%[[RECORD]]], %[[T]] records(64) : !tt.ptr<i64>
// CHECK:         scf.if
// CHECK-NEXT:      chunk.trace wait_begin %[[TRACE]][%[[RECORD]]], %[[T]] records(64)
// CHECK-NEXT:      chunk.wait
// CHECK-NEXT:      chunk.trace wait_end %[[TRACE]][%[[RECORD]]], %[[T]] records(64)
// CHECK-NEXT:    {{^ *}}}
// The K loop is not instrumented.
// CHECK-NEXT:    scf.for
// CHECK-NOT:       chunk.trace
// CHECK:           "tt.store"{{.*}}
// CHECK-NEXT:    {{^ *}}}
// CHECK-NEXT:    chunk.trace tile_end %[[TRACE]][%[[RECORD]]], %[[T]] records(64)
// CHECK-NEXT:  }
// CHECK-NEXT:  "tt.return"
// CHECK:       chunk.abi_buffers = ["synco_trace"]
module {
  chunk.plan @persistent world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %c8 = arith.constant 8 : i32
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    scf.for %tile = %pid to %c8 step %c4 : i32 {
      // The row tile, rotated by chunk-reorder-tiles: (tile + rank * 4) mod 8.
      %shift = arith.muli %rank, %c4 : i32
      %sum = arith.addi %tile, %shift : i32
      %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
      %row = arith.muli %t, %c128 : i32
      %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      // The wait chunk-insert-waits put before the tile's loads of A.
      %c128_w = arith.constant 128 : i32
      %row_w = arith.muli %t, %c128_w : i32
      %c256 = arith.constant 256 : i32
      %chunk = arith.divsi %row_w, %c256 : i32
      %c2 = arith.constant 2 : i32
      %owner = arith.divsi %chunk, %c2 : i32
      %remote = arith.cmpi ne, %owner, %rank : i32
      %c0_w = arith.constant 0 : i32
      %flag = arith.addi %chunk, %c0_w : i32
      scf.if %remote {
        chunk.wait %flags[%flag], %epoch : !tt.ptr<i32>
      }
      scf.for %i = %c0 to %k step %c1 : i32 {
        %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
        %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
        "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
      }
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----


// One tile per program: the record is the program's linear id, the tile
// ends at the kernel's return, and a buffer the plan does not bind keeps
// its ABI argument in front of the trace's.
// CHECK-LABEL: chunk.plan @one_tile
// CHECK:       chunk.buffer @B : !chunk.buffer<1024x64xbf16>
// CHECK-NEXT:  chunk.buffer @synco_trace
// CHECK:       ^bb0({{.*}}, %[[B:.*]]: !tt.ptr<bf16>, %[[TRACE:.*]]: !tt.ptr<i64>):
// CHECK:       %[[T:.*]] = arith.remsi {{.*}} {chunk.tile_index = "A"}
// CHECK:       chunk.trace tile_begin %[[TRACE]][%[[LINEAR:.*]]], %[[T]] records(64)
// CHECK:       chunk.trace tile_end %[[TRACE]][%[[LINEAR]]], %[[T]] records(64)
// CHECK-NEXT:  "tt.return"
// CHECK:       chunk.abi_buffers = ["B", "synco_trace"]
module {
  chunk.plan @one_tile world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @B : !chunk.buffer<1024x64xbf16>
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_B: !tt.ptr<bf16>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile, rotated by chunk-reorder-tiles: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    // The wait chunk-insert-waits put before the tile's loads of A.
    %c128_w = arith.constant 128 : i32
    %row_w = arith.muli %t, %c128_w : i32
    %c256 = arith.constant 256 : i32
    %chunk = arith.divsi %row_w, %c256 : i32
    %c2 = arith.constant 2 : i32
    %owner = arith.divsi %chunk, %c2 : i32
    %remote = arith.cmpi ne, %owner, %rank : i32
    %c0_w = arith.constant 0 : i32
    %flag = arith.addi %chunk, %c0_w : i32
    scf.if %remote {
      chunk.wait %flags[%flag], %epoch : !tt.ptr<i32>
    }
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["B"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----


// A 2D grid (pid_m, pid_n): the record is pid_m + num_programs(0) * pid_n,
// and no grid axis the kernel does not read (the ldst backend's copy
// programs take axis 2).
// CHECK-LABEL: chunk.plan @grid2d
// CHECK:       %[[T:.*]] = arith.remsi {{.*}} {chunk.tile_index = "A"}
// CHECK-NEXT:  %[[Y:.*]] = "tt.get_program_id"() {axis = 1 : i32}
// CHECK-NEXT:  %[[X:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK-NEXT:  %[[NX:.*]] = "tt.get_num_programs"() {axis = 0 : i32}
// CHECK-NEXT:  %[[XY:.*]] = arith.muli %[[NX]], %[[Y]]
// CHECK-NEXT:  %[[LINEAR:.*]] = arith.addi %[[X]], %[[XY]]
// CHECK-NEXT:  chunk.trace tile_begin %{{.*}}[%[[LINEAR]]], %[[T]] records(64)
// CHECK-NOT:   axis = 2
module {
  chunk.plan @grid2d world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    // chunk-reorder-tiles made the row tile the slow axis of the grid and
    // rotated it: linear = pid_m + pid_n * num_programs(0), row tile
    // (linear / num_programs(1) + rank * 4) mod 8, column linear mod
    // num_programs(1).
    %n0 = "tt.get_num_programs"() {axis = 0 : i32} : () -> i32
    %n1 = "tt.get_num_programs"() {axis = 1 : i32} : () -> i32
    %across = arith.muli %pid_n, %n0 : i32
    %linear = arith.addi %pid_m, %across : i32
    %slow = arith.divsi %linear, %n1 : i32
    %fast = arith.remsi %linear, %n1 : i32
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %slow, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %col = arith.addi %row, %fast : i32
    %p = "tt.addptr"(%a, %col) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    // The wait chunk-insert-waits put before the tile's loads of A.
    %c128_w = arith.constant 128 : i32
    %row_w = arith.muli %t, %c128_w : i32
    %c256 = arith.constant 256 : i32
    %chunk = arith.divsi %row_w, %c256 : i32
    %c2 = arith.constant 2 : i32
    %owner = arith.divsi %chunk, %c2 : i32
    %remote = arith.cmpi ne, %owner, %rank : i32
    %c0_w = arith.constant 0 : i32
    %flag = arith.addi %chunk, %c0_w : i32
    scf.if %remote {
      chunk.wait %flags[%flag], %epoch : !tt.ptr<i32>
    }
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// A plan that already has the trace buffer (the pass ran twice).
module {
  // expected-error @below {{chunk-trace-tiles: plan @twice already has a buffer @synco_trace (traced twice?)}}
  chunk.plan @twice world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @synco_trace : !chunk.buffer<64x8xi64> {chunk.staging, chunk.trace}
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<i64>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_synco_trace: !tt.ptr<i64>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    // The wait chunk-insert-waits put before the tile's loads of A.
    %c128_w = arith.constant 128 : i32
    %row_w = arith.muli %t, %c128_w : i32
    %c256 = arith.constant 256 : i32
    %chunk = arith.divsi %row_w, %c256 : i32
    %c2 = arith.constant 2 : i32
    %owner = arith.divsi %chunk, %c2 : i32
    %remote = arith.cmpi ne, %owner, %rank : i32
    %c0_w = arith.constant 0 : i32
    %flag = arith.addi %chunk, %c0_w : i32
    scf.if %remote {
      chunk.wait %flags[%flag], %epoch : !tt.ptr<i32>
    }
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["synco_trace"], chunk.abi_first_arg = 1 : i32} : () -> ()
}
