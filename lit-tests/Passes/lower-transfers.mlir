// chunk-lower-transfers: copy-engine transfers become the host schedule,
// a JSON module attribute (synco compile moves it into the launch
// manifest): rank r's copies in order, with element offsets, 2D shapes and
// the flag each sets. Local chunks already in place are dropped; so are the
// transfers and tile maps (the plan keeps its buffers).
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives,chunk-lower-transfers)' | FileCheck %s

// The copy engine pushes gathered chunks: rank 0 drives the copies of its
// rows [0, 256) and [256, 512) of A into rank 1 (element offsets 0 and
// 256*64), setting rank 1's flags 0 and 1; rank 1 pushes rows [512, 1024)
// into rank 0, setting flags 2 and 3.
// CHECK:      module attributes {synco.host_schedule = "{
// CHECK-SAME: \22buffers\22:[{\22arg\22:0,\22element\22:\22bf16\22,\22element_bytes\22:2,\22name\22:\22A\22,\22shape\22:[1024,64],\22staging\22:false,\22trace\22:false}]
// CHECK-SAME: \22chunks\22:[{\22buffer\22:\22A\22,\22chunks_per_rank\22:2,\22dim\22:0,\22flag_base\22:0,\22kind\22:\22arrival\22,\22rows_per_chunk\22:256}]
// CHECK-SAME: \22copies\22:[
// CHECK-SAME: [{\22before_kernel\22:false,\22dst_buffer\22:\22A\22,\22dst_offset\22:0,\22dst_pitch\22:16384,\22dst_rank\22:1,\22flag\22:0,\22name\22:\22A_p1_c0\22,\22order\22:2,\22row_elems\22:16384,\22rows\22:1,\22src_buffer\22:\22A\22,\22src_offset\22:0,\22src_pitch\22:16384,\22src_rank\22:0}
// CHECK-SAME: {{.*}}\22flag\22:1,\22name\22:\22A_p1_c1\22,\22order\22:3
// CHECK-SAME: [{\22before_kernel\22:false,\22dst_buffer\22:\22A\22,\22dst_offset\22:32768,{{.*}}\22dst_rank\22:0,\22flag\22:2,{{.*}}\22src_rank\22:1}
// CHECK-SAME: \22num_flags\22:4,\22plan\22:\22p\22,\22reduction_copies\22:[],\22world_size\22:2}"}
// CHECK:      chunk.plan @p world_size(2) {
// CHECK-NEXT:   chunk.buffer @A
// CHECK-NEXT: }
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    chunk.consume @A dim(0) tile(128)
  }
}

// -----

// Columns: 2D copies with a row pitch.
// CHECK: \22dst_offset\22:32,\22dst_pitch\22:64,\22dst_rank\22:0,\22flag\22:null,{{.*}}\22row_elems\22:32,\22rows\22:64,{{.*}}\22src_pitch\22:64,\22src_rank\22:1
module {
  chunk.plan @cols world_size(2) {
    chunk.buffer @B : !chunk.buffer<64x64xf32>
    chunk.all_gather @B dim(1) chunks(1)
  }
}

// -----

module {
  chunk.plan @sm world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(1) backend(tma)
  }
}
// expected-error@-3 {{chunk-lower-transfers: backend 'tma' is not implemented yet; use copy_engine or ldst}}

// -----

// Reductions are lowered only by chunk-fuse-reductions (into the kernel).
module {
  chunk.plan @rs world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xf32>
    chunk.buffer @C : !chunk.buffer<512x64xf32>
    chunk.reduce_scatter @P into @C dim(0) chunks(1)
  }
}
// expected-error@-3 {{chunk-lower-transfers: reducing transfers and transfers that wait for others are lowered only by chunk-fuse-reductions (reductions) or chunk-fuse-gathers (an all-gather of what the kernel's tiles produce), which must run first}}
// -----

// Written out by hand: a chunk of rank 1's block in two transfers of
// different sizes. Tiles wait for one flag per 512-row chunk (the size of
// the first transfer); the first 128 rows alone would set it.
module {
  chunk.plan @uneven world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @own local copy_engine from <@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r) to <@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r) order(0)
    // expected-error@+1 {{chunk-lower-transfers: tiles wait for @A in chunks of 512 along dimension 0 (the size of @own, its first transfer), one flag each, but on rank 0 this transfer writes 128 from 512: a transfer into a consumed buffer must write exactly one chunk, or the chunk's flag is set before all of it arrives}}
    chunk.transfer @head pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [128, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [128, 64]> on (r) -> (r) order(1)
    chunk.transfer @rest pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 512 + 128, 0)] [384, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (((r + 1) mod 2) * 512 + 128, 0)] [384, 64]> on (r) -> (r) order(2)
    chunk.consume @A dim(0) tile(128)
  }
}

// -----

// A transfer of two chunks: the second chunk's flag would never be set.
module {
  chunk.plan @wide world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @own0 local copy_engine from <@A[(r) -> (r * 512, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 512, 0)] [256, 64]> on (r) -> (r) order(0)
    chunk.transfer @own1 local copy_engine from <@A[(r) -> (r * 512 + 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 512 + 256, 0)] [256, 64]> on (r) -> (r) order(1)
    // expected-error@+1 {{on rank 0 this transfer writes 512 from 512}}
    chunk.transfer @peer pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r) order(2)
    chunk.consume @A dim(0) tile(128)
  }
}

// -----

// Chunk 3 (rank 1's second) is never written on rank 0, nor chunk 1 on
// rank 1: their tiles would wait forever.
module {
  chunk.plan @missing world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @own0 local copy_engine from <@A[(r) -> (r * 512, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 512, 0)] [256, 64]> on (r) -> (r) order(0)
    chunk.transfer @own1 local copy_engine from <@A[(r) -> (r * 512 + 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 512 + 256, 0)] [256, 64]> on (r) -> (r) order(1)
    chunk.transfer @peer0 pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [256, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [256, 64]> on (r) -> (r) order(2)
    // expected-error@+1 {{chunk-lower-transfers: on rank 0, no transfer writes chunk 3 of @A (in rank 1's block), but tiles wait for it: the launch would never finish}}
    chunk.consume @A dim(0) tile(128)
  }
}

// -----

// The same chunk from two transfers (a push and a pull): its flag would
// be set when the first lands.
module {
  chunk.plan @twice world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @own local copy_engine from <@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r) to <@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r) order(0)
    // expected-note@+1 {{the other transfer}}
    chunk.transfer @pulled pull copy_engine from <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2) to <@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r) order(1)
    // expected-error@+1 {{chunk-lower-transfers: on rank 1, this transfer and another write chunk 0 of @A: its flag would be set when the first lands}}
    chunk.transfer @pushed push copy_engine from <@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r) to <@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2) order(2)
    chunk.consume @A dim(0) tile(128)
  }
}

// -----

// Written out by hand, as a ring: rank r pulls from r - 1, then r - 2, ...
// each copy sets the flag of the chunk it writes on its destination.
// CHECK: \22dst_rank\22:0,\22flag\22:3,\22name\22:\22left\22,{{[^}]*}}\22src_rank\22:3}
// CHECK-SAME: \22dst_rank\22:0,\22flag\22:2,\22name\22:\22across\22,{{[^}]*}}\22src_rank\22:2}
// CHECK-SAME: \22dst_rank\22:0,\22flag\22:1,\22name\22:\22right\22,{{[^}]*}}\22src_rank\22:1}
module {
  chunk.plan @ring world_size(4) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @own local copy_engine from <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) to <@A[(r) -> (r * 256, 0)] [256, 64]> on (r) -> (r) order(0)
    chunk.transfer @left pull copy_engine from <@A[(r) -> (((r - 1) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r - 1) mod 4) to <@A[(r) -> (((r - 1) mod 4) * 256, 0)] [256, 64]> on (r) -> (r) order(1)
    chunk.transfer @across pull copy_engine from <@A[(r) -> (((r - 2) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r - 2) mod 4) to <@A[(r) -> (((r - 2) mod 4) * 256, 0)] [256, 64]> on (r) -> (r) order(2)
    chunk.transfer @right pull copy_engine from <@A[(r) -> (((r - 3) mod 4) * 256, 0)] [256, 64]> on (r) -> ((r - 3) mod 4) to <@A[(r) -> (((r - 3) mod 4) * 256, 0)] [256, 64]> on (r) -> (r) order(3)
    chunk.consume @A dim(0) tile(128)
  }
}
