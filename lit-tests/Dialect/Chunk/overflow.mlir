// Sizes and offsets are checked arithmetic: a buffer or region whose size
// does not fit a 64-bit count, or a region whose end wraps around, is
// refused where it is written, not passed on to overflow in a pass.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics | FileCheck %s

chunk.plan @bytes world_size(2) {
  // expected-error @below {{a symmetric buffer of 4611686018427387904x4 elements of 'f32' holds more bytes than a 64-bit size can count}}
  chunk.buffer @A : !chunk.buffer<4611686018427387904x4xf32>
}

// -----

// 2^62 elements of one byte still fit.
// CHECK: chunk.buffer @A : !chunk.buffer<4611686018427387904xi8>
chunk.plan @fits world_size(2) {
  chunk.buffer @A : !chunk.buffer<4611686018427387904xi8>
}

// -----

chunk.plan @region_elements world_size(2) {
  chunk.buffer @A : !chunk.buffer<8x8xf32>
  // expected-error @below {{region of 4294967296x4294967296 holds more elements than a 64-bit count can count}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (0, 0)] [4294967296, 4294967296]> on (r) -> (r) to <@A[(r) -> (0, 0)] [4294967296, 4294967296]> on (r) -> (r) order(0)
}

// -----

// A region at row 2^63 - 8 of a 1024-row buffer: offset + size wraps
// around; it is out of bounds, not inside.
chunk.plan @wraps world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16>
  // expected-error @below {{'chunk.transfer' op source region is out of bounds on rank 0: dimension 0 spans [9223372036854775800, 9223372036854775800 + 16) but @A has 1024}}
  chunk.transfer @t pull copy_engine from <@A[(r) -> (9223372036854775800, 0)] [16, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (0, 0)] [16, 64]> on (r) -> (r) order(0)
}
