// chunk-lower-transfers: copy-engine transfers become the host schedule,
// a module attribute holding the launch manifest's typed schedule (synco
// compile moves it into the manifest): rank r's copies in order, with element offsets, 2D shapes and
// the flag each sets. Local chunks already in place are dropped; so are the
// transfers and tile maps (the plan keeps its buffers).
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers)' | FileCheck %s
//
// The collectives are expanded (the state chunk-expand-collectives leaves)
// or written out as transfers by hand.

// The copy engine pushes gathered chunks: rank 0 drives the copies of its
// rows [0, 256) and [256, 512) of A into rank 1 (element offsets 0 and
// 256*64), setting rank 1's flags 0 and 1; rank 1 pushes rows [512, 1024)
// into rank 0, setting flags 2 and 3.
// CHECK:      module attributes {chunk.host_schedule = {
// CHECK-SAME: buffers = [{arg = 0 : i64, element = "bf16", element_bytes = 2 : i64, name = "A", shape = array<i64: 1024, 64>, staging = false, trace = false}]
// CHECK-SAME: chunks = [{buffer = "A", chunks_per_rank = 2 : i64, dim = 0 : i64, flag_base = 0 : i64, kind = "arrival", rows_per_chunk = 256 : i64}]
// CHECK-SAME: copies = [
// CHECK-SAME: [{before_kernel = false, dst_buffer = "A", dst_offset = 0 : i64, dst_pitch = 16384 : i64, dst_rank = 1 : i64, flag = 0 : i64, name = "A_p1_c0", order = 2 : i64, row_elems = 16384 : i64, rows = 1 : i64, src_buffer = "A", src_offset = 0 : i64, src_pitch = 16384 : i64, src_rank = 0 : i64}
// CHECK-SAME: {{.*}}flag = 1 : i64, name = "A_p1_c1", order = 3 : i64
// CHECK-SAME: [{before_kernel = false, dst_buffer = "A", dst_offset = 32768 : i64,{{.*}}dst_rank = 0 : i64, flag = 2 : i64,{{.*}}src_rank = 1 : i64}
// CHECK-SAME: num_flags = 4 : i64, plan = "p", reduction_copies = [], world_size = 2 : i64}}
// CHECK:      chunk.plan @p world_size(2) {
// CHECK-NEXT:   chunk.buffer @A
// CHECK-NEXT: }
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(2), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
}

// -----

// Columns: 2D copies with a row pitch.
// CHECK: dst_offset = 32 : i64, dst_pitch = 64 : i64, dst_rank = 0 : i64, name = "B_p1_c0",{{.*}}row_elems = 32 : i64, rows = 64 : i64,{{.*}}src_pitch = 64 : i64, src_rank = 1 : i64
module {
  chunk.plan @cols world_size(2) {
    chunk.buffer @B : !chunk.buffer<64x64xf32>
    // chunk.all_gather @B dim(1) chunks(1), expanded:
    chunk.transfer @B_p0_c0 local copy_engine from <@B[(d0) -> (0, d0 * 32)] [64, 32]> on (d0) -> (d0) to <@B[(d0) -> (0, d0 * 32)] [64, 32]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_B"}
    chunk.transfer @B_p1_c0 push copy_engine from <@B[(d0) -> (0, ((d0 + 1) mod 2) * 32)] [64, 32]> on (d0) -> ((d0 + 1) mod 2) to <@B[(d0) -> (0, ((d0 + 1) mod 2) * 32)] [64, 32]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_B"}
  }
}

// -----

module {
  chunk.plan @sm world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    // chunk.all_gather @A dim(0) chunks(1) backend(nvshmem), expanded:
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    // expected-error @below {{chunk-lower-transfers: backend 'nvshmem' is not implemented yet; use copy_engine, ldst or tma}}
    chunk.transfer @A_p1_c0 pull nvshmem from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [512, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
  }
}

// -----

// Reductions are lowered only by chunk-fuse-reductions (into the kernel).
module {
  chunk.plan @rs world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xf32>
    chunk.buffer @C : !chunk.buffer<512x64xf32>
    chunk.buffer @P_staging : !chunk.buffer<512x64xf32> {chunk.staging}
    // chunk.reduce_scatter @P into @C dim(0) chunks(1), expanded:
    // expected-error @below {{chunk-lower-transfers: reducing transfers and transfers that wait for kernel tiles are lowered only by chunk-fuse-reductions (reductions) or chunk-fuse-gathers (an all-gather of what the kernel's tiles produce), which must run first}}
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(0) reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull copy_engine from <@P[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) order(1) reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
}

// -----

// An all-gather of what the kernel's tiles produce, after
// chunk-expand-collectives and chunk-bind-kernel: the peer's chunks wait
// for @tiles, which only chunk-fuse-gathers (not run here) makes the tiles
// count. Without it nothing would wait for the tiles: refused.
module {
  chunk.plan @gather world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-lower-transfers: reducing transfers and transfers that wait for kernel tiles are lowered only by chunk-fuse-reductions (reductions) or chunk-fuse-gathers (an all-gather of what the kernel's tiles produce), which must run first}}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

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
// CHECK: dst_rank = 0 : i64, flag = 3 : i64, name = "left",{{[^}]*}}src_rank = 3 : i64}
// CHECK-SAME: dst_rank = 0 : i64, flag = 2 : i64, name = "across",{{[^}]*}}src_rank = 2 : i64}
// CHECK-SAME: dst_rank = 0 : i64, flag = 1 : i64, name = "right",{{[^}]*}}src_rank = 1 : i64}
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

// -----

// A transfer whose flag the flags of another buffer imply
// (chunk.flag_implied_by, which chunk-insert-waits sets: the tiles wait for
// @Bg's chunk before the same loop, and every rank's copy stream pushes its
// rows of A before its chunks of B; insert-waits-sources.test) sets no
// flag. Rank 0's copies: its own rows of A into its @Ag before the kernel
// (no flag), then on its copy stream A's rows to rank 1 with no flag, then
// B's two column chunks, each setting rank 1's flag for rank 0's block
// (2 + c).
// CHECK: copies = {{\[\[}}{before_kernel = true, dst_buffer = "Ag",{{[^}]*}}dst_rank = 0 : i64, name =
// CHECK-SAME: {before_kernel = false, dst_buffer = "Ag",{{[^}]*}}dst_rank = 1 : i64, name =
// CHECK-SAME: {before_kernel = false, dst_buffer = "Bg",{{[^}]*}}flag = 2 : i64,
// CHECK-SAME: {before_kernel = false, dst_buffer = "Bg",{{[^}]*}}flag = 3 : i64,
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<512x64xbf16>
    chunk.buffer @Ag : !chunk.buffer<512x64xbf16> bind(0)
    chunk.buffer @Bg : !chunk.buffer<128x512xbf16> bind(1)
    chunk.transfer @Ag_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@Ag[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_to_all) {group = "all_to_all_Ag"}
    chunk.transfer @Ag_p1_c0 push copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@Ag[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_to_all) {group = "all_to_all_Ag", chunk.flag_implied_by = "Bg"}
    chunk.transfer @Bg_p0_c0 local copy_engine from <@Bg[(d0) -> (d0 * 64, 0)] [64, 256]> on (d0) -> (d0) to <@Bg[(d0) -> (d0 * 64, 0)] [64, 256]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_Bg"}
    chunk.transfer @Bg_p0_c1 local copy_engine from <@Bg[(d0) -> (d0 * 64, 256)] [64, 256]> on (d0) -> (d0) to <@Bg[(d0) -> (d0 * 64, 256)] [64, 256]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_Bg"}
    chunk.transfer @Bg_p1_c0 push copy_engine from <@Bg[(d0) -> (((d0 + 1) mod 2) * 64, 0)] [64, 256]> on (d0) -> ((d0 + 1) mod 2) to <@Bg[(d0) -> (((d0 + 1) mod 2) * 64, 0)] [64, 256]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_Bg"}
    chunk.transfer @Bg_p1_c1 push copy_engine from <@Bg[(d0) -> (((d0 + 1) mod 2) * 64, 256)] [64, 256]> on (d0) -> ((d0 + 1) mod 2) to <@Bg[(d0) -> (((d0 + 1) mod 2) * 64, 256)] [64, 256]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_Bg"}
    chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
    chunk.consume @Bg dim(1) tile(128) index("pid_n") source("src")
  }
}
