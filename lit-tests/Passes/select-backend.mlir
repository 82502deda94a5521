// chunk-select-backend: backend(auto) collectives get a backend. All-gather:
// the copy engine. A reduction of a tile-produced partial: the copy engine
// when a rank's partial of a peer's block is more than 4 MiB (8 MiB for a
// two-shot all-reduce, which moves partials and sums), else SM stores by
// the producing tiles; one-shot all-reduce: SM stores. Explicit backends
// are left alone.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-select-backend)' | FileCheck %s
// RUN: synco-opt %s --split-input-file --pass-pipeline='builtin.module(chunk-select-backend)' 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=NOAUTO
// NOAUTO-NOT: backend(auto)
// A lower threshold moves the 4 MiB reduce-scatter to the copy engine.
// RUN: synco-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(chunk-select-backend{copy-engine-min-bytes=1048576})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=LOW
// LOW: 4194304 bytes of partial per peer, more than 1048576
// RUN: not synco-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(chunk-select-backend{copy-engine-min-bytes=lots})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: for the --copy-engine-min-bytes option: 'lots' value invalid for long argument
// BAD: failed to add `chunk-select-backend` with options `copy-engine-min-bytes=lots`
// Refusals: select-backend-invalid.mlir. (That collectives cannot expand
// before their backend is chosen is expand-collectives.mlir's.)

// CHECK-LABEL: chunk.plan @ag
// The printer leaves out the default backend, copy_engine.
// CHECK:       chunk.all_gather @A dim(0) chunks(2){{$}}
chunk.plan @ag world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x4096xbf16> bind(0)
  // expected-remark @below {{backend(auto) -> backend(copy_engine): the chunks move while every SM computes}}
  chunk.all_gather @A dim(0) chunks(2) backend(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

// 512 rows x 4096 x 2 bytes = 4 MiB per peer: SM stores.
// CHECK-LABEL: chunk.plan @rs_small
// CHECK:       chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(ldst)
chunk.plan @rs_small world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<512x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{backend(auto) -> backend(ldst): 4194304 bytes of partial per peer, at most 4194304: the producing tiles store them (a copy's fixed cost would not be hidden)}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(auto)
}

// -----

// 8 MiB per peer: the copy engine.
// CHECK-LABEL: chunk.plan @rs_large
// CHECK:       chunk.reduce_scatter @P into @C dim(0) chunks(auto){{$}}
chunk.plan @rs_large world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x8192xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<512x8192xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{backend(auto) -> backend(copy_engine): 8388608 bytes of partial per peer, more than 4194304: the side stream moves finished chunks while the SMs compute}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(auto)
}

// -----

// On 4 ranks a peer's block is a quarter: 4096 x 4096 x 2 / 4 = 8 MiB.
// CHECK-LABEL: chunk.plan @rs_w4
// CHECK:       chunk.reduce_scatter @P into @C dim(0) chunks(auto){{$}}
chunk.plan @rs_w4 world_size(4) {
  chunk.buffer @P : !chunk.buffer<4096x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<1024x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{backend(auto) -> backend(copy_engine): 8388608 bytes of partial per peer}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(auto)
}

// -----

// Two-shot all-reduce: twice the threshold, so 8 MiB stays on SMs ...
// CHECK-LABEL: chunk.plan @ar2_small
// CHECK:       chunk.all_reduce @P into @C dim(0) chunks(auto) backend(ldst){{$}}
chunk.plan @ar2_small world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x8192xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<1024x8192xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{backend(auto) -> backend(ldst): 8388608 bytes of partial per peer, at most 8388608}}
  chunk.all_reduce @P into @C dim(0) chunks(auto) backend(auto) algorithm(two_shot)
}

// -----

// ... and 16 MiB goes to the copy engine.
// CHECK-LABEL: chunk.plan @ar2_large
// CHECK:       chunk.all_reduce @P into @C dim(0) chunks(auto){{$}}
chunk.plan @ar2_large world_size(2) {
  chunk.buffer @P : !chunk.buffer<4096x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<4096x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{backend(auto) -> backend(copy_engine): 16777216 bytes of partial per peer, more than 8388608}}
  chunk.all_reduce @P into @C dim(0) chunks(auto) backend(auto) algorithm(two_shot)
}

// -----

// CHECK-LABEL: chunk.plan @ar1
// CHECK:       backend(ldst) algorithm(one_shot)
chunk.plan @ar1 world_size(2) {
  chunk.buffer @P : !chunk.buffer<4096x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<4096x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-remark @below {{backend(auto) -> backend(ldst): a one-shot all-reduce fuses with SM stores only}}
  chunk.all_reduce @P into @C dim(0) chunks(1) backend(auto) algorithm(one_shot)
}

// -----

// An explicit backend is the user's: no remark, no change.
// CHECK-LABEL: chunk.plan @explicit
// CHECK:       chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(ldst)
chunk.plan @explicit world_size(2) {
  chunk.buffer @P : !chunk.buffer<4096x8192xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<2048x8192xbf16>
  chunk.produce @tiles @P dim(0) tile(128)
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(ldst)
}
