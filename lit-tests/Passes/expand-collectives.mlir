// chunk-expand-collectives: all_gather and all_to_all become explicit
// transfers: the rank's own chunks first (local), then each peer's block in
// rank-rotated order, chunk by chunk. The expanded plans verify (coverage of
// every rank's buffer, exactly once), for W = 2, 4 and 8.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives)' | FileCheck %s

// CHECK-LABEL: chunk.plan @ag2 world_size(2)
// CHECK-NOT:   chunk.all_gather
// CHECK:       chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) {group = "all_gather_A"}
// CHECK-NEXT:  chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> {{.*}} order(1)
// CHECK-NEXT:  chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) {group = "all_gather_A"}
// CHECK-NEXT:  chunk.transfer @A_p1_c1 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> {{.*}} order(3)
// CHECK-NEXT:  chunk.consume @A dim(0) tile(128)
chunk.plan @ag2 world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(2) backend(tma)
  chunk.consume @A dim(0) tile(128)
}

// -----

// Four ranks, one chunk each: peers r+1, r+2, r+3.
// CHECK-LABEL: chunk.plan @ag4 world_size(4)
// CHECK:       chunk.transfer @A_p0_c0 local
// CHECK:       chunk.transfer @A_p1_c0 pull copy_engine {{.*}} on (d0) -> ((d0 + 1) mod 4) {{.*}} order(1)
// CHECK:       chunk.transfer @A_p2_c0 pull copy_engine {{.*}} on (d0) -> ((d0 + 2) mod 4) {{.*}} order(2)
// CHECK:       chunk.transfer @A_p3_c0 pull copy_engine {{.*}} on (d0) -> ((d0 + 3) mod 4) {{.*}} order(3)
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
// CHECK:       chunk.transfer @B_p1_c0 pull copy_engine from <@B[(d0) -> (0, ((d0 + 1) mod 2) * 32)] [64, 32]>
chunk.plan @cols world_size(2) {
  chunk.buffer @B : !chunk.buffer<64x64xf32>
  chunk.all_gather @B dim(1) chunks(1)
}

// -----

// all_to_all: block r of the peer's X lands in block `peer` of Y.
// CHECK-LABEL: chunk.plan @a2a world_size(2)
// CHECK:       chunk.transfer @Y_p0_c0 local copy_engine from <@X[(d0) -> (d0 * 32, 0)] [32, 16]> on (d0) -> (d0) to <@Y[(d0) -> (d0 * 32, 0)] [32, 16]>
// CHECK:       chunk.transfer @Y_p1_c0 pull ldst from <@X[(d0) -> (d0 * 32, 0)] [32, 16]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (((d0 + 1) mod 2) * 32, 0)] [32, 16]> on (d0) -> (d0) order(1) {group = "all_to_all_Y"}
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

chunk.plan @ring world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16>
  // expected-error @below {{chunk-expand-collectives: algorithm 'ring' is not supported yet; use 'direct'}}
  chunk.all_gather @A dim(0) chunks(1) algorithm(ring)
}

// -----

chunk.plan @rs world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x64xf32>
  chunk.buffer @C : !chunk.buffer<512x64xf32>
  // expected-error @below {{chunk-expand-collectives: chunk.reduce_scatter is not supported yet; write its transfers explicitly}}
  chunk.reduce_scatter @P into @C dim(0) chunks(1)
}
