// Each op's verifier: one rule per split, each with the diagnostic a user
// sees.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics

// expected-error @below {{symmetric buffer dimensions must be positive, got 0}}
func.func private @zero_dim(!chunk.buffer<0x4xf32>)

// -----

// expected-error @below {{symmetric buffer elements must be integers or floats, got 'vector<2xf32>'}}
func.func private @vector_elements(!chunk.buffer<4xvector<2xf32>>)

// -----

// expected-error @below {{region offsets must be a map of one dimension (the rank) and no symbols}}
func.func private @two_dims() attributes {r = #chunk.region<@A[(r, s) -> (r, s)] [1, 1]>}

// -----

// expected-error @below {{region has 2 offsets but 1 sizes}}
func.func private @offsets_vs_sizes() attributes {r = #chunk.region<@A[(r) -> (r, 0)] [1]>}

// -----

// expected-error @below {{region sizes must be positive, got 0}}
func.func private @empty_region() attributes {r = #chunk.region<@A[(r) -> (r)] [0]>}

// -----

// expected-error @below {{'chunk.plan' op attribute 'world_size' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1 whose maximum value is 1024}}
chunk.plan @nobody world_size(0) {
}

// -----

// At most 1024 ranks: the passes and the launch manifest go rank by rank
// (2^31 ranks once made chunk-lower-transfers allocate 48 GiB).
// expected-error @below {{'chunk.plan' op attribute 'world_size' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1 whose maximum value is 1024}}
chunk.plan @everybody world_size(1025) {
  chunk.buffer @P : !chunk.buffer<8192x4096xbf16>
}

// -----

// expected-error @below {{'chunk.buffer' op expects parent op 'chunk.plan'}}
chunk.buffer @A : !chunk.buffer<4xf32>

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op source rank must be an affine map (r) -> (rank), got affine_map<(d0) -> (d0, d0)>}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r, r)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op backend 'auto' is for collectives: chunk-select-backend picks one before they are expanded into transfers}}
  chunk.transfer @t pull auto
      from #chunk.region<@A[(r) -> (512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (512, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op destination rank affine_map<(d0) -> (d0 + 1)> gives rank 2 on rank 1, outside [0, 2)}}
  chunk.transfer @t push copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r + 1)
      order(0)
}

// -----

// Rank maps evaluate as affine maps do: floordiv rounds down, so rank 0's
// (0 - 1) floordiv 2 is -1 (not 0)...
chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op source rank affine_map<(d0) -> ((d0 - 1) floordiv 2)> gives rank -1 on rank 0, outside [0, 2)}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> ((r - 1) floordiv 2)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

// ... and ceildiv rounds up: rank 0's 3 ceildiv 2 is 2.
chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op destination rank affine_map<(d0) -> ((d0 + 3) ceildiv 2)> gives rank 2 on rank 0, outside [0, 2)}}
  chunk.transfer @t push copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 3) ceildiv 2)
      order(0)
}

// -----

// A map that divides by zero has no value on any rank (it used to read as
// an arbitrary number).
chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op source rank affine_map<(d0) -> ((d0 + 1) mod 0)> cannot be evaluated on rank 0: a mod, floordiv or ceildiv by a value that is not positive, or an overflow}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 1) mod 0)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op source region offsets affine_map<(d0) -> (d0 floordiv 0, 0)> cannot be evaluated on rank 0: a mod, floordiv or ceildiv by a value that is not positive, or an overflow}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (r floordiv 0, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op source @B is not a chunk.buffer of plan @p}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@B[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op destination region has 1 dimensions but buffer @A has 2}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [1, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0)] [64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op source region is out of bounds on rank 1: dimension 0 spans [768, 1280) but @A has 1024}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (r * 768, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.buffer @B : !chunk.buffer<1024x64xf32>
  // expected-error @below {{'chunk.transfer' op moves 'f16' elements into a 'f32' buffer}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@B[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op transfer sizes do not match: the source region holds 32768 elements, the destination region 16384}}
  chunk.transfer @t pull copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (512, 0)] [256, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op is 'local' but moves data from rank 1 to rank 0 (on rank 0); use 'pull' or 'push'}}
  chunk.transfer @t local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (512, 0)] [512, 64]> on (r) -> (r)
      order(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.transfer' op reduces a region into itself}}
  chunk.transfer @t local copy_engine
      from #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      order(0) reduce(sum)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.all_gather @A dim(0) chunks(1)
  // expected-error @below {{'chunk.consume' op dimension 2 is out of range for @A of rank 2}}
  chunk.consume @A dim(2) tile(64)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.produce' op tile of 128 is larger than dimension 1 of @A (64)}}
  chunk.produce @tiles @A dim(1) tile(128)
}

// -----

chunk.plan @p world_size(2) {
  // expected-error @below {{'chunk.consume' op buffer @A is not a chunk.buffer of plan @p}}
  chunk.consume @A dim(0) tile(128)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @K : !chunk.buffer<1024x64xbf16>
  chunk.all_gather @K dim(0) chunks(1)
  // expected-error @below {{'chunk.consume' op loop("start_n") says a kernel loop walks the blocks; it excludes index(...)}}
  chunk.consume @K dim(0) tile(64) index("pid_m") loop("start_n")
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @K : !chunk.buffer<1024x64xbf16>
  chunk.all_gather @K dim(0) chunks(1)
  // expected-error @below {{'chunk.consume' op loop("start_n") says a kernel loop walks the blocks; it excludes source(...)}}
  chunk.consume @K dim(0) tile(64) source("src") loop("start_n")
}

// -----

chunk.plan @p world_size(3) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op cannot split dimension 0 of @A (1024) into 3 equal blocks}}
  chunk.all_gather @A dim(0) chunks(auto)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op cannot split a block of 512 along dimension 0 into 3 equal chunks}}
  chunk.all_gather @A dim(0) chunks(3)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @B : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op cannot split dimension 1 of @B (64) into 3 equal chunks}}
  chunk.all_gather @B dim(0) chunks(3) split(1)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @B : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op split dimension 2 is out of range for @B of rank 2}}
  chunk.all_gather @B dim(0) chunks(2) split(2)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op dimension 2 is out of range for @A of rank 2}}
  chunk.all_gather @A dim(2) chunks(1)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op does not support algorithm 'one_shot'; expected one of: 'direct' 'ring'}}
  chunk.all_gather @A dim(0) chunks(1) algorithm(one_shot)
}

// -----

// Zigzag half-blocks: 2 x world_size of them along the dimension, each cut
// by half of an even chunk count; direct, and not split.
chunk.plan @p world_size(3) {
  chunk.buffer @A : !chunk.buffer<1536x64xf16>
  // expected-error @below {{'chunk.all_gather' op blocks(zigzag) needs an even chunk count whose halves cut each half-block of 256 along dimension 0 evenly, not chunks(3)}}
  chunk.all_gather @A dim(0) chunks(3) blocks(zigzag)
}

// -----

chunk.plan @p world_size(4) {
  chunk.buffer @A : !chunk.buffer<1028x64xf16>
  // expected-error @below {{'chunk.all_gather' op cannot split dimension 0 of @A (1028) into 8 equal blocks}}
  chunk.all_gather @A dim(0) chunks(2) blocks(zigzag)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op blocks(zigzag) is supported with algorithm 'direct' only, not 'ring'}}
  chunk.all_gather @A dim(0) chunks(2) algorithm(ring) blocks(zigzag)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op blocks(zigzag) cannot split dimension 1: its chunks cut the zigzag dimension 0}}
  chunk.all_gather @A dim(0) chunks(2) split(1) blocks(zigzag)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{expected a chunk count or 'auto'}}
  chunk.all_gather @A dim(0) chunks(many)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{'chunk.all_gather' op attribute 'chunks' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  chunk.all_gather @A dim(0) chunks(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  // expected-error @below {{expected string or keyword containing one of the following enum values for attribute 'backend' [copy_engine, tma, ldst, nvshmem, nccl_device, auto]}}
  chunk.all_gather @A dim(0) chunks(1) backend(carrier_pigeon)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<1024x64xf32>
  // expected-error @below {{'chunk.reduce_scatter' op destination @C must have shape 512x64}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xbf16>
  // expected-error @below {{'chunk.reduce_scatter' op source holds 'f32' but destination holds 'bf16'}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  // expected-error @below {{'chunk.reduce_scatter' op does not support algorithm 'two_shot'}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) algorithm(two_shot)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<1024x64xf32>
  // expected-error @below {{'chunk.all_reduce' op does not support algorithm 'ring'; expected one of: 'one_shot' 'two_shot'}}
  chunk.all_reduce @P into @C dim(0) chunks(auto) algorithm(ring)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  // expected-error @below {{'chunk.all_reduce' op destination @Q is not a chunk.buffer of plan @p}}
  chunk.all_reduce @P into @Q dim(0) chunks(auto)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @X : !chunk.buffer<1024x64xf32>
  // expected-error @below {{'chunk.all_to_all' op needs distinct source and destination buffers}}
  chunk.all_to_all @X into @X dim(0) chunks(1)
}

// -----

func.func @wait_release(%flag: !tt.ptr<i32>, %epoch: i32) {
  // expected-error @below {{'chunk.wait' op a wait only reads its flag, so 'release' orders nothing; use 'acquire'}}
  chunk.wait %flag[%epoch], %epoch sem(release) : !tt.ptr<i32>
  return
}

// -----

func.func @signal_acquire(%flag: !tt.ptr<i32>, %epoch: i32) {
  // expected-error @below {{'chunk.signal' op a signal only writes its flag, so 'acquire' orders nothing; use 'release'}}
  chunk.signal %flag[%epoch], %epoch sem(acquire) : !tt.ptr<i32>
  return
}

// -----

func.func @wide_epoch(%flag: !tt.ptr<i32>, %c: i32, %epoch: i64) {
  // expected-error @below {{'chunk.wait' op operand #2 must be 32-bit signless integer, but got 'i64'}}
  "chunk.wait"(%flag, %c, %epoch) : (!tt.ptr<i32>, i32, i64) -> ()
  return
}

// -----

func.func @peer_ptr_type(%p: !tt.ptr<bf16>, %r: i32) {
  // expected-error @below {{'chunk.peer_ptr' op failed to verify that all of {ptr, result} have same type}}
  %q = "chunk.peer_ptr"(%p, %r) : (!tt.ptr<bf16>, i32) -> !tt.ptr<f32>
  return
}

// -----

func.func @wait_timeout(%flag: !tt.ptr<i32>, %epoch: i32) {
  // expected-error @below {{'chunk.wait' op attribute 'timeout_ns' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  chunk.wait %flag[%epoch], %epoch {timeout_ns = 0 : i64} : !tt.ptr<i32>
  return
}

// -----

func.func @arrive_relaxed(%flag: !tt.ptr<i32>, %c: i32) {
  // expected-error @below {{'chunk.arrive' op an arrival publishes the program's writes, so it needs 'release' or 'acq_rel'}}
  chunk.arrive %flag[%c] sem(relaxed) : !tt.ptr<i32>
  return
}

// -----

func.func @wait_count(%flag: !tt.ptr<i32>, %epoch: i32) {
  // expected-error @below {{'chunk.wait' op attribute 'count' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  chunk.wait %flag[%epoch], %epoch count(0) : !tt.ptr<i32>
  return
}

// -----

func.func @poll_count(%flag: !tt.ptr<i32>, %epoch: i32) {
  // expected-error @below {{'chunk.poll' op attribute 'count' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %p = chunk.poll %flag[%epoch], %epoch count(0) : !tt.ptr<i32>
  return
}

// -----

func.func @poll_result(%flag: !tt.ptr<i32>, %epoch: i32) {
  // expected-error @below {{'chunk.poll' op result #0 must be 1-bit signless integer, but got 'i32'}}
  %p = "chunk.poll"(%flag, %epoch, %epoch) : (!tt.ptr<i32>, i32, i32) -> i32
  return
}

// -----

chunk.plan @collective_reduces world_size(2) {
  chunk.buffer @A : !chunk.buffer<4x4xf32>
  chunk.buffer @B : !chunk.buffer<4x4xf32>
  // expected-error @below {{'chunk.transfer' op does not reduce, but is a transfer of reduce_scatter}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (0, 0)] [4, 4]> on (r) -> ((r + 1) mod 2)
      to <@B[(r) -> (0, 0)] [4, 4]> on (r) -> (r) order(0) collective(reduce_scatter)
}

// -----

chunk.plan @gather_phase_reduces world_size(2) {
  chunk.buffer @A : !chunk.buffer<4x4xf32>
  chunk.buffer @B : !chunk.buffer<4x4xf32>
  // expected-error @below {{'chunk.transfer' op reduces, but is a transfer of all_reduce (phase all_gather)}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (0, 0)] [4, 4]> on (r) -> ((r + 1) mod 2)
      to <@B[(r) -> (0, 0)] [4, 4]> on (r) -> (r) order(0) reduce(sum) collective(all_reduce) phase(all_gather)
}

// -----

chunk.plan @phase_of_a_gather world_size(2) {
  chunk.buffer @A : !chunk.buffer<4x4xf32>
  chunk.buffer @B : !chunk.buffer<4x4xf32>
  // expected-error @below {{'chunk.transfer' op has phase(reduce_scatter), which only a two-shot all_reduce's transfers have}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (0, 0)] [4, 4]> on (r) -> ((r + 1) mod 2)
      to <@B[(r) -> (0, 0)] [4, 4]> on (r) -> (r) order(0) collective(all_gather) phase(reduce_scatter)
}

// -----

// A re-sharding all-to-all: the destination is the source with dim divided
// and to(t) multiplied by the world size.
chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x512xbf16>
  chunk.buffer @Qh : !chunk.buffer<256x256xbf16>
  // expected-error @below {{'chunk.all_to_all' op destination @Qh must have shape 512x256 (@Qs with dimension 1 divided and 0 multiplied by the world size)}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(1) to(0)
}

// -----

// The same on 3-D buffers ([tokens, heads, head_dim]): a destination whose
// head dimension differs covers another box.
chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x8x64xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x4x32xbf16>
  // expected-error @below {{'chunk.all_to_all' op destination @Qh must have shape 512x4x64 (@Qs with dimension 1 divided and 0 multiplied by the world size)}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(2) to(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x512xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x256xbf16>
  // expected-error @below {{'chunk.all_to_all' op cannot cut dimension 0 of @Qs (256) into 3 equal chunks}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(3) to(0)
}

// -----

// split(dim) cuts each rank's block along dim (a chunk per head), which
// must divide.
chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x512xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x256xbf16>
  // expected-error @below {{'chunk.all_to_all' op cannot cut each rank's block along dimension 1 of @Qs (256) into 3 equal chunks}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(3) to(0) split(1)
}

// -----

// split(d) picks the dimension a re-shard's chunks cut: dim or to(t).
chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x8x64xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x4x64xbf16>
  // expected-error @below {{'chunk.all_to_all' op split(2) chooses the dimension a re-shard's chunks cut, dim(1) or to(t)}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(2) to(0) split(2)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @X : !chunk.buffer<1024x64xf32>
  chunk.buffer @Y : !chunk.buffer<1024x64xf32>
  // expected-error @below {{'chunk.all_to_all' op split(1) chooses the dimension a re-shard's chunks cut, dim(0) or to(t), and this all-to-all has no to(t) != dim}}
  chunk.all_to_all @X into @Y dim(0) chunks(1) split(1)
}

// -----

// Of a produced buffer, chunks cut each rank's block along dim.
chunk.plan @p world_size(2) {
  chunk.buffer @C : !chunk.buffer<512x1024xbf16>
  chunk.buffer @Y : !chunk.buffer<1024x512xbf16>
  chunk.produce @tiles @C dim(1) tile(128)
  // expected-error @below {{'chunk.all_to_all' op cannot cut each rank's block along dimension 1 of @C (512) into 3 equal chunks}}
  chunk.all_to_all @C into @Y dim(1) chunks(3) to(0)
}

// -----

chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x512xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x256xbf16>
  // expected-error @below {{'chunk.all_to_all' op to(2) is out of range for @Qs of rank 2}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(1) to(2)
}

// -----

// Columns that do not divide among the ranks: 195 into 2.
chunk.plan @p world_size(2) {
  chunk.buffer @Qs : !chunk.buffer<256x195xbf16>
  chunk.buffer @Qh : !chunk.buffer<512x97xbf16>
  // expected-error @below {{'chunk.all_to_all' op cannot split dimension 1 of @Qs (195) into 2 equal blocks}}
  chunk.all_to_all @Qs into @Qh dim(1) chunks(1) to(0)
}
