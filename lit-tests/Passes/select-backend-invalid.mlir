// chunk-select-backend refuses what it cannot pick a backend for.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-select-backend)'

// The threshold counts bytes: a partial of an element type without a byte
// size is refused.
chunk.plan @bits world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xi1> bind(0)
  chunk.buffer @C : !chunk.buffer<512x64xi1>
  chunk.produce @tiles @P dim(0) tile(128)
  // expected-error @below {{chunk-select-backend: unsupported element type i1}}
  chunk.reduce_scatter @P into @C dim(0) chunks(auto) backend(auto)
}
