// The plan-level verifier: coverage per collective group, dependencies
// and consumers. Each split is a plan that would lose data, receive data
// twice, or deadlock, and the diagnostic that refuses it.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics

// A gather group that forgets the rank's own block: rows [r*512, r*512+512)
// of @A are never written on rank r.
// expected-error @below {{'chunk.plan' op the transfers of group "ag" leave part of @A unwritten on rank 0 (they write 32768 of 65536 elements): add the missing chunks, including the rank's own block as a 'local' transfer}}
chunk.plan @lost world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.transfer @peer pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r)
      order(1) {group = "ag"}
}

// -----

// Two chunks overlap by 256 rows: the second writer is refused, and the
// note points at the first.
chunk.plan @twice world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-note @below {{the other writer is here}}
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      order(0) {group = "ag"}
  // expected-error @below {{'chunk.transfer' op writes [256:768, 0:64] of @A on rank 0, which @own already writes: group "ag" must write each element exactly once}}
  chunk.transfer @peer pull copy_engine
      from #chunk.region<@A[(r) -> (256, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (256, 0)] [512, 64]> on (r) -> (r)
      order(1) {group = "ag"}
}

// -----

// The transfers of a group implement one collective: a transfer that says
// it belongs to another is refused.
chunk.plan @mixed world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      order(0) collective(all_gather) {group = "ag"}
  // expected-error @below {{'chunk.transfer' op is not of the collective (and phase) of group "ag"'s first transfer, @own}}
  chunk.transfer @peer pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r)
      order(1) collective(all_to_all) {group = "ag"}
}

// -----

// A correct gather on 4 ranks, written chunk by chunk: the rank's own block
// and three peers in rotated order. Verifies.
chunk.plan @gather4 world_size(4) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r)
      order(0) {group = "ag"}
  chunk.transfer @p1 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 1) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r + 1) mod 4)
      to #chunk.region<@A[(r) -> (((r + 1) mod 4) * 256, 0)] [256, 64]> on (r) -> (r)
      order(1) {group = "ag"}
  chunk.transfer @p2 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 2) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r + 2) mod 4)
      to #chunk.region<@A[(r) -> (((r + 2) mod 4) * 256, 0)] [256, 64]> on (r) -> (r)
      order(2) {group = "ag"}
  chunk.transfer @p3 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 3) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r + 3) mod 4)
      to #chunk.region<@A[(r) -> (((r + 3) mod 4) * 256, 0)] [256, 64]> on (r) -> (r)
      order(3) {group = "ag"}
}

// -----

// A reduction into rank r's rows that forgets rank r's own partial.
// expected-error @below {{'chunk.plan' op the reduction of group "rs" into @C on rank 0 gets no contribution from rank 0 for some elements: every rank must contribute to every reduced element exactly once}}
chunk.plan @missing_partial world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  chunk.transfer @from_peer pull copy_engine
      from #chunk.region<@P[(r) -> (r * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@C[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(1) reduce(sum) {group = "rs"}
}

// -----

// A reduction of 12 ranks with only the next rank's partial: the error
// lists the first 8 ranks that are missing and counts the rest.
// expected-error @below {{'chunk.plan' op the reduction of group "rs" into @C on rank 0 gets no contribution from rank 0 2 3 4 5 6 7 8 and 3 other ranks for some elements}}
chunk.plan @missing_many world_size(12) {
  chunk.buffer @P : !chunk.buffer<1536x64xf32>
  chunk.buffer @C : !chunk.buffer<128x64xf32>
  chunk.transfer @from_next pull copy_engine
      from #chunk.region<@P[(r) -> (r * 128, 0)] [128, 64]> on (r) -> ((r + 1) mod 12)
      to #chunk.region<@C[(r) -> (0, 0)] [128, 64]> on (r) -> (r)
      order(1) reduce(sum) {group = "rs"}
}

// -----

// A reduction that adds the peer's partial twice.
chunk.plan @double_partial world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  chunk.transfer @own local copy_engine
      from #chunk.region<@P[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@C[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0) reduce(sum) {group = "rs"}
  // expected-note @below {{the other writer is here}}
  chunk.transfer @peer pull copy_engine
      from #chunk.region<@P[(r) -> (r * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@C[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(1) reduce(sum) {group = "rs"}
  // expected-error @below {{'chunk.transfer' op writes [0:256, 0:64] of @C on rank 0, which @peer already writes: group "rs" must write each element exactly once per source rank}}
  chunk.transfer @peer_again pull copy_engine
      from #chunk.region<@P[(r) -> (r * 512, 0)] [256, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@C[(r) -> (0, 0)] [256, 64]> on (r) -> (r)
      order(2) reduce(sum) {group = "rs"}
}

// -----

chunk.plan @mixed world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.buffer @B : !chunk.buffer<1024x64xf16>
  chunk.transfer @a local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      order(0) {group = "g"}
  // expected-error @below {{'chunk.transfer' op writes @B but group "g" writes @A; a group's transfers share their destination buffer}}
  chunk.transfer @b local copy_engine
      from #chunk.region<@B[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      to #chunk.region<@B[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      order(1) {group = "g"}
}

// -----

chunk.plan @unknown_dep world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op waits for @nobody, which is not a chunk.transfer or chunk.produce of plan @unknown_dep: nothing would ever signal it}}
  chunk.transfer @t local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      order(0) after [@nobody]
}

// -----

chunk.plan @buffer_dep world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op waits for @A, which is not a chunk.transfer or chunk.produce of plan @buffer_dep}}
  chunk.transfer @t local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      order(0) after [@A]
}

// -----

chunk.plan @self_dep world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op waits for itself}}
  chunk.transfer @t local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [1024, 64]> on (r) -> (r)
      order(0) after [@t]
}

// -----

// A ring whose first hop waits for its last: a deadlock.
chunk.plan @cycle world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op is part of a dependency cycle, which would deadlock: @hop0 -> @hop1 -> @hop2 -> @hop0}}
  chunk.transfer @hop0 local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [256, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [256, 64]> on (r) -> (r)
      order(0) after [@hop1]
  chunk.transfer @hop1 local copy_engine
      from #chunk.region<@A[(r) -> (256, 0)] [256, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (256, 0)] [256, 64]> on (r) -> (r)
      order(1) after [@hop2]
  chunk.transfer @hop2 local copy_engine
      from #chunk.region<@A[(r) -> (512, 0)] [256, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (512, 0)] [256, 64]> on (r) -> (r)
      order(2) after [@hop0]
}

// -----

// A ring of 3 ranks whose second hop forwards a chunk without waiting for
// the first hop to bring it to the neighbour: it could send rows that have
// not arrived. (@hop2 on rank 0 reads block 1 on rank 2, which @hop1
// writes there.)
chunk.plan @early_forward world_size(3) {
  chunk.buffer @A : !chunk.buffer<384x64xf16>
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 128, 0)] [128, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 128, 0)] [128, 64]> on (r) -> (r)
      order(0) {group = "ring"}
  // expected-note @below {{the writing transfer is here}}
  chunk.transfer @hop1 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 2) mod 3) * 128, 0)] [128, 64]> on (r) -> ((r + 2) mod 3)
      to #chunk.region<@A[(r) -> (((r + 2) mod 3) * 128, 0)] [128, 64]> on (r) -> (r)
      order(1) {group = "ring"}
  // expected-error @below {{'chunk.transfer' op copies [128:256, 0:64] of @A from rank 2 (on rank 0), rows that @hop1 writes there, without waiting for it (after [@hop1]): it could copy rows that have not arrived}}
  chunk.transfer @hop2 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 1) mod 3) * 128, 0)] [128, 64]> on (r) -> ((r + 2) mod 3)
      to #chunk.region<@A[(r) -> (((r + 1) mod 3) * 128, 0)] [128, 64]> on (r) -> (r)
      order(2) {group = "ring"}
}

// -----

// The same ring with the wait: it verifies.
chunk.plan @forward world_size(3) {
  chunk.buffer @A : !chunk.buffer<384x64xf16>
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 128, 0)] [128, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 128, 0)] [128, 64]> on (r) -> (r)
      order(0) {group = "ring"}
  chunk.transfer @hop1 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 2) mod 3) * 128, 0)] [128, 64]> on (r) -> ((r + 2) mod 3)
      to #chunk.region<@A[(r) -> (((r + 2) mod 3) * 128, 0)] [128, 64]> on (r) -> (r)
      order(1) {group = "ring"}
  chunk.transfer @hop2 pull copy_engine
      from #chunk.region<@A[(r) -> (((r + 1) mod 3) * 128, 0)] [128, 64]> on (r) -> ((r + 2) mod 3)
      to #chunk.region<@A[(r) -> (((r + 1) mod 3) * 128, 0)] [128, 64]> on (r) -> (r)
      order(2) after [@hop1] {group = "ring"}
}

// -----

chunk.plan @unwritten world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.consume' op reads @A but no transfer or collective of the plan writes it, so its tiles would wait forever}}
  chunk.consume @A dim(0) tile(128)
}

// -----

chunk.plan @two_producers world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  // expected-note @below {{the other producer is here}}
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-error @below {{'chunk.produce' op produces @P, which @tiles already produces: every chunk must have exactly one producer}}
  chunk.produce @more_tiles @P dim(0) tile(64)
}

// -----

chunk.plan @wrong_producer world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @Q : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  chunk.produce @q_tiles @Q dim(0) tile(128)
  // expected-error @below {{'chunk.transfer' op waits for the tiles that produce @Q, but copies from @P: that wait would not order anything it reads}}
  chunk.transfer @t local copy_engine
      from #chunk.region<@P[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@C[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0) after [@q_tiles] reduce(sum)
}

// -----

// A copy out of a produced buffer that does not wait for its tiles could
// read rows they have not written.
chunk.plan @unordered_copy world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  // expected-note @below {{the producer is here}}
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-error @below {{'chunk.transfer' op copies from @P, which @tiles produces, without waiting for it (after [@tiles]): it could copy rows the tiles have not written yet}}
  chunk.transfer @t push copy_engine
      from #chunk.region<@P[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@C[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      order(0) reduce(sum)
}

// -----

// Moving what the kernel's tiles produce by an all-to-all within one
// splitting: refused (an all-gather of it, or a re-sharding all-to-all, is
// accepted, their transfers wait: Passes/fuse-gathers.mlir).
chunk.plan @scatter_produced world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x512xbf16>
  chunk.buffer @D : !chunk.buffer<512x512xbf16>
  // expected-note @below {{the producer is here}}
  chunk.produce @tiles @C dim(1) tile(128)
  // expected-error @below {{'chunk.all_to_all' op moves @C, which kernel tiles produce (@tiles): an all-to-all of a produced buffer is supported as a re-shard only (to(t), t != dim)}}
  chunk.all_to_all @C into @D dim(0) chunks(2)
}

// -----

// Tiles that straddle two ranks' blocks: 96-row tiles over 512-row blocks
// of an all-gather (a tile would wait for two ranks' chunks), and 128-row
// tiles of a reduce-scatter's partial over 64-row blocks (world_size(16):
// refused here, before the expansion into 16 x 15 transfers).
chunk.plan @straddle world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16>
  // expected-note @below {{the blocks are cut here}}
  chunk.all_gather @A dim(0) chunks(2)
  // expected-error @below {{'chunk.consume' op tiles of 96 along dimension 0 of @A do not fit its per-rank blocks of 512 (1024 / world_size 2): a tile would span two ranks' blocks, and a tile waits for (or signals) one chunk}}
  chunk.consume @A dim(0) tile(96)
}

// -----

// Zigzag: each rank's block is two half-blocks of 256 rows; a tile of 512
// would span two ranks'.
chunk.plan @zigzag_tiles world_size(2) {
  chunk.buffer @K : !chunk.buffer<1024x64xbf16> bind(1)
  // expected-note @below {{the blocks are cut here}}
  chunk.all_gather @K dim(0) chunks(2) blocks(zigzag)
  // expected-error @below {{'chunk.consume' op tiles of 512 along dimension 0 of @K do not fit its per-rank blocks of 256 (1024 / zigzag half-blocks 4): a tile would span two ranks' blocks, and a tile waits for (or signals) one chunk}}
  chunk.consume @K dim(0) tile(512) loop("start_n")
}

// -----

chunk.plan @straddle16 world_size(16) {
  chunk.buffer @P : !chunk.buffer<1024x64xbf16>
  chunk.buffer @C : !chunk.buffer<64x64xbf16>
  // expected-error @below {{'chunk.produce' op tiles of 128 along dimension 0 of @P do not fit its per-rank blocks of 64 (1024 / world_size 16)}}
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-note @below {{the blocks are cut here}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto)
}

// -----

// Tiles along another dimension than the blocks are not constrained by them
// (a gathered output produced in column tiles), only by the chunks that
// split(1) cuts along it: 64-wide tiles in chunks of 128 columns. Verifies.
chunk.plan @across world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x256xbf16>
  chunk.produce @tiles @C dim(1) tile(64)
  chunk.all_gather @C dim(0) chunks(2) split(1)
}

// -----

// Tiles that straddle two chunks: an explicit chunk count must hold whole
// tiles (chunks(auto) picks one that does). 128-row tiles over chunks of 64
// rows (512-row blocks in 8 chunks), refused here rather than after the
// expansion...
chunk.plan @straddle_chunks world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16>
  // expected-note @below {{the chunks are cut here}}
  chunk.all_gather @A dim(0) chunks(8)
  // expected-error @below {{'chunk.consume' op tiles of 128 along dimension 0 of @A do not fit its chunks of 64: a tile would span two chunks, and a tile waits for (or signals) one chunk; pick a chunk count whose chunks hold whole tiles}}
  chunk.consume @A dim(0) tile(128)
}

// -----

// ...and 96-wide column tiles of a gathered output over split(1)'s chunks
// of 128 columns.
chunk.plan @straddle_split world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x256xbf16>
  // expected-error @below {{'chunk.produce' op tiles of 96 along dimension 1 of @C do not fit its chunks of 128}}
  chunk.produce @tiles @C dim(1) tile(96)
  // expected-note @below {{the chunks are cut here}}
  chunk.all_gather @C dim(0) chunks(2) split(1)
}

// -----

// Maps that step back a rank: affine mod is never negative, so
// (r - 1) mod 2 is 1 on rank 0 and the gather covers @A on both ranks (no
// diagnostic).
chunk.plan @back world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      order(0) {group = "ag"}
  chunk.transfer @peer pull copy_engine
      from #chunk.region<@A[(r) -> (((r - 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r - 1) mod 2)
      to #chunk.region<@A[(r) -> (((r - 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r)
      order(1) {group = "ag"}
}
