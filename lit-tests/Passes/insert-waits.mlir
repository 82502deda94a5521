// chunk-insert-waits: before the first op of a tile that loads A (here the
// K loop), the tile waits for the flag of the chunk holding its rows,
// unless the rows are the rank's own.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-insert-waits)' \
// RUN:   | FileCheck %s
//
// The input is in the state chunk-expand-collectives, chunk-bind-kernel and
// chunk-reorder-tiles leave: the all-gather is its transfers, the kernel
// takes the fused ABI's arguments (chunk.abi_first_arg) and its row tile
// index is rotated and marked (chunk.tile_index = "A").

// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:      ^bb0(%{{.*}}: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>):
// CHECK:      %[[T:.*]] = arith.remsi {{.*}} {chunk.tile_index = "A"}
// CHECK:      %[[ROWS:.*]] = arith.muli %[[T]], %{{.*}} : i32
// CHECK:      %[[C128:.*]] = arith.constant 128 : i32
// CHECK-NEXT: %[[ROW:.*]] = arith.muli %[[T]], %[[C128]]
// CHECK-NEXT: %[[C256:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divsi %[[ROW]], %[[C256]]
// CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[OWNER:.*]] = arith.divsi %[[CHUNK]], %[[C2]]
// CHECK-NEXT: %[[REMOTE:.*]] = arith.cmpi ne, %[[OWNER]], %[[RANK]]
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[FLAG:.*]] = arith.addi %[[CHUNK]], %[[C0]]
// CHECK-NEXT: scf.if %[[REMOTE]] {
// CHECK-NEXT:   chunk.wait %[[FLAGS]][%[[FLAG]]], %[[EPOCH]] : !tt.ptr<i32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.for
// CHECK:        "tt.load"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    // expected-remark @below {{tiles of @A wait for their chunk (256 rows, flags 0..4) before 'scf.for'}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Chunks of 64 rows would split 128-row tiles between two flags. (The
// plan verifier refuses such a chunk count on a collective; here the
// all-gather is written as its transfers, 128-row blocks in 2 chunks.)
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<256x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 128, 0)] [64, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 128, 0)] [64, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 128 + 64, 0)] [64, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 128 + 64, 0)] [64, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 128, 0)] [64, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 128 + 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 128 + 64, 0)] [64, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    // expected-error @below {{chunks of 64 rows of @A would split 128-row tiles: pick a chunk count whose chunks hold whole tiles}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %c1 = arith.constant 1 : i32
    %shift = arith.muli %rank, %c1 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c2 = arith.constant 2 : i32
    %t = arith.remsi %sum, %c2 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A persistent tile loop marked for Triton's loop flattening loses the
// mark: flattened, Triton's pipeliner would issue a tile's first loads
// while the previous tile runs, before the tile's wait.
// CHECK-LABEL: sym_name = "persistent"
// CHECK:       scf.for %[[TILE:.*]] = 
// CHECK:         scf.if
// CHECK-NEXT:      chunk.wait
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// CHECK:         "tt.load"
// CHECK:       }
// CHECK-NOT:   tt.flatten
// CHECK:       tt.return
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    // expected-remark @below {{tiles of @A wait for their chunk (256 rows, flags 0..4) before 'scf.for'}}
    // expected-remark @below {{the tile loop is no longer flattened (tt.flatten removed): Triton's pipeliner would load the next tile's data before its wait}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "persistent", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c8 = arith.constant 8 : i32
    %c128 = arith.constant 128 : i32
    %c132 = arith.constant 132 : i32
    %start = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    scf.for %tile = %start to %c8 step %c132 : i32 {
      %c4 = arith.constant 4 : i32
      %shift = arith.muli %rank, %c4 : i32
      %sum = arith.addi %tile, %shift : i32
      %c8_0 = arith.constant 8 : i32
      %t = arith.remsi %sum, %c8_0 {chunk.tile_index = "A"} : i32
      %row = arith.muli %t, %c128 : i32
      %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      scf.for %i = %c0 to %k step %c1 : i32 {
        %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
        %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
        "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
      }
    } {tt.flatten}
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}
