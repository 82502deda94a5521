// chunk-reorder-tiles: tiles consume chunks in arrival order. The row tile
// index is found from the kernel's own address arithmetic (the value the
// loads of A multiply by the tile size), or by its Python name.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-reorder-tiles)' | FileCheck %s
//
// The input is in the state chunk-bind-kernel leaves: each kernel takes
// the fused ABI's arguments after its own (%rank, %world_size,
// %heap_bases, %flags, %epoch, %errors, then one pointer per unbound plan
// buffer) and records where they start in chunk.abi_first_arg.

// A 2D grid: program_id(0) is the row tile, the fast axis. The pass makes
// it the slow axis (linear id over num_programs) and rotates it by
// rank * 4 row tiles per rank, 8 in all.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "grid2d"
// CHECK:      ^bb0(%[[A:.*]]: !tt.ptr<bf16>, %[[O:.*]]: !tt.ptr<bf16>, %[[RANK:arg2]]: i32,
// CHECK:      %[[P0:.*]] = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK:      %[[P1:.*]] = "tt.get_program_id"() <{axis = 1 : i32}>
// CHECK-NEXT: %[[N0:.*]] = "tt.get_num_programs"() {axis = 0 : i32}
// CHECK-NEXT: %[[N1:.*]] = "tt.get_num_programs"() {axis = 1 : i32}
// CHECK-NEXT: %[[T:.*]] = arith.muli %[[P1]], %[[N0]]
// CHECK-NEXT: %[[LIN:.*]] = arith.addi %[[P0]], %[[T]]
// CHECK-NEXT: %[[SLOW:.*]] = arith.divsi %[[LIN]], %[[N1]]
// CHECK-NEXT: %[[FAST:.*]] = arith.remsi %[[LIN]], %[[N1]]
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[SHIFT:.*]] = arith.muli %[[RANK]], %[[C4]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[SLOW]], %[[SHIFT]]
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[ROW:.*]] = arith.remsi %[[SUM]], %[[C8]] {chunk.tile_index = "A"}
// CHECK:      arith.muli %[[ROW]], %{{.*}} : i32
// CHECK:      "tt.addptr"(%[[O]], %[[FAST]])
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    // expected-remark @below {{tiles of @A: the row tile index (program_id 0) is now the slow axis of the grid and starts at this rank's block (4 row tiles per rank)}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "grid2d", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    %q = "tt.addptr"(%o, %pid_n) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// A 1D grid with a swizzle (the row tile is computed): rotation only. The
// tile index is named by its Python variable.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "swizzled"
// CHECK:      %[[PID:.*]] = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK:      %[[M:.*]] = arith.remsi %[[PID]], %{{.*}} : i32
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[SHIFT:.*]] = arith.muli %arg2, %[[C4]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[M]], %[[SHIFT]]
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[ROW:.*]] = arith.remsi %[[SUM]], %[[C8]] {chunk.tile_index = "A"}
// CHECK-NEXT: arith.muli %[[ROW]]
// CHECK-NOT:  tt.get_num_programs
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    // expected-remark @below {{tiles of @A: the row tile index is rotated to start at this rank's block (4 row tiles per rank, 8 in all)}}
    chunk.consume @A dim(0) tile(128) index("pid_m")
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "swizzled", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c8 = arith.constant 8 : i32
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32 loc("pid"("k.py":1:0))
    %pid_m = arith.remsi %pid, %c8 : i32 loc("pid_m"("k.py":2:0))
    %row = arith.muli %pid_m, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%o, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// A persistent loop whose induction variable is the row tile (programs
// start at their program id and step by the grid): rotated at the start of
// the loop body.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "persistent"
// CHECK:      scf.for %[[T:[^ ]*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:   %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:   %[[SHIFT:.*]] = arith.muli %arg1, %[[C4]]
// CHECK-NEXT:   %[[SUM:.*]] = arith.addi %[[T]], %[[SHIFT]]
// CHECK-NEXT:   %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT:   %[[ROW:.*]] = arith.remsi %[[SUM]], %[[C8]] {chunk.tile_index = "A"}
// CHECK-NEXT:   arith.muli %[[ROW]]
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    // expected-remark @below {{tiles of @A: the row tile index is rotated to start at this rank's block (4 row tiles per rank, 8 in all)}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "persistent", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c2 = arith.constant 2 : i32
    %c8 = arith.constant 8 : i32
    %c128 = arith.constant 128 : i32
    %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    scf.for %t = %pid to %c8 step %c2 : i32 {
      %row = arith.muli %t, %c128 : i32
      %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%p, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// The loads of A do not depend on the program id: no tile index.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    // expected-error @below {{cannot find the tile index of kernel @flat: no program-id-derived value is multiplied by the tile size 128 in the addresses of argument 0; name it with index("...")}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "flat", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %i: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %row = arith.muli %i, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Two program-id-derived values times 128 reach the loads of A: ambiguous.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    // expected-error @below {{the tile index of kernel @two is ambiguous: 2 program-id-derived values are multiplied by 128 in the addresses of argument 0; name it with index("...")}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "two", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %p0 = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %p1 = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %r0 = arith.muli %p0, %c128 : i32
    %r1 = arith.muli %p1, %c128 : i32
    %r = arith.addi %r0, %r1 : i32
    %p = "tt.addptr"(%a, %r) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = "tt.load"(%p) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    // expected-error @below {{kernel @named has no scalar i32 value named 'row_tile' (Triton keeps Python names in locations)}}
    chunk.consume @A dim(0) tile(128) index("row_tile")
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "named", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Tiles that straddle two ranks' blocks. (With a collective cutting @A the
// plan verifier refuses this already, see Dialect/Chunk/plan-verify.mlir;
// a gather written as transfers reaches the pass.)
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @own local copy_engine
        from #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
        to #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
        order(0) {group = "ag"}
    chunk.transfer @peer pull copy_engine
        from #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
        to #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r)
        order(1) {group = "ag"}
    // expected-error @below {{tiles of 96 do not divide @A's 1024 rows into whole per-rank blocks of 512}}
    chunk.consume @A dim(0) tile(96)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// The same along columns: the message names the dimension.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<64x1024xbf16> bind(0)
    chunk.transfer @own local copy_engine
        from #chunk.region<@A[(r) -> (0, r * 512)] [64, 512]> on (r) -> (r)
        to #chunk.region<@A[(r) -> (0, r * 512)] [64, 512]> on (r) -> (r)
        order(0) {group = "ag"}
    chunk.transfer @peer pull copy_engine
        from #chunk.region<@A[(r) -> (0, ((r + 1) mod 2) * 512)] [64, 512]> on (r) -> ((r + 1) mod 2)
        to #chunk.region<@A[(r) -> (0, ((r + 1) mod 2) * 512)] [64, 512]> on (r) -> (r)
        order(1) {group = "ag"}
    // expected-error @below {{tiles of 96 do not divide @A's 1024 elements along dim(1) into whole per-rank blocks of 512}}
    chunk.consume @A dim(1) tile(96)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A producer of a reduced partial (found from its stores): other ranks'
// blocks first, this rank's last: the slow axis is rotated by (rank + 1) * 4.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "producer"
// CHECK:      %[[SLOW:.*]] = arith.divsi
// CHECK:      %[[FAST:.*]] = arith.remsi
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %arg1, %[[C1]]
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[SHIFT:.*]] = arith.muli %[[NEXT]], %[[C4]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[SLOW]], %[[SHIFT]]
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT: arith.remsi %[[SUM]], %[[C8]] {chunk.tile_index = "P"}
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index (program_id 0) is now the slow axis of the grid and starts at the next rank's block (this rank's block last) (4 row tiles per rank)}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.transfer @C_p0 local ldst from <@P[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "producer", sym_visibility = "public"}> ({
  ^bb0(%o: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %q = "tt.addptr"(%o, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    %x = arith.constant 1.0 : bf16
    "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A producer of a reduced partial in 2 chunks of 2 row tiles per rank
// (here after chunk-expand-collectives too, as in fuse-reductions.mlir):
// the order interleaves, so that partials leave all through the kernel.
// Dispatch slot j = t / 2 runs the peer's chunk 0, the peer's chunk 1, own
// chunk 0, own chunk 1: slot 0 is block rank + 1, the later slots are
// picked by selects.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "interleaved"
// CHECK:      ^bb0(%{{[^:]*}}: !tt.ptr<bf16>, %{{[^:]*}}: i32, %[[RANK:[^:]*]]: i32,
// CHECK:      %[[PID:.*]] = "tt.get_program_id"
// CHECK-NEXT: %{{.*}} = arith.constant 2 : i32
// CHECK-NEXT: %[[SLOT:.*]] = arith.divsi %[[PID]], %{{.*}} : i32
// CHECK:      %[[FIRST:.*]] = arith.cmpi slt, %[[SLOT]], %{{.*}} : i32
// CHECK:      %[[BLOCK:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : i32
// CHECK:      %[[FROM:.*]] = arith.addi %[[RANK]], %[[BLOCK]] : i32
// CHECK:      %[[T:.*]] = arith.addi {{.*}} {chunk.tile_index = "P"}
// CHECK-NEXT: arith.muli %[[T]], %{{.*}} : i32
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index interleaves peers' and own chunks (2 per rank; own chunk c after the peers' chunk c + 1) (4 row tiles per rank, 8 in all)}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "interleaved", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %c64t = arith.constant dense<64> : tensor<128x1xi32>
    %roff = arith.muli %re, %c64t : tensor<128x1xi32>
    %cols = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%p) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Producers of a one-shot all-reduce's partial keep the kernel's order
// (every rank waits for the same tiles of its peers): the tile index is
// only marked.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "one_shot"
// CHECK:      %[[PID:.*]] = "tt.get_program_id"
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[T:.*]] = arith.addi %[[PID]], %[[C0]] {chunk.tile_index = "P"}
// CHECK-NEXT: arith.muli %[[T]], %{{.*}} : i32
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index keeps the kernel's order (the same on every rank)}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.all_reduce @P into @C dim(0) chunks(2) backend(ldst) algorithm(one_shot), expanded:
    chunk.transfer @C_p0_b0_c0 local copy_engine from <@P[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b1_c0 local copy_engine from <@P[(d0) -> (512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b0_c1 local copy_engine from <@P[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b1_c1 local copy_engine from <@P[(d0) -> (768, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (768, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b0_c0 pull ldst from <@P[(d0) -> (0, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b1_c0 pull ldst from <@P[(d0) -> (512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b0_c1 pull ldst from <@P[(d0) -> (256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b1_c1 pull ldst from <@P[(d0) -> (768, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (768, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "one_shot", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %c64t = arith.constant dense<64> : tensor<128x1xi32>
    %roff = arith.muli %re, %c64t : tensor<128x1xi32>
    %cols = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%p) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// One kernel cannot run in both orders.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(1)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    chunk.all_gather @A dim(0) chunks(1)
    chunk.consume @A dim(0) tile(128)
    // expected-error @below {{chunk-reorder-tiles: a kernel that both consumes gathered chunks and produces reduced ones needs two tile orders; this is not supported yet}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.transfer @C_p0 local ldst from <@P[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "both", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}
