// chunk-select-chunk-size{chunks-per-rank=N}: an explicit count for every
// chunks(auto) collective, checked against the tile rule; a bad option
// value is an error.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-select-chunk-size{chunks-per-rank=2})' | FileCheck %s
// RUN: not synco-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(chunk-select-chunk-size{chunks-per-rank=two})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADVALUE
// RUN: not synco-opt %s --pass-pipeline='builtin.module(chunk-select-chunk-size{chunk-count=2})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADOPTION
// BADVALUE: for the --chunks-per-rank option: 'two' value invalid for long argument
// BADVALUE: failed to add `chunk-select-chunk-size` with options `chunks-per-rank=two`
// BADOPTION: no such option chunk-count

// CHECK-LABEL: chunk.plan @forced
// CHECK:       chunk.all_gather @A dim(0) chunks(2)
chunk.plan @forced world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x1024xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(auto)
  chunk.consume @A dim(0) tile(128)
}

// -----

chunk.plan @one_tile world_size(2) {
  chunk.buffer @A : !chunk.buffer<256x64xbf16> bind(0)
  // expected-error @below {{chunk-select-chunk-size: chunks-per-rank=2 does not split a block of 128 rows into chunks of whole 128-row tiles}}
  chunk.all_gather @A dim(0) chunks(auto)
  chunk.consume @A dim(0) tile(128)
}
