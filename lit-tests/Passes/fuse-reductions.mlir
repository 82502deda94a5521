// chunk-fuse-reductions: a reduce-scatter of the kernel's partial @P into
// @C, fused into the tile that stores @P. Tiles of other ranks' rows (run
// first, see chunk-reorder-tiles) wait for the owner's acknowledgement of
// the previous epoch, hand over their partial and arrive at the owner's
// chunk counter; tiles of the rank's own rows wait for the peers' arrivals,
// add the partials in rank order in f32, store the rounded sum into @C (the
// ABI argument synco_buffer_C) and acknowledge to every peer.
//
// mode=push (default): partials are stored into the owner's @P (in the rows
// of the source's block) and read locally; mode=pull: stored locally and
// loaded by the owner from the producer's @P.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions)' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,PUSH
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions{mode=pull})' \
// RUN:   | FileCheck %s --check-prefixes=CHECK,PULL
// RUN: not synco-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions{mode=both})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MODE
// MODE: for the --mode option: 'both' is not one of push, pull, stage
// MODE: failed to add `chunk-fuse-reductions` with options `mode=both`
//
// The input is in the state chunk-expand-collectives, chunk-verify-plan,
// chunk-bind-kernel and chunk-reorder-tiles leave: the collectives are
// their transfers (reducing, after [@tiles]), the kernel takes the fused
// ABI's arguments (@C, unbound, is the last: synco_buffer_C) and its row
// tile index is reordered and marked (chunk.tile_index = "P"; the orders
// are reorder-tiles.mlir's).

// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:      ^bb0(%[[P:.*]]: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %[[C:.*]]: !tt.ptr<bf16>):
//
// Two chunks of two row tiles per rank, interleaved (chunk-reorder-tiles):
// dispatch slot j = t / 2 runs the peer's chunk 0, the peer's chunk 1, own
// chunk 0, own chunk 1.
// CHECK:      %[[PID:.*]] = "tt.get_program_id"
// CHECK-NEXT: %{{.*}} = arith.constant 2 : i32
// CHECK-NEXT: %[[SLOT:.*]] = arith.divsi %[[PID]], %{{.*}} : i32
// CHECK:      %[[FIRST:.*]] = arith.cmpi slt, %[[SLOT]], %{{.*}} : i32
// CHECK:      %[[BLOCK:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : i32
// CHECK:      %[[FROM:.*]] = arith.addi %[[RANK]], %[[BLOCK]] : i32
// CHECK:      %[[T:.*]] = arith.addi {{.*}} {chunk.tile_index = "P"}
// CHECK:      %[[PTRS:.*]] = "tt.addptr"(%{{.*}}, %{{.*}}) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>)
// CHECK:      %[[V:.*]] = arith.truncf
//
// The tile's chunk (256 rows), its owner, its counter.
// CHECK:      %[[ROW:.*]] = arith.muli %[[T]], %{{.*}}
// CHECK-NEXT: %[[C256:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divsi %[[ROW]], %[[C256]]
// CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT: %[[OWNER:.*]] = arith.divsi %[[CHUNK]], %[[C2]]
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[FLAG:.*]] = arith.addi %[[CHUNK]], %[[C0]]
// CHECK-NEXT: %[[OWN:.*]] = arith.cmpi eq, %[[OWNER]], %[[RANK]]
// CHECK-NEXT: scf.if %[[OWN]] {
//
// Own rows: 2 tiles per chunk, 1 peer.
// CHECK-NEXT:   chunk.wait %[[FLAGS]][%[[FLAG]]], %[[EPOCH]] count(2) : !tt.ptr<i32>
// CHECK:        %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
// Rank 0's partial, then rank 1's: the tile's own value or the peer's,
// pushed into this rank's @P in the rows of block s (s - rank blocks of
// 512 x 64 elements away), or pulled from the peer's @P.
// PUSH:         %[[SHIFT0:.*]] = arith.constant 32768 : i64
// PUSH-NEXT:    %[[OFF0:.*]] = arith.muli %{{.*}}, %[[SHIFT0]] : i64
// PUSH-NEXT:    %[[OFFS0:.*]] = "tt.splat"(%[[OFF0]])
// PUSH-NEXT:    %[[SRC0:.*]] = "tt.addptr"(%[[PTRS]], %[[OFFS0]])
// PULL:         %[[SRC0:.*]] = chunk.peer_ptr %[[PTRS]], %{{.*}} : tensor<128x64x!tt.ptr<bf16>>
// CHECK-NEXT:   %[[PART0:.*]] = "tt.load"(%[[SRC0]], %{{.*}}, %[[ZERO]]) {{.*}}operandSegmentSizes = array<i32: 1, 1, 1>
// CHECK-NEXT:   %[[X0:.*]] = arith.select %{{.*}}, %[[V]], %[[PART0]] : tensor<128x64xi1>, tensor<128x64xbf16>
// CHECK-NEXT:   %[[F0:.*]] = arith.extf %[[X0]] : tensor<128x64xbf16> to tensor<128x64xf32>
// CHECK:        %[[F1:.*]] = arith.extf
// CHECK-NEXT:   %[[SUM:.*]] = arith.addf %[[F0]], %[[F1]] : tensor<128x64xf32>
// @C's rows are @P's minus rank * 512 (x 64 elements per row).
// CHECK:        "tt.ptr_to_int"(%[[C]])
// CHECK:        "tt.ptr_to_int"(%[[P]])
// CHECK:        arith.constant 32768 : i64
// CHECK:        %[[SHIFT:.*]] = arith.subi {{.*}} {tt.divisibility = dense<16> : tensor<1xi32>} : i64
// CHECK-NEXT:   %[[SHIFTS:.*]] = "tt.splat"(%[[SHIFT]])
// CHECK-NEXT:   %[[OUT:.*]] = "tt.addptr"(%[[PTRS]], %[[SHIFTS]])
// CHECK-NEXT:   %[[BF:.*]] = arith.truncf %[[SUM]] : tensor<128x64xf32> to tensor<128x64xbf16>
// CHECK-NEXT:   "tt.store"(%[[OUT]], %[[BF]])
// CHECK:        scf.if
// CHECK-NEXT:     %[[PF:.*]] = chunk.peer_ptr %[[FLAGS]], %{{.*}} : !tt.ptr<i32>
// CHECK-NEXT:     chunk.arrive %[[PF]][%[[FLAG]]] : !tt.ptr<i32>
// CHECK:      } else {
//
// Other ranks' rows: acknowledgement of epoch - 1, the partial handed over
// (pushed into the owner's @P at the rows of this rank's block, or stored
// in place), arrival at the owner.
// CHECK-NEXT:   %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:   %[[PREV:.*]] = arith.subi %[[EPOCH]], %[[ONE]]
// CHECK-NEXT:   chunk.wait %[[FLAGS]][%[[FLAG]]], %[[PREV]] count(2) : !tt.ptr<i32>
// PUSH-NEXT:    %[[BLOCKS:.*]] = arith.subi %[[RANK]], %[[OWNER]] : i32
// PUSH:         %[[SLOT:.*]] = "tt.addptr"(%[[PTRS]], %{{.*}})
// PUSH-NEXT:    %[[REMOTE:.*]] = chunk.peer_ptr %[[SLOT]], %[[OWNER]] : tensor<128x64x!tt.ptr<bf16>>
// PUSH-NEXT:    "tt.store"(%[[REMOTE]], %[[V]])
// PULL-NEXT:    "tt.store"(%[[PTRS]], %[[V]])
// CHECK-NEXT:   %[[OF:.*]] = chunk.peer_ptr %[[FLAGS]], %[[OWNER]] : !tt.ptr<i32>
// CHECK-NEXT:   chunk.arrive %[[OF]][%[[FLAG]]] : !tt.ptr<i32>
// CHECK-NEXT: }
// CHECK-NEXT: "tt.return"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{peer partial(s) per tile after 2 arrivals per chunk (counters 0..4, 2 tiles per chunk)}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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

// The copy engine moves the partials of a reduce-scatter
// (fuse-reductions-copy-engine.mlir) and of a two-shot all-reduce
// (fuse-reductions-two-shot.mlir), not those of a one-shot all-reduce.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.all_reduce @P into @C dim(0) chunks(1) algorithm(one_shot), expanded:
    chunk.transfer @C_p0_b0_c0 local copy_engine from <@P[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b1_c0 local copy_engine from <@P[(d0) -> (512, 0)] [512, 64]> on (d0) -> (d0) to <@C[(d0) -> (512, 0)] [512, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    // expected-error @below {{chunk-fuse-reductions: a reduction fuses into its GEMM with backend(ldst) (SM loads and stores move the partials), or a reduce-scatter or two-shot all-reduce with backend(copy_engine); backend 'copy_engine' is not implemented for this one}}
    chunk.transfer @C_p1_b0_c0 pull copy_engine from <@P[(d0) -> (0, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b1_c0 pull copy_engine from <@P[(d0) -> (512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (512, 0)] [512, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile, marked by chunk-reorder-tiles in the kernel's own order
    // (the same on every rank).
    %c0 = arith.constant 0 : i32
    %t = arith.addi %pid_m, %c0 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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

// A one-shot all-reduce (2 ranks): every tile, in the kernel's own order,
// waits for the peer's acknowledgement of the previous epoch, pushes its
// partial into the peer's @P (slot 0: a one-shot all-reduce never stores
// its own partial there), arrives, waits for the peer's partials of its
// chunk, adds both in rank order and stores the sum into @C, then
// acknowledges. Arrival counters 0..4, then acknowledgements 4..8.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:      ^bb0(%[[P:.*]]: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %[[C:.*]]: !tt.ptr<bf16>):
// CHECK:      %[[T:.*]] = arith.addi %{{.*}}, %{{.*}} {chunk.tile_index = "P"}
// CHECK:      %[[PTRS:.*]] = "tt.addptr"(%{{.*}}, %{{.*}}) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>)
// CHECK:      %[[V:.*]] = arith.truncf
// CHECK:      %[[CHUNK:.*]] = arith.divsi
// CHECK:      %[[ARRIVAL:.*]] = arith.addi %[[CHUNK]], %{{.*}} : i32
// CHECK:      %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[ACK:.*]] = arith.addi %[[CHUNK]], %[[C4]] : i32
// CHECK:      %[[PREV:.*]] = arith.subi %[[EPOCH]], %{{.*}} : i32
// CHECK-NEXT: chunk.wait %[[FLAGS]][%[[ACK]]], %[[PREV]] count(2) : !tt.ptr<i32>
// CHECK:      %[[NOT0:.*]] = arith.cmpi ne, %[[RANK]], %[[R0:.*]] : i32
// CHECK-NEXT: scf.if %[[NOT0]] {
// CHECK-NEXT:   %[[REMOTE:.*]] = chunk.peer_ptr %[[PTRS]], %[[R0]] : tensor<128x64x!tt.ptr<bf16>>
// CHECK-NEXT:   "tt.store"(%[[REMOTE]], %[[V]])
// CHECK-NEXT:   %[[PF:.*]] = chunk.peer_ptr %[[FLAGS]], %[[R0]] : !tt.ptr<i32>
// CHECK-NEXT:   chunk.arrive %[[PF]][%[[ARRIVAL]]] : !tt.ptr<i32>
// CHECK-NEXT: }
// CHECK:      scf.if
// CHECK:      chunk.wait %[[FLAGS]][%[[ARRIVAL]]], %[[EPOCH]] count(2) : !tt.ptr<i32>
// CHECK:      %[[ME0:.*]] = "tt.splat"(%{{.*}}) : (i1) -> tensor<128x64xi1>
// CHECK:      %[[NOTME0:.*]] = "tt.splat"(%{{.*}}) : (i1) -> tensor<128x64xi1>
// CHECK-NEXT: %[[X0:.*]] = "tt.load"(%[[PTRS]], %[[NOTME0]]
// CHECK-NEXT: %{{.*}} = arith.select %[[ME0]], %[[V]], %[[X0]]
// CHECK:      %[[X1:.*]] = "tt.load"(%[[PTRS]]
// CHECK-NEXT: %{{.*}} = arith.select %{{.*}}, %[[V]], %[[X1]]
// CHECK:      %[[SUM:.*]] = arith.addf
// CHECK:      "tt.store"(%{{.*}}, %{{.*}})
// CHECK:      scf.if
// CHECK-NEXT:   %[[PF0:.*]] = chunk.peer_ptr %[[FLAGS]]
// CHECK-NEXT:   chunk.arrive %[[PF0]][%[[ACK]]] : !tt.ptr<i32>
// CHECK:      scf.if
// CHECK-NEXT:   %[[PF1:.*]] = chunk.peer_ptr %[[FLAGS]]
// CHECK-NEXT:   chunk.arrive %[[PF1]][%[[ACK]]] : !tt.ptr<i32>
// CHECK:      "tt.return"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    // expected-remark @below {{tiles of @P all-reduce into @C: every tile pushes its partial to the peer and adds theirs, in rank order, after 2 arrivals per chunk (counters 0..8)}}
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
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile, marked by chunk-reorder-tiles in the kernel's own order
    // (the same on every rank).
    %c0 = arith.constant 0 : i32
    %t = arith.addi %pid_m, %c0 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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

// A one-shot all-reduce chunk whose tiles cannot all wait at once.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x8320xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x8320xbf16>
    // expected-error @below {{chunk-fuse-reductions: all-reduce chunks of 512 rows hold 520 tiles, more than the 128 that can wait for the peers at once: the kernel would deadlock; use chunks of 128 rows}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.all_reduce @P into @C dim(0) chunks(1) backend(ldst) algorithm(one_shot), expanded:
    chunk.transfer @C_p0_b0_c0 local copy_engine from <@P[(d0) -> (0, 0)] [512, 8320]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [512, 8320]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b1_c0 local copy_engine from <@P[(d0) -> (512, 0)] [512, 8320]> on (d0) -> (d0) to <@C[(d0) -> (512, 0)] [512, 8320]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b0_c0 pull ldst from <@P[(d0) -> (0, 0)] [512, 8320]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [512, 8320]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b1_c0 pull ldst from <@P[(d0) -> (512, 0)] [512, 8320]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (512, 0)] [512, 8320]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile, marked by chunk-reorder-tiles in the kernel's own order
    // (the same on every rank).
    %c0 = arith.constant 0 : i32
    %t = arith.addi %pid_m, %c0 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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

// A tile that stores its partial twice.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-error @below {{chunk-fuse-reductions: the kernel must store @P once per tile; it has 2 stores of it}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Chunks must hold whole tiles. (The plan verifier refuses such a chunk
// count on a collective; here the reduce-scatter is written as its
// transfers: 128-row blocks in 2 chunks of 64 rows.)
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<256x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<128x64xbf16>
    // expected-error @below {{chunks of 64 rows of @P would split 128-row tiles: pick a chunk count whose chunks hold whole tiles}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 128, 0)] [64, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [64, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 128 + 64, 0)] [64, 64]> on (d0) -> (d0) to <@C[(d0) -> (64, 0)] [64, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [64, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 128 + 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (64, 0)] [64, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated by chunk-reorder-tiles to start at the next
    // rank's block (one row tile per rank, this rank's last):
    // (pid_m + (rank + 1) * 1) mod 2.
    %c1 = arith.constant 1 : i32
    %next = arith.addi %rank, %c1 : i32
    %shift = arith.muli %next, %c1 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c2 = arith.constant 2 : i32
    %t = arith.remsi %sum, %c2 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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

// Written out by hand with a rotated owner: rank r's @C gets the sum of
// rank r + 1's block. The plan verifier accepts it (every row of @C gets
// one partial from every rank); the fused code would not do it.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<256x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<128x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    // expected-error @below {{chunk-fuse-reductions: on rank 0, this transfer moves 128 rows of @P at [128, 0] on rank 0 into @C at [0, 0] on rank 0, but the fused code sums rank o's own block of the partials into the rows from 0 of rank o's @C, 128 whole rows at a time: write the collective and let chunk-expand-collectives expand it}}
    chunk.transfer @C_own local ldst from <@P[(d0) -> (((d0 + 1) mod 2) * 128, 0)] [128, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [128, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_peer pull ldst from <@P[(d0) -> (((d0 + 1) mod 2) * 128, 0)] [128, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [128, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated by chunk-reorder-tiles to start at the next
    // rank's block (one row tile per rank, this rank's last):
    // (pid_m + (rank + 1) * 1) mod 2.
    %c1 = arith.constant 1 : i32
    %next = arith.addi %rank, %c1 : i32
    %shift = arith.muli %next, %c1 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c2 = arith.constant 2 : i32
    %t = arith.remsi %sum, %c2 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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

// Reducing transfers written out by hand, without the collective(...) they
// implement.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<256x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<128x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    // expected-error @below {{chunk-fuse-reductions: this reducing transfer belongs to no reduce_scatter or all_reduce (the `collective(...)` that chunk-expand-collectives gives their transfers): write the collective and let chunk-expand-collectives expand it}}
    chunk.transfer @C_own local ldst from <@P[(d0) -> (d0 * 128, 0)] [128, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [128, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum)
    chunk.transfer @C_peer pull ldst from <@P[(d0) -> (d0 * 128, 0)] [128, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [128, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile, marked by chunk-reorder-tiles in the kernel's own order
    // (the same on every rank).
    %c0 = arith.constant 0 : i32
    %t = arith.addi %pid_m, %c0 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
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
