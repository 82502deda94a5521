// chunk-select-chunk-size: chunks(auto) gets a count from the cost model,
// among the counts whose chunks hold whole consumer tiles, and a remark
// shows every prediction. (select-chunk-size-forced.mlir: the option.)
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-select-chunk-size)' | FileCheck %s

// A small decode-size gather: every extra chunk costs more sync than it
// hides, so one chunk per rank.
// CHECK-LABEL: chunk.plan @small
// CHECK:       chunk.all_gather @A dim(0) chunks(1)
chunk.plan @small world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x1024xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<1024x1024xbf16> bind(2)
  // expected-remark @below {{chunks(auto) -> chunks(1) for @A; predicted fused time per count: 1: 60.3 us, 2: 74.5 us, 4: 104.2 us}}
  chunk.all_gather @A dim(0) chunks(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

// Explicit counts are left alone.
// CHECK-LABEL: chunk.plan @explicit
// CHECK:       chunk.all_gather @A dim(0) chunks(8)
chunk.plan @explicit world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x1024xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(8)
}

// -----

// A block of 128 rows of 128-row tiles can only be one chunk.
// CHECK-LABEL: chunk.plan @one_tile
// CHECK:       chunk.all_gather @A dim(0) chunks(1)
chunk.plan @one_tile world_size(2) {
  chunk.buffer @A : !chunk.buffer<256x64xbf16> bind(0)
  // expected-remark @below {{chunks(auto) -> chunks(1) for @A}}
  chunk.all_gather @A dim(0) chunks(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

// Compute-bound: every count hides the transfer, and each chunk costs a
// little; one chunk.
// CHECK-LABEL: chunk.plan @big
// CHECK:       chunk.all_gather @A dim(0) chunks(1)
chunk.plan @big world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x8192xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<8192x14336xbf16> bind(2)
  // expected-remark @below {{chunks(auto) -> chunks(1) for @A; predicted fused time per count: 1: 2607.5 us, 2: 2609.5 us, 4: 2613.5 us, 8: 2621.5 us, 16: 2637.5 us}}
  chunk.all_gather @A dim(0) chunks(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

// Transfer-bound (N = 1024): two chunks let peer tiles start earlier.
// CHECK-LABEL: chunk.plan @thin
// CHECK:       chunk.all_gather @A dim(0) chunks(2)
chunk.plan @thin world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x8192xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<8192x1024xbf16> bind(2)
  // expected-remark @below {{chunks(auto) -> chunks(2) for @A}}
  chunk.all_gather @A dim(0) chunks(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

// A reduce-scatter of a produced partial: the finest count whose chunks
// hold 8 whole tiles (here 4096-row blocks of 128-row tiles: 4 chunks of
// 1024 rows)...
// CHECK-LABEL: chunk.plan @rs
// CHECK:       chunk.reduce_scatter @P into @C dim(0) chunks(4)
chunk.plan @rs world_size(2) {
  chunk.buffer @P : !chunk.buffer<8192x64xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<4096x64xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{chunks(auto) -> chunks(4) for @P: the finest count whose chunks hold at least 8 whole 128-row tiles (one swizzle group)}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(ldst)
}

// -----

// ...or one chunk per rank when a block holds fewer.
// CHECK-LABEL: chunk.plan @rs_small
// CHECK:       chunk.reduce_scatter @P into @C dim(0) chunks(1)
chunk.plan @rs_small world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<512x64xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{chunks(auto) -> chunks(1) for @P}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(ldst)
}

// -----

// No count splits 192-row blocks into 128-row tiles: the plan verifier
// refuses such tiles before any pass runs.
chunk.plan @rs_odd world_size(2) {
  chunk.buffer @P : !chunk.buffer<384x64xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<192x64xbf16>
  // expected-error @below {{'chunk.produce' op tiles of 128 along dimension 0 of @P do not fit its per-rank blocks of 192 (384 / world_size 2)}}
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-note @below {{the blocks are cut here}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(ldst)
}

// -----

// All-reduce: two-shot as a reduce-scatter; one-shot the finest count.
// CHECK-LABEL: chunk.plan @ar2
// CHECK:       chunk.all_reduce @P into @C dim(0) chunks(4)
chunk.plan @ar2 world_size(2) {
  chunk.buffer @P : !chunk.buffer<8192x64xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<8192x64xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{chunks(auto) -> chunks(4) for @P: the finest count whose chunks hold at least 8 whole 128-row tiles (one swizzle group)}}
  chunk.all_reduce @P into @C dim(0) chunks(auto) backend(ldst)
}

// -----

// CHECK-LABEL: chunk.plan @ar1
// CHECK:       chunk.all_reduce @P into @C dim(0) chunks(4) backend(ldst) algorithm(one_shot)
chunk.plan @ar1 world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<1024x64xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{chunks(auto) -> chunks(4) for @P: the finest count whose chunks hold at least 1 whole 128-row tiles}}
  chunk.all_reduce @P into @C dim(0) chunks(auto) backend(ldst) algorithm(one_shot)
}

// -----

// A buffer read per source (a gathered operand; its tiles wait inside a
// loop over ranks) gets its count from the kernel's tile order
// (select-chunk-size-sources.test): without the kernel, auto is refused.
chunk.plan @per_source world_size(2) {
  chunk.buffer @Bg : !chunk.buffer<2048x8192xbf16> bind(1)
  // expected-error @below {{chunk-select-chunk-size: no chunk count for @Bg (the module has no kernel whose tile order to follow); give chunks(n)}}
  chunk.all_gather @Bg dim(0) chunks(auto) split(1)
  chunk.consume @Bg dim(1) tile(256) index("pid_n") source("src")
}

// -----

// K and V walked by an attention kernel's loop (loop("start_n")): the GEMM
// model does not apply; one chunk per rank, with the reason, for both
// buffers the loop reads (they share its split).
// CHECK-LABEL: chunk.plan @attention
// CHECK:       chunk.all_gather @K dim(0) chunks(1)
// CHECK:       chunk.all_gather @V dim(0) chunks(1)
chunk.plan @attention world_size(4) {
  chunk.buffer @K : !chunk.buffer<16384x1024xbf16> bind(1)
  chunk.buffer @V : !chunk.buffer<16384x1024xbf16> bind(2)
  // expected-remark @below {{chunks(auto) -> chunks(1) for @K: the kernel's loop over 'start_n' walks it, and each chunk is a loop of its own (one chunk per rank cost the least on an H200, benches/attention/README.md)}}
  chunk.all_gather @K dim(0) chunks(auto)
  // expected-remark @below {{chunks(auto) -> chunks(1) for @V: the kernel's loop over 'start_n' walks it}}
  chunk.all_gather @V dim(0) chunks(auto)
  chunk.consume @K dim(0) tile(64) loop("start_n")
  chunk.consume @V dim(0) tile(64)
}

// -----

// Zigzag blocks: one chunk per half-block, two per rank.
// CHECK-LABEL: chunk.plan @attention_zigzag
// CHECK:       chunk.all_gather @K dim(0) chunks(2) blocks(zigzag)
chunk.plan @attention_zigzag world_size(4) {
  chunk.buffer @K : !chunk.buffer<16384x1024xbf16> bind(1)
  // expected-remark @below {{chunks(auto) -> chunks(2) for @K (one per zigzag half-block): the kernel's loop over 'start_n' walks it}}
  chunk.all_gather @K dim(0) chunks(auto) blocks(zigzag)
  chunk.consume @K dim(0) tile(64) loop("start_n")
}

// -----

// Without a loop that walks it, a zigzag gather has no model to size it.
chunk.plan @zigzag_tiles world_size(2) kernel(@matmul_kernel) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  // expected-error @below {{chunk-select-chunk-size: chunks(auto) for a blocks(zigzag) all_gather needs a consumer whose kernel loop walks it (loop(...)); the GEMM cost model does not apply}}
  chunk.all_gather @A dim(0) chunks(auto) blocks(zigzag)
  chunk.consume @A dim(0) tile(128) index("pid_m")
}
