// chunk-expand-collectives: all_gather and all_to_all become explicit
// transfers: the rank's own chunks first (local), then each peer's block in
// rank-rotated order, chunk by chunk. The expanded plans verify (coverage of
// every rank's buffer, exactly once), for W = 2, 4 and 8.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives)' | FileCheck %s

// CHECK-LABEL: chunk.plan @ag2 world_size(2)
// CHECK-NOT:   chunk.all_gather
// CHECK:       chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
// CHECK-NEXT:  chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> {{.*}} order(1)
// CHECK-NEXT:  chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
// CHECK-NEXT:  chunk.transfer @A_p1_c1 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> {{.*}} order(3)
// CHECK-NEXT:  chunk.consume @A dim(0) tile(128)
chunk.plan @ag2 world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(2) backend(tma)
  chunk.consume @A dim(0) tile(128)
}

// -----

// Four ranks, one chunk each: peers r+1, r+2, r+3. The copy engine pushes
// (the source rank, r+k, drives each copy); other backends pull.
// CHECK-LABEL: chunk.plan @ag4 world_size(4)
// CHECK:       chunk.transfer @A_p0_c0 local
// CHECK:       chunk.transfer @A_p1_c0 push copy_engine {{.*}} on (d0) -> ((d0 + 1) mod 4) {{.*}} order(1)
// CHECK:       chunk.transfer @A_p2_c0 push copy_engine {{.*}} on (d0) -> ((d0 + 2) mod 4) {{.*}} order(2)
// CHECK:       chunk.transfer @A_p3_c0 push copy_engine {{.*}} on (d0) -> ((d0 + 3) mod 4) {{.*}} order(3)
// CHECK-NOT:   chunk.transfer
chunk.plan @ag4 world_size(4) {
  chunk.buffer @A : !chunk.buffer<4096x128xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(1)
}

// -----

// Eight ranks, two chunks each: 16 transfers, the last from rank r+7.
// CHECK-LABEL: chunk.plan @ag8 world_size(8)
// CHECK-COUNT-16: chunk.transfer
// CHECK-NOT:   chunk.transfer
// CHECK:       }
chunk.plan @ag8 world_size(8) {
  chunk.buffer @A : !chunk.buffer<8192x1024xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(2)
}

// -----

// Gathering along the columns.
// CHECK-LABEL: chunk.plan @cols world_size(2)
// CHECK:       chunk.transfer @B_p1_c0 push copy_engine from <@B[(d0) -> (0, ((d0 + 1) mod 2) * 32)] [64, 32]>
chunk.plan @cols world_size(2) {
  chunk.buffer @B : !chunk.buffer<64x64xf32>
  chunk.all_gather @B dim(1) chunks(1)
}

// -----

// split(1): blocks of rows (K of a GEMM's B, one per rank), each cut into
// chunks of columns: chunk c of rank r+k's block is rows [(r+k) 64, +64),
// columns [32 c, +32). The plan still covers B exactly once.
// CHECK-LABEL: chunk.plan @split world_size(2)
// CHECK:       chunk.transfer @B_p0_c0 local copy_engine from <@B[(d0) -> (d0 * 64, 0)] [64, 32]>
// CHECK-NEXT:  chunk.transfer @B_p0_c1 local copy_engine from <@B[(d0) -> (d0 * 64, 32)] [64, 32]>
// CHECK-NEXT:  chunk.transfer @B_p1_c0 push copy_engine from <@B[(d0) -> (((d0 + 1) mod 2) * 64, 0)] [64, 32]> on (d0) -> ((d0 + 1) mod 2) to <@B[(d0) -> (((d0 + 1) mod 2) * 64, 0)] [64, 32]> on (d0) -> (d0) order(2)
// CHECK-NEXT:  chunk.transfer @B_p1_c1 push copy_engine from <@B[(d0) -> (((d0 + 1) mod 2) * 64, 32)] [64, 32]> {{.*}} order(3)
// CHECK-NOT:   chunk.transfer
chunk.plan @split world_size(2) {
  chunk.buffer @B : !chunk.buffer<128x64xbf16>
  chunk.all_gather @B dim(0) chunks(2) split(1)
}

// -----

// An all-gather of what the kernel's tiles produce (chunk-fuse-gathers
// fuses it): the rank's own block stays in place; the peer's chunks wait
// for @tiles.
// CHECK-LABEL: chunk.plan @gather world_size(2)
// CHECK:       chunk.transfer @C_p0_c0 local
// CHECK-NOT:   after
// CHECK:       chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]>
// CHECK-SAME:  order(2) after [@tiles]
// CHECK:       chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]>
// CHECK-SAME:  order(3) after [@tiles]
chunk.plan @gather world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
  chunk.produce @tiles @C dim(1) tile(64)
  chunk.all_gather @C dim(0) chunks(2) split(1)
}

// -----

// all_to_all: block r of the peer's X lands in block `peer` of Y.
// CHECK-LABEL: chunk.plan @a2a world_size(2)
// CHECK:       chunk.transfer @Y_p0_c0 local copy_engine from <@X[(d0) -> (d0 * 32, 0)] [32, 16]> on (d0) -> (d0) to <@Y[(d0) -> (d0 * 32, 0)] [32, 16]>
// CHECK:       chunk.transfer @Y_p1_c0 pull ldst from <@X[(d0) -> (d0 * 32, 0)] [32, 16]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (((d0 + 1) mod 2) * 32, 0)] [32, 16]> on (d0) -> (d0) order(1) collective(all_to_all) {group = "all_to_all_Y"}
chunk.plan @a2a world_size(2) {
  chunk.buffer @X : !chunk.buffer<64x16xf32>
  chunk.buffer @Y : !chunk.buffer<64x16xf32>
  chunk.all_to_all @X into @Y dim(0) chunks(1) backend(ldst)
}

// -----

chunk.plan @auto world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16>
  // expected-error @below {{chunk-expand-collectives: chunks(auto) has no count yet; run chunk-select-chunk-size first}}
  chunk.all_gather @A dim(0) chunks(auto)
}

// -----

// Collectives cannot expand before their backend is chosen.
chunk.plan @backend_auto world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x4096xbf16> bind(0)
  // expected-error @below {{chunk-expand-collectives: backend(auto) has no backend yet; run chunk-select-backend first}}
  chunk.all_gather @A dim(0) chunks(2) backend(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

// A ring all-gather of 3 ranks in 2 chunks: in step k, rank r receives
// block r + k from its neighbour r + 1 (pushed by it on the copy engine),
// and from step 2 on each chunk waits for the step that brought it to the
// neighbour. Blocks arrive in the order r, r + 1, r + 2, as a direct
// gather's do.
// CHECK-LABEL: chunk.plan @ring world_size(3)
// CHECK-NEXT:  chunk.buffer @A
// CHECK-NEXT:  chunk.transfer @A_s0_c0 local copy_engine from <@A[(d0) -> (d0 * 128, 0)] [64, 64]> on (d0) -> (d0) {{.*}} order(0) collective(all_gather) {group = "all_gather_A"}
// CHECK-NEXT:  chunk.transfer @A_s0_c1 local copy_engine from <@A[(d0) -> (d0 * 128 + 64, 0)] [64, 64]> {{.*}} order(1)
// CHECK-NEXT:  chunk.transfer @A_s1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 3) * 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 3) to <@A[(d0) -> (((d0 + 1) mod 3) * 128, 0)] [64, 64]> on (d0) -> (d0) order(2) collective(all_gather)
// CHECK-NEXT:  chunk.transfer @A_s1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 3) * 128 + 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 3) {{.*}} order(3) collective(all_gather)
// CHECK-NEXT:  chunk.transfer @A_s2_c0 push copy_engine from <@A[(d0) -> (((d0 + 2) mod 3) * 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 3) to <@A[(d0) -> (((d0 + 2) mod 3) * 128, 0)] [64, 64]> on (d0) -> (d0) order(4) after [@A_s1_c0] collective(all_gather)
// CHECK-NEXT:  chunk.transfer @A_s2_c1 push copy_engine {{.*}} order(5) after [@A_s1_c1] collective(all_gather)
// CHECK-NEXT:  chunk.consume @A dim(0) tile(64)
chunk.plan @ring world_size(3) {
  chunk.buffer @A : !chunk.buffer<384x64xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(2) algorithm(ring)
  chunk.consume @A dim(0) tile(64)
}

// -----

// On ldst the receiving rank's copy programs pull from the neighbour.
// CHECK-LABEL: chunk.plan @ring_ldst world_size(2)
// CHECK:       chunk.transfer @A_s1_c0 pull ldst {{.*}} on (d0) -> ((d0 + 1) mod 2) {{.*}} order(1) collective(all_gather)
// CHECK-NOT:   after
chunk.plan @ring_ldst world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(1) backend(ldst) algorithm(ring)
  chunk.consume @A dim(0) tile(128)
}

// -----

chunk.plan @ring_rs world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  // expected-error @below {{chunk-expand-collectives: algorithm 'ring' is supported for all_gather only, not yet for reduce_scatter; use 'direct'}}
  chunk.reduce_scatter @P into @C dim(0) chunks(1) algorithm(ring)
}

// -----

// A ring of what kernel tiles produce would forward rows before the tiles
// of the neighbour wrote them, unless each hop also waited for the tiles.
chunk.plan @ring_produced world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
  chunk.produce @tiles @C dim(0) tile(64)
  // expected-error @below {{chunk-expand-collectives: a ring all_gather of @C, which kernel tiles produce, is not supported yet; use 'direct'}}
  chunk.all_gather @C dim(0) chunks(1) algorithm(ring)
}

// -----

// A re-sharding all-to-all (Ulysses): rank r's tokens of every head,
// [256, 512], into every token of its heads, [512, 256]. Rank r takes
// columns r * 256 of rank r+k's rows c * 128 (2 chunks) into its rows
// (r+k) * 256 + c * 128; k = 0 is a local copy.
// CHECK-LABEL: chunk.plan @reshard world_size(2)
// CHECK:       chunk.transfer @Qh_p0_c0 local copy_engine from <@Qs[(d0) -> (0, d0 * 256)] [128, 256]> on (d0) -> (d0) to <@Qh[(d0) -> (d0 * 256, 0)] [128, 256]> on (d0) -> (d0) order(0) collective(all_to_all)
// CHECK-NEXT:  chunk.transfer @Qh_p0_c1 local copy_engine from <@Qs[(d0) -> (128, d0 * 256)] [128, 256]> on (d0) -> (d0) to <@Qh[(d0) -> (d0 * 256 + 128, 0)] [128, 256]>
// CHECK-NEXT:  chunk.transfer @Qh_p1_c0 push copy_engine from <@Qs[(d0) -> (0, d0 * 256)] [128, 256]> on (d0) -> ((d0 + 1) mod 2) to <@Qh[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [128, 256]> on (d0) -> (d0) order(2)
// CHECK-NEXT:  chunk.transfer @Qh_p1_c1 push copy_engine from <@Qs[(d0) -> (128, d0 * 256)] [128, 256]> on (d0) -> ((d0 + 1) mod 2) to <@Qh[(d0) -> (((d0 + 1) mod 2) * 256 + 128, 0)] [128, 256]> on (d0) -> (d0) order(3)
// CHECK-NEXT:  chunk.consume @Qh dim(0) tile(64)
chunk.plan @reshard world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x512xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x256xbf16> bind(0)
  chunk.all_to_all @Qs into @Qh dim(1) chunks(2) to(0)
  chunk.consume @Qh dim(0) tile(64)
}

// -----

// The same re-shard on 3-D buffers, sequence-sharded [S / W, H, D] into
// head-sharded [S, H / W, D]: rank r takes heads r * 4 of rank r+k's
// tokens c * 128 (2 chunks) into its tokens (r+k) * 256 + c * 128, every
// head dimension; boxes of [128, 4, 64].
// CHECK-LABEL: chunk.plan @reshard_3d world_size(2)
// CHECK:       chunk.transfer @Qh_p0_c0 local copy_engine from <@Qs[(d0) -> (0, d0 * 4, 0)] [128, 4, 64]> on (d0) -> (d0) to <@Qh[(d0) -> (d0 * 256, 0, 0)] [128, 4, 64]> on (d0) -> (d0) order(0) collective(all_to_all)
// CHECK-NEXT:  chunk.transfer @Qh_p0_c1 local copy_engine from <@Qs[(d0) -> (128, d0 * 4, 0)] [128, 4, 64]> on (d0) -> (d0) to <@Qh[(d0) -> (d0 * 256 + 128, 0, 0)] [128, 4, 64]>
// CHECK-NEXT:  chunk.transfer @Qh_p1_c0 push copy_engine from <@Qs[(d0) -> (0, d0 * 4, 0)] [128, 4, 64]> on (d0) -> ((d0 + 1) mod 2) to <@Qh[(d0) -> (((d0 + 1) mod 2) * 256, 0, 0)] [128, 4, 64]> on (d0) -> (d0) order(2)
// CHECK-NEXT:  chunk.transfer @Qh_p1_c1 push copy_engine from <@Qs[(d0) -> (128, d0 * 4, 0)] [128, 4, 64]> on (d0) -> ((d0 + 1) mod 2) to <@Qh[(d0) -> (((d0 + 1) mod 2) * 256 + 128, 0, 0)] [128, 4, 64]> on (d0) -> (d0) order(3)
chunk.plan @reshard_3d world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x8x64xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x4x64xbf16>
  chunk.all_to_all @Qs into @Qh dim(1) chunks(2) to(0)
}

// -----

// A re-shard of what kernel tiles produce (attention's output by heads,
// back by tokens): its chunks cut each rank's block along dim(0), the
// rows the tiles finish, not along to(1). Rank r takes chunk c (128 rows)
// of block r of rank r+k's @X into its rows c * 128, rank r+k's columns;
// every transfer waits for the tiles.
// CHECK-LABEL: chunk.plan @produced_reshard world_size(2)
// CHECK:       chunk.transfer @Y_p0_c0 local copy_engine from <@X[(d0) -> (d0 * 256, 0)] [128, 128]> on (d0) -> (d0) to <@Y[(d0) -> (0, d0 * 128)] [128, 128]> on (d0) -> (d0) order(0) after [@tiles] collective(all_to_all)
// CHECK-NEXT:  chunk.transfer @Y_p0_c1 local copy_engine from <@X[(d0) -> (d0 * 256 + 128, 0)] [128, 128]> on (d0) -> (d0) to <@Y[(d0) -> (128, d0 * 128)] [128, 128]> on (d0) -> (d0) order(1) after [@tiles]
// CHECK-NEXT:  chunk.transfer @Y_p1_c0 push copy_engine from <@X[(d0) -> (d0 * 256, 0)] [128, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [128, 128]> on (d0) -> (d0) order(2) after [@tiles]
// CHECK-NEXT:  chunk.transfer @Y_p1_c1 push copy_engine from <@X[(d0) -> (d0 * 256 + 128, 0)] [128, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (128, ((d0 + 1) mod 2) * 128)] [128, 128]> on (d0) -> (d0) order(3) after [@tiles]
chunk.plan @produced_reshard world_size(2) {
  chunk.buffer @X : !chunk.buffer<512x128xbf16>
  chunk.buffer @Y : !chunk.buffer<256x256xbf16>
  chunk.produce @tiles @X dim(0) tile(128)
  chunk.all_to_all @X into @Y dim(0) chunks(2) to(1)
}

// -----

// Zigzag blocks of 3 ranks in 4 chunks: rank o holds half-blocks o and
// 5 - o (of 6, 128 rows each); chunks 0 and 1 cut the first, 2 and 3 the
// second.
// CHECK-LABEL: chunk.plan @zigzag world_size(3)
// CHECK-NEXT:  chunk.buffer @K
// CHECK-NEXT:  chunk.transfer @K_p0_c0 local copy_engine from <@K[(d0) -> (d0 * 128, 0)] [64, 64]>
// CHECK-NEXT:  chunk.transfer @K_p0_c1 local copy_engine from <@K[(d0) -> (d0 * 128 + 64, 0)] [64, 64]>
// CHECK-NEXT:  chunk.transfer @K_p0_c2 local copy_engine from <@K[(d0) -> ((-d0 + 5) * 128, 0)] [64, 64]>
// CHECK-NEXT:  chunk.transfer @K_p0_c3 local copy_engine from <@K[(d0) -> ((-d0 + 5) * 128 + 64, 0)] [64, 64]>
// CHECK-NEXT:  chunk.transfer @K_p1_c0 push copy_engine from <@K[(d0) -> (((d0 + 1) mod 3) * 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 3) to <@K[(d0) -> (((d0 + 1) mod 3) * 128, 0)] [64, 64]> on (d0) -> (d0) order(4)
// CHECK-NEXT:  chunk.transfer @K_p1_c1
// CHECK-NEXT:  chunk.transfer @K_p1_c2 push copy_engine from <@K[(d0) -> ((-((d0 + 1) mod 3) + 5) * 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 3) to <@K[(d0) -> ((-((d0 + 1) mod 3) + 5) * 128, 0)] [64, 64]> on (d0) -> (d0) order(6)
// CHECK-NEXT:  chunk.transfer @K_p1_c3 push copy_engine from <@K[(d0) -> ((-((d0 + 1) mod 3) + 5) * 128 + 64, 0)] [64, 64]>
// CHECK-NEXT:  chunk.transfer @K_p2_c0
// CHECK-NEXT:  chunk.transfer @K_p2_c1
// CHECK-NEXT:  chunk.transfer @K_p2_c2
// CHECK-NEXT:  chunk.transfer @K_p2_c3 push copy_engine {{.*}} order(11)
// CHECK-NEXT:  chunk.consume @K dim(0) tile(64) loop("start_n")
chunk.plan @zigzag world_size(3) {
  chunk.buffer @K : !chunk.buffer<768x64xbf16> bind(1)
  chunk.all_gather @K dim(0) chunks(4) blocks(zigzag)
  chunk.consume @K dim(0) tile(64) loop("start_n")
}

// -----

// Zigzag blocks are for what ranks hold, not for what kernel tiles produce.
chunk.plan @zigzag_produced world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
  chunk.produce @tiles @C dim(0) tile(64)
  // expected-error @below {{chunk-expand-collectives: a blocks(zigzag) all_gather of @C, which kernel tiles produce, is not supported; zigzag blocks are for consumed buffers}}
  chunk.all_gather @C dim(0) chunks(2) blocks(zigzag)
}

// -----

// A one-shot all-reduce expands into world_size^2 x chunks transfers, each
// checked on every rank: 256 ranks in 4 chunks is refused before any is
// made (expanded, it took 200 s and 14 GB).
chunk.plan @huge world_size(256) {
  chunk.buffer @P : !chunk.buffer<8192x64xbf16>
  chunk.buffer @C : !chunk.buffer<8192x64xbf16>
  // expected-error @below {{chunk-expand-collectives: this collective expands into 262144 transfers, 262144 in the plan, each checked on 256 ranks: more than 1048576 per-rank copies; use fewer chunks or ranks}}
  chunk.all_reduce @P into @C dim(0) chunks(4) backend(copy_engine) algorithm(one_shot)
}

// -----

// The limit is 2^20 per-rank copies: an all-gather of 1024 ranks in one
// chunk each sits at it (the whole synco-ag-gemm pipeline: 33 s, 3.4 GB);
// in two chunks it is refused.
chunk.plan @over world_size(1024) {
  chunk.buffer @A : !chunk.buffer<131072x64xbf16>
  // expected-error @below {{chunk-expand-collectives: this collective expands into 2048 transfers, 2048 in the plan, each checked on 1024 ranks: more than 1048576 per-rank copies; use fewer chunks or ranks}}
  chunk.all_gather @A dim(0) chunks(2)
}

// -----

// reduce_scatter: rank r reduces block r of every rank's partial into its C
// (own partial first, a local reducing copy), each chunk after the tiles
// that produce P.
// CHECK-LABEL: chunk.plan @rs world_size(2)
// CHECK:       chunk.produce @tiles @P dim(0) tile(128)
// CHECK-NEXT:  chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
// CHECK-NEXT:  chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> {{.*}} to <@C[(d0) -> (256, 0)] [256, 64]> {{.*}} order(1) after [@tiles] reduce(sum)
// CHECK-NEXT:  chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum)
// CHECK-NEXT:  chunk.transfer @C_p1_c1 pull ldst
// CHECK-NOT:   chunk.reduce_scatter
chunk.plan @rs world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  chunk.produce @tiles @P dim(0) tile(128)
  chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst)
}

// -----

// reduce_scatter moved by the copy engine, W = 4: also a staging buffer of
// W - 1 = 3 blocks of P (unbound: the caller binds it), where the copy
// engine lands the peers' partials of the rank's own block.
// CHECK-LABEL: chunk.plan @rs_copy_engine world_size(4)
// CHECK:       chunk.buffer @P_staging : !chunk.buffer<768x64xbf16> {chunk.staging}
// CHECK-NEXT:  chunk.transfer @C_p0_c0 local
// CHECK:       chunk.transfer @C_p3_c0 pull copy_engine
chunk.plan @rs_copy_engine world_size(4) {
  chunk.buffer @P : !chunk.buffer<1024x64xbf16>
  chunk.buffer @C : !chunk.buffer<256x64xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  chunk.reduce_scatter @P into @C dim(0) chunks(1) backend(copy_engine)
}

// -----

chunk.plan @rs_staging_clash world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xbf16>
  chunk.buffer @C : !chunk.buffer<512x64xbf16>
  chunk.buffer @P_staging : !chunk.buffer<512x64xbf16>
  // expected-error @below {{chunk-expand-collectives: the staging buffer @P_staging would clash with the plan's buffer of that name}}
  chunk.reduce_scatter @P into @C dim(0) chunks(1) backend(copy_engine)
}

// -----

// all_reduce, one-shot: every block of every rank's partial reduced locally.
// CHECK-LABEL: chunk.plan @ar_one_shot world_size(2)
// CHECK:       chunk.transfer @C_p0_b0_c0 local copy_engine from <@P[(d0) -> (0, 0)] [512, 64]> {{.*}} to <@C[(d0) -> (0, 0)] [512, 64]> {{.*}} order(0) reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
// CHECK-NEXT:  chunk.transfer @C_p0_b1_c0 local {{.*}} order(1) reduce(sum)
// CHECK-NEXT:  chunk.transfer @C_p1_b0_c0 pull copy_engine from <@P[(d0) -> (0, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) {{.*}} order(2) reduce(sum)
// CHECK-NEXT:  chunk.transfer @C_p1_b1_c0 pull {{.*}} order(3) reduce(sum)
chunk.plan @ar_one_shot world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<1024x64xf32>
  chunk.all_reduce @P into @C dim(0) chunks(1) algorithm(one_shot)
}

// -----

// all_reduce, one-shot on 4 ranks: peers push whole partials, so the rank's
// own P holds one (slot 0) and a staging buffer of W - 2 = 2 copies of P the
// others; one transfer per peer and block.
// CHECK-LABEL: chunk.plan @ar_one_shot_w4 world_size(4)
// CHECK:       chunk.buffer @P_staging : !chunk.buffer<2048x64xbf16> {chunk.staging}
// CHECK-NEXT:  chunk.transfer @C_p0_b0_c0 local
// CHECK-COUNT-16: reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
// CHECK-NOT:   chunk.transfer
chunk.plan @ar_one_shot_w4 world_size(4) {
  chunk.buffer @P : !chunk.buffer<1024x64xbf16>
  chunk.buffer @C : !chunk.buffer<1024x64xbf16>
  chunk.all_reduce @P into @C dim(0) chunks(1) backend(ldst) algorithm(one_shot)
}

// -----

// all_reduce, two-shot on 4 ranks: a reduce-scatter into block r of C, then
// an all-gather of the other blocks, each after the reductions.
// CHECK-LABEL: chunk.plan @ar_two_shot world_size(4)
// CHECK-COUNT-4: reduce(sum) collective(all_reduce) phase(reduce_scatter) {group = "all_reduce_C_rs"}
// CHECK:       chunk.transfer @C_ag_p0_c0 local copy_engine {{.*}} after [@C_rs_p0_c0, @C_rs_p1_c0, @C_rs_p2_c0, @C_rs_p3_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
// CHECK:       chunk.transfer @C_ag_p3_c0 pull copy_engine from <@C[(d0) -> (((d0 + 3) mod 4) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 3) mod 4) {{.*}} order(7) after [@C_rs_p0_c0, @C_rs_p1_c0, @C_rs_p2_c0, @C_rs_p3_c0] collective(all_reduce) phase(all_gather) {group = "all_reduce_C_ag"}
chunk.plan @ar_two_shot world_size(4) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<1024x64xf32>
  chunk.all_reduce @P into @C dim(0) chunks(1)
}
