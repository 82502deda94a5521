// Sizes, offsets and counts that the passes compute across transfers,
// chunks, ranks or options are checked arithmetic: where one leaves 64 bits,
// or the 32 bits of the fused kernel's constants and indices, the pass
// refuses the plan at the op that asks for it, instead of writing a wrapped
// value (release builds) or panicking (debug builds). Each case below was
// accepted with a wrapped value, or panicked, before these checks; what one
// buffer bounds needs none (the dialect refuses a buffer whose bytes leave
// 64 bits and a region outside its buffer: Dialect/Chunk/overflow.mlir).
//
// RUN: split-file %s %t
// RUN: synco-opt %t/lower-transfers.mlir --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers)'
// RUN: cat %inputs/matmul_sources.generic.mlir %t/select-chunk-size.mlir \
// RUN:   | synco-opt --verify-diagnostics --pass-pipeline='builtin.module(chunk-select-chunk-size)'
// RUN: synco-opt %t/select-backend.mlir --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-select-backend{copy-engine-min-bytes=4611686018427387904})'
// RUN: synco-opt %t/fuse-reductions.mlir --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions)'
// RUN: synco-opt %t/expand-collectives.mlir --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives)'
// RUN: synco-opt %t/chunk-to-triton.mlir --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-to-triton)'
// RUN: synco-opt %t/rank-maps.mlir --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers)'
//
// The option copy-programs above 2147483647 is refused where the pipeline
// is parsed (its declared range, Pipeline/synco-fuse.test); the pass body
// refuses it too when called directly (lower_transfers' unit tests).

//--- lower-transfers.mlir
// A reduction's flags: 2^61 one-row chunks per rank of a partial the copy
// engine moves, 3 + W = 5 flags each: 5 * 2^62 flags, which wrapped to
// num_flags = 4611686018427387904 in the host schedule (plan/flags.rs).
chunk.plan @p world_size(2) {
  chunk.buffer @P : !chunk.buffer<4611686018427387904x1xi8>
  chunk.buffer @C : !chunk.buffer<2305843009213693952x1xi8>
  // expected-error @below {{the flags of @P, 2305843009213693952 chunks per rank x 2 ranks x 5 flags each from flag 0, end beyond the 2147483647 flags that the fused kernel's 32-bit flag indices reach}}
  chunk.produce @tiles @P dim(0) tile(1)
  chunk.transfer @C_p1_c0 pull copy_engine from <@P[(d0) -> (d0 * 2305843009213693952, 0)] [1, 1]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [1, 1]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused}
}

// -----

// The copy programs' counters: the kernel's 2147483642 flags fit 32 bits,
// but the copy programs count @A's chunks on counters after them (flag f's
// at 2147483642 + f): chunks 6 and 7 wrapped around in the kernel's i32
// arithmetic, while the manifest said 4294967284 flags.
module {
  // expected-error @below {{chunk-lower-transfers: the copy programs add a counter per flag after the kernel's 2147483642 flags, twice as many in all: more than the 2147483647 flags that the fused kernel's 32-bit flag indices reach}}
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
    chunk.buffer @P : !chunk.buffer<2147483634x1xi8>
    chunk.buffer @C : !chunk.buffer<1073741817x1xi8>
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [64, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256, 0)] [64, 64]> on (d0) -> (d0) order(0)
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 256 + 64, 0)] [64, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256 + 64, 0)] [64, 64]> on (d0) -> (d0) order(1)
    chunk.transfer @A_p0_c2 local copy_engine from <@A[(d0) -> (d0 * 256 + 128, 0)] [64, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256 + 128, 0)] [64, 64]> on (d0) -> (d0) order(2)
    chunk.transfer @A_p0_c3 local copy_engine from <@A[(d0) -> (d0 * 256 + 192, 0)] [64, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256 + 192, 0)] [64, 64]> on (d0) -> (d0) order(3)
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [64, 64]> on (d0) -> (d0) order(4)
    chunk.transfer @A_p1_c1 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256 + 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256 + 64, 0)] [64, 64]> on (d0) -> (d0) order(5)
    chunk.transfer @A_p1_c2 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256 + 128, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256 + 128, 0)] [64, 64]> on (d0) -> (d0) order(6)
    chunk.transfer @A_p1_c3 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256 + 192, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256 + 192, 0)] [64, 64]> on (d0) -> (d0) order(7)
    chunk.consume @A dim(0) tile(64)
    // A reduction fused before (chunk-fuse-reductions), one-row chunks.
    chunk.produce @tiles @P dim(0) tile(1)
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 1073741817, 0)] [1, 1]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [1, 1]> on (d0) -> (d0) order(8) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

//--- select-chunk-size.mlir
// The tiles per source of the other operands read per source: 4 of @Bg and
// 2^32 of each of two reads of @X, 2^66 in all, wrapped to 0, which every
// swizzle group holds: @Bg's count was picked for "0 tiles in waves of 132
// programs" (and a debug build panicked).
chunk.plan @p world_size(2) {
  chunk.buffer @A : !chunk.buffer<512x64xbf16>
  chunk.buffer @Ag : !chunk.buffer<512x64xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<128x512xbf16> bind(1)
  chunk.buffer @X : !chunk.buffer<8589934592x1xi8>
  // expected-error @below {{chunk-select-chunk-size: the tiles per source of the operands read beside @Ag: 4 x 4294967296 x 4294967296 overflows 64 bits}}
  chunk.all_to_all @A into @Ag dim(0) chunks(auto)
  chunk.all_gather @Bg dim(0) chunks(auto) split(1)
  chunk.all_gather @X dim(0) chunks(1)
  chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile(128) index("pid_n") source("src")
  chunk.consume @X dim(0) tile(1) source("src")
  chunk.consume @X dim(0) tile(1) source("src")
}

//--- select-backend.mlir
// A two-shot all-reduce's threshold is twice copy-engine-min-bytes: twice
// 2^62 wrapped to -2^63, and 4 MiB of partial per peer went to the copy
// engine as "more than -9223372036854775808" (a debug build panicked).
chunk.plan @two_shot world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<1024x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-error @below {{chunk-select-backend: a two-shot all-reduce's threshold, twice copy-engine-min-bytes: 2 x 4611686018427387904 overflows 64 bits}}
  chunk.all_reduce @P into @C dim(0) chunks(auto) backend(auto) algorithm(two_shot)
}

//--- fuse-reductions.mlir
// The reduction's counters after two consumed buffers' 2^30 - 2 and 2^30
// flags: from flag 2147483646, past the kernel's 32-bit flag indices (the
// kernel computed them in i32, wrapping at the third; the remark said
// counters 2147483646..2147483650). Each buffer is within the 32-bit
// element offsets that chunk-bind-kernel allows.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @X : !chunk.buffer<1073741822x1xi8>
    chunk.buffer @Y : !chunk.buffer<1073741824x1xi8>
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
    chunk.transfer @X_p1 pull copy_engine from <@X[(d0) -> (((d0 + 1) mod 2) * 536870911, 0)] [1, 1]> on (d0) -> ((d0 + 1) mod 2) to <@X[(d0) -> (((d0 + 1) mod 2) * 536870911, 0)] [1, 1]> on (d0) -> (d0) order(0)
    chunk.consume @X dim(0) tile(1)
    chunk.transfer @Y_p1 pull copy_engine from <@Y[(d0) -> (((d0 + 1) mod 2) * 536870912, 0)] [1, 1]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (((d0 + 1) mod 2) * 536870912, 0)] [1, 1]> on (d0) -> (d0) order(0)
    chunk.consume @Y dim(0) tile(1)
    // expected-error @below {{the flags of @P, 2 chunks per rank x 2 ranks x 1 flags each from flag 2147483646, end beyond the 2147483647 flags that the fused kernel's 32-bit flag indices reach}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.transfer @C_p0_c0 local ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
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

//--- expand-collectives.mlir
// A one-shot all-reduce of 64 ranks stages 62 peers' partials: 62 x 64
// blocks of 2^52 rows wrapped to a negative count, and the staging
// buffer's type could not be built ("internal error in Synco"; a debug
// build panicked).
chunk.plan @p world_size(64) {
  chunk.buffer @P : !chunk.buffer<288230376151711744x1xi8>
  chunk.buffer @C : !chunk.buffer<288230376151711744x1xi8>
  chunk.produce @tiles @P dim(0) tile(1)
  // expected-error @below {{chunk-expand-collectives: the rows of the staging buffer of @P: 4503599627370496 x 64 x 62 overflows 64 bits}}
  chunk.all_reduce @P into @C dim(0) chunks(1) backend(ldst) algorithm(one_shot)
}

// -----

// 62 x 64 blocks of 2^50 rows fit 64 bits, their bytes (4 each) do not.
chunk.plan @p world_size(64) {
  chunk.buffer @P : !chunk.buffer<72057594037927936x1xf32>
  chunk.buffer @C : !chunk.buffer<72057594037927936x1xf32>
  chunk.produce @tiles @P dim(0) tile(1)
  // expected-error @below {{chunk-expand-collectives: the staging buffer @P_staging would hold 4467570830351532032x1 elements of f32: more bytes than a 64-bit size counts}}
  chunk.all_reduce @P into @C dim(0) chunks(1) backend(ldst) algorithm(one_shot)
}

//--- chunk-to-triton.mlir
// A wait for a count beyond 32 bits: its target, epoch * count, was an i32
// constant of the count wrapped to 0.
module {
  "tt.func"() <{function_type = (!tt.ptr<f32>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<f32>, %rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c1 = arith.constant 1 : i32
    // expected-error @below {{chunk-to-triton: count(4294967296) is beyond the 32-bit flags it waits on (at most 2147483647)}}
    chunk.wait %flags[%c1], %epoch count(4294967296) : !tt.ptr<i32>
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

//--- rank-maps.mlir
// A folded rank map: MLIR folds r * 2^62 * 4 into r * 0 as it builds the
// map, wrapping around, so the source rank was (r + 1) mod 2 on every rank
// and the copies were scheduled as if it were written so.
chunk.plan @folded world_size(2) {
  chunk.buffer @A : !chunk.buffer<512x64xbf16>
  // expected-error @below {{custom op 'chunk.transfer' affine map (r) -> ((r + 1) mod 2 + r * 4611686018427387904 * 4) overflows 64 bits as written (MLIR builds it as affine_map<(d0) -> ((d0 + 1) mod 2)>)}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 256, 0)] [256, 64]> on (r) -> ((r + 1) mod 2 + r * 4611686018427387904 * 4) to <@A[(r) -> (((r + 1) mod 2) * 256, 0)] [256, 64]> on (r) -> (r) order(0)
}

// -----

// The same map unfolded (r * 2^62 four times: MLIR keeps the sum), which
// the verifier reported on rank 1: now the same error.
chunk.plan @unfolded world_size(2) {
  chunk.buffer @A : !chunk.buffer<512x64xbf16>
  // expected-error @below {{custom op 'chunk.transfer' affine map (r) -> ((r + 1) mod 2 + r * 4611686018427387904 + r * 4611686018427387904 + r * 4611686018427387904 + r * 4611686018427387904) overflows 64 bits as written}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 256, 0)] [256, 64]> on (r) -> ((r + 1) mod 2 + r * 4611686018427387904 + r * 4611686018427387904 + r * 4611686018427387904 + r * 4611686018427387904) to <@A[(r) -> (((r + 1) mod 2) * 256, 0)] [256, 64]> on (r) -> (r) order(0)
}

// -----

// A region's offsets fold the same way: (x + 2^63 - 1) + 1 is built as
// x + (2^63 - 1 + 1), wrapped to x - 2^63.
chunk.plan @offsets world_size(2) {
  chunk.buffer @A : !chunk.buffer<512x64xbf16>
  // expected-error @below {{custom op 'chunk.transfer' affine map (r) -> (((r + 1) mod 2) * 256 + 9223372036854775807 + 1 - 9223372036854775807 - 1, 0) overflows 64 bits as written}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 256 + 9223372036854775807 + 1 - 9223372036854775807 - 1, 0)] [256, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (((r + 1) mod 2) * 256, 0)] [256, 64]> on (r) -> (r) order(0)
}
