// chunk-fuse-reductions: a two-shot all-reduce is the
// reduce-scatter (push) whose owners, after storing the sum of a tile into
// their @C, push it into every peer's @C at the same rows and count it on
// the peer's gathered-rows counter (flags 4..8, after the reduce-scatter's
// 0..4). The kernel ends only once the peers' sums are in: each owner tile
// then counts itself on its chunk's finished counter (flags 8..12, an
// acq_rel atomic add at GPU scope) and the chunk's last tile of the launch
// (the count reaching epoch * 2 tiles) waits for the gathered counter of
// every peer's chunk of the same index (rank 0, chunk 0: flag 6; chunk 1:
// flag 7). So the plan records no completion waits for the runtime.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions)' \
// RUN:   | FileCheck %s
//
// The input is in the state chunk-expand-collectives, chunk-verify-plan,
// chunk-bind-kernel and chunk-reorder-tiles leave: the all-reduce is its
// two phases' transfers (the all-gather's after the reduce-scatter's), the
// kernel takes the fused ABI's arguments (@C, unbound, last; @P_staging
// too for the copy engine) and its row tile index is interleaved and marked
// (chunk.tile_index = "P", reorder-tiles.mlir). The launch's schedule
// chunk-lower-transfers makes of the result: lower-transfers-fused.mlir.

// One-shot of counters per chunk (partials, acknowledgements, the peers'
// sums): the flag layout the pass laid out and recorded; no other record
// (the kernel waits for the sums itself).
// CHECK:      chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 0 : i64, buffer = "P", chunks_per_rank = 2 : i64, counters_per_chunk = 3 : i64, dim = 0 : i64, kind = "reduction", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]} {
// CHECK:      chunk.transfer @C_rs_p0_c0 {{.*}} collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
// CHECK:      chunk.transfer @C_ag_p1_c1 {{.*}} collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:      scf.if
// CHECK:        chunk.wait %{{.*}}[%[[FLAG:.*]]], %{{.*}} count(2) : !tt.ptr<i32>
// CHECK:        "tt.store"(%[[OUT:.*]], %[[SUM:.*]])
// CHECK:        scf.if
// CHECK-NEXT:     %[[PF:.*]] = chunk.peer_ptr %{{.*}}, %{{.*}} : !tt.ptr<i32>
// CHECK-NEXT:     %[[C4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:     %[[GATHERED:.*]] = arith.addi %[[FLAG]], %[[C4]] : i32
// CHECK-NEXT:     %[[REMOTE:.*]] = chunk.peer_ptr %[[OUT]], %{{.*}} : tensor<128x64x!tt.ptr<bf16>>
// CHECK-NEXT:     "tt.store"(%[[REMOTE]], %[[SUM]])
// CHECK-NEXT:     chunk.arrive %[[PF]][%[[GATHERED]]] : !tt.ptr<i32>
// CHECK-NEXT:     chunk.arrive %[[PF]][%[[FLAG]]] : !tt.ptr<i32>
// CHECK:        %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT:   %[[FIN:.*]] = arith.addi %[[CHUNK:.*]], %[[C8]] : i32
// CHECK-NEXT:   %[[FINPTR:.*]] = "tt.addptr"(%{{.*}}, %[[FIN]])
// CHECK:        %[[BEFORE:.*]] = "tt.atomic_rmw"(%[[FINPTR]], %{{.*}}, %{{.*}}) {atomic_rmw_op = 4 : i32, scope = 1 : i32, sem = 4 : i32}
// CHECK:        %[[DONE:.*]] = arith.addi %[[BEFORE]], %{{.*}} : i32
// CHECK:        %[[ALL:.*]] = arith.muli %[[EPOCH:.*]], %{{.*}} : i32
// CHECK-NEXT:   %[[LAST:.*]] = arith.cmpi eq, %[[DONE]], %[[ALL]] : i32
// CHECK-NEXT:   scf.if %[[LAST]] {
// CHECK:          %[[WITHIN:.*]] = arith.remsi %[[CHUNK]], %{{.*}} : i32
// CHECK:          scf.if
// CHECK:            %[[G0:.*]] = arith.addi %{{.*}}, %[[WITHIN]] : i32
// CHECK-NEXT:       %[[C4B:.*]] = arith.constant 4 : i32
// CHECK-NEXT:       %[[W0:.*]] = arith.addi %[[G0]], %[[C4B]] : i32
// CHECK-NEXT:       chunk.wait %{{.*}}[%[[W0]]], %[[EPOCH]] count(2) : !tt.ptr<i32>
// CHECK:          scf.if
// CHECK:            chunk.wait %{{.*}}, %[[EPOCH]] count(2) : !tt.ptr<i32>
// CHECK:      } else {
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    // expected-remark @below {{tiles of @P reduce into @C}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.all_reduce @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_rs_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_ag_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c0 pull ldst from <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c1 pull ldst from <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
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

// backend(copy_engine): the reduce-scatter as in
// fuse-reductions-copy-engine.mlir (flags 0..20: produced, arrived, and
// consumed and copied, unused), then the copy engine sends the sums: an
// owner's tiles store them into @C and count them (reduced[g], flags
// 20..24), with no wait for the previous epoch's sums to have been sent
// (the runtime starts the next kernel after this launch's copies; sent[g],
// flags 24..28, is unused); each rank's side stream then copies every
// finished own chunk of @C to the same rows of every peer's @C, setting
// no flag (gathered[g], flags 28..32, is unused too): no kernel waits for
// the sums, and the runtime ends each launch after the peer's side
// stream. No completion flags.
// Rank 0's side stream: its partials of chunks 2 and 3 into rank 1's
// staging (setting arrived[g * 2 + 0] there, which its tiles wait for),
// then its sums of chunk 0 (rows 0..256), once reduced[0] (flag 20) counts
// its 2 tiles, and 1 into rank 1's @C, setting no flag.
// CHECK-LABEL: chunk.plan @p_copy_engine
// CHECK-SAME:  chunk.reduction_copies = {{\[\[}}{arrived = 8 : i64, bytes = 32768 : i64, dst_buffer = "P_staging",{{[^}]*}}}, {{[{][^}]*}}},
// CHECK-SAME:  {bytes = 32768 : i64, dst_buffer = "C", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 20, 2>, src_buffer = "C", src_offset = 0 : i64},
// CHECK-SAME:  {bytes = 32768 : i64, dst_buffer = "C", dst_offset = 32768 : i64, owner = 1 : i64, produced = array<i64: 21, 2>, src_buffer = "C", src_offset = 32768 : i64}]
// CHECK:       chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:      ^bb0(%{{.*}}: !tt.ptr<bf16>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %{{.*}}: !tt.ptr<bf16>, %{{.*}}: !tt.ptr<bf16>):
// CHECK:      %[[C256:.*]] = arith.constant 256 : i32
// CHECK-NEXT: %[[CHUNK:.*]] = arith.divsi %{{.*}}, %[[C256]] : i32
// CHECK:      scf.if
// CHECK:        "tt.store"
// CHECK-NEXT:   %[[C20:.*]] = arith.constant 20 : i32
// CHECK-NEXT:   %[[REDUCED:.*]] = arith.addi %[[CHUNK]], %[[C20]] : i32
// CHECK-NEXT:   chunk.arrive %[[FLAGS]][%[[REDUCED]]] : !tt.ptr<i32>
// No SM stores into peers' @C, and no acknowledgement to the sources.
// CHECK-NEXT: } else {
// Other ranks' rows: store the partial, count it; no wait.
// CHECK-NEXT:   "tt.store"
// CHECK-NEXT:   chunk.arrive %[[FLAGS]][%{{.*}}] : !tt.ptr<i32>
// CHECK-NEXT: }
module {
  chunk.plan @p_copy_engine world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    // expected-remark @below {{tiles of @P reduce into @C: other rows store their partial and count it; the copy engine moves each finished chunk to its owner; own rows add 1 peer partial(s) per tile after 1 copy-engine flag(s) per chunk}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
    // chunk.all_reduce @P into @C dim(0) chunks(2) backend(copy_engine), expanded:
    chunk.transfer @C_rs_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c0 pull copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c1 pull copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_ag_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c0 pull copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c1 pull copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>, %buffer_P_staging: !tt.ptr<bf16>):
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
  }) {chunk.abi_buffers = ["C", "P_staging"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// chunk-bind-kernel ran before chunk-expand-collectives declared
// @P_staging: the kernel has no argument for it (chunk.abi_buffers lists @C
// only).
module {
  chunk.plan @bound_first world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
    // chunk.all_reduce @P into @C dim(0) chunks(2) backend(copy_engine), expanded:
    // expected-error @below {{chunk-fuse-reductions: the copy engine's staging buffer @P_staging is not a kernel argument; run chunk-expand-collectives and chunk-bind-kernel first}}
    chunk.transfer @C_rs_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c0 pull copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c1 pull copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
    chunk.transfer @C_ag_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c0 pull copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c1 pull copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
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
