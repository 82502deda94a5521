// chunk-lower-transfers on plans a fuse pass handled: the transfers
// chunk-fuse-gathers or chunk-fuse-reductions marked chunk.fused become no
// host copies; the copies those passes recorded for the copy engine's side
// stream (chunk.reduction_copies) go into the schedule as they are, with
// the flags of the fused layout counted in num_flags.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers)' | FileCheck %s
//
// Each input is a plan in the state its fuse pass leaves (after
// chunk-expand-collectives, chunk-bind-kernel, chunk-reorder-tiles where
// the tiles are reordered, and chunk-fuse-gathers or
// chunk-fuse-reductions: fuse-gathers.mlir, fuse-reductions-*.mlir). The
// kernels, which this pass does not read for these plans, are left out.

// The all-gather of the kernel's output (fuse-gathers.mlir's @gather):
// rank 0's side stream sends chunk 0 (g = 0) once its 4 tiles are
// counted, 256 rows of 128 elements (256 bytes), pitch 512 bytes, into
// rank 1's @C at the same place, setting no flag; chunk 1 from byte 256.
// No host copies, no completion flags: rank 0's launch ends after rank 1's
// side stream. Flags: produced 0..4.
// CHECK: completion = [], copies = {{\[}}[], []], copy_plane = false, copy_programs = 0 : i64, num_flags = 4 : i64, plan = "gather"
// CHECK-SAME: reduction_copies = {{\[}}{{\[}}{bytes = 256 : i64, dst_buffer = "C", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 0, 4>, rows = {count = 256 : i64, dst_pitch = 512 : i64, src_pitch = 512 : i64}, src_buffer = "C", src_offset = 0 : i64}, {{[{].*}}produced = array<i64: 1, 4>,{{.*}}src_offset = 256 : i64}],
// Rank 1's first copy: its chunk g = 2 (byte 256 * 256 * 2 = 131072).
// CHECK-SAME: {{\[}}{{[{].*}}dst_offset = 131072 : i64, owner = 0 : i64, produced = array<i64: 2, 4>,{{.*}}src_offset = 131072 : i64}
// The fused transfers and the tile map are gone; the plan keeps its buffers.
// CHECK:      chunk.plan @gather world_size(2)
// CHECK-NEXT:   chunk.buffer @C
// CHECK-NEXT: }
module {
  chunk.plan @gather world_size(2) attributes {chunk.reduction_copies = [[{bytes = 256, dst_buffer = "C", dst_offset = 0, owner = 1, produced = array<i64: 0, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 0}, {bytes = 256, dst_buffer = "C", dst_offset = 256, owner = 1, produced = array<i64: 1, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 256}], [{bytes = 256, dst_buffer = "C", dst_offset = 131072, owner = 0, produced = array<i64: 2, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131072}, {bytes = 256, dst_buffer = "C", dst_offset = 131328, owner = 0, produced = array<i64: 3, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131328}]]} {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
  }
}

// -----

// Four ranks (fuse-gathers.mlir's @gather4): each rank's 256 rows of @C
// [1024, 256] go to its 3 peers, chunk by chunk, in rank-rotated order
// (r+1, r+2, r+3), setting no flag. Flags: produced 0..8.
// CHECK: completion = [], copies = {{\[}}[], [], [], []], copy_plane = false, copy_programs = 0 : i64, num_flags = 8 : i64, plan = "gather4"
// CHECK-SAME: reduction_copies = {{\[}}{{\[}}{bytes = 256 : i64,{{.*}}owner = 1 : i64, produced = array<i64: 0, 4>,{{.*}}owner = 2 : i64, produced = array<i64: 0, 4>,{{.*}}owner = 3 : i64, produced = array<i64: 0, 4>,{{.*}}owner = 1 : i64, produced = array<i64: 1, 4>,
module {
  chunk.plan @gather4 world_size(4) attributes {chunk.reduction_copies = [[{bytes = 256, dst_buffer = "C", dst_offset = 0, owner = 1, produced = array<i64: 0, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 0}, {bytes = 256, dst_buffer = "C", dst_offset = 0, owner = 2, produced = array<i64: 0, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 0}, {bytes = 256, dst_buffer = "C", dst_offset = 0, owner = 3, produced = array<i64: 0, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 0}, {bytes = 256, dst_buffer = "C", dst_offset = 256, owner = 1, produced = array<i64: 1, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 256}, {bytes = 256, dst_buffer = "C", dst_offset = 256, owner = 2, produced = array<i64: 1, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 256}, {bytes = 256, dst_buffer = "C", dst_offset = 256, owner = 3, produced = array<i64: 1, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 256}], [{bytes = 256, dst_buffer = "C", dst_offset = 131072, owner = 2, produced = array<i64: 2, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131072}, {bytes = 256, dst_buffer = "C", dst_offset = 131072, owner = 3, produced = array<i64: 2, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131072}, {bytes = 256, dst_buffer = "C", dst_offset = 131072, owner = 0, produced = array<i64: 2, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131072}, {bytes = 256, dst_buffer = "C", dst_offset = 131328, owner = 2, produced = array<i64: 3, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131328}, {bytes = 256, dst_buffer = "C", dst_offset = 131328, owner = 3, produced = array<i64: 3, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131328}, {bytes = 256, dst_buffer = "C", dst_offset = 131328, owner = 0, produced = array<i64: 3, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131328}], [{bytes = 256, dst_buffer = "C", dst_offset = 262144, owner = 3, produced = array<i64: 4, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 262144}, {bytes = 256, dst_buffer = "C", dst_offset = 262144, owner = 0, produced = array<i64: 4, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 262144}, {bytes = 256, dst_buffer = "C", dst_offset = 262144, owner = 1, produced = array<i64: 4, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 262144}, {bytes = 256, dst_buffer = "C", dst_offset = 262400, owner = 3, produced = array<i64: 5, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 262400}, {bytes = 256, dst_buffer = "C", dst_offset = 262400, owner = 0, produced = array<i64: 5, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 262400}, {bytes = 256, dst_buffer = "C", dst_offset = 262400, owner = 1, produced = array<i64: 5, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 262400}], [{bytes = 256, dst_buffer = "C", dst_offset = 393216, owner = 0, produced = array<i64: 6, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 393216}, {bytes = 256, dst_buffer = "C", dst_offset = 393216, owner = 1, produced = array<i64: 6, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 393216}, {bytes = 256, dst_buffer = "C", dst_offset = 393216, owner = 2, produced = array<i64: 6, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 393216}, {bytes = 256, dst_buffer = "C", dst_offset = 393472, owner = 0, produced = array<i64: 7, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 393472}, {bytes = 256, dst_buffer = "C", dst_offset = 393472, owner = 1, produced = array<i64: 7, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 393472}, {bytes = 256, dst_buffer = "C", dst_offset = 393472, owner = 2, produced = array<i64: 7, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 393472}]]} {
    chunk.buffer @C : !chunk.buffer<1024x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 4) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 4) to <@C[(d0) -> (((d0 + 1) mod 4) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 4) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 4) to <@C[(d0) -> (((d0 + 1) mod 4) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
    chunk.transfer @C_p2_c0 push copy_engine from <@C[(d0) -> (((d0 + 2) mod 4) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 2) mod 4) to <@C[(d0) -> (((d0 + 2) mod 4) * 256, 0)] [256, 128]> on (d0) -> (d0) order(4) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
    chunk.transfer @C_p2_c1 push copy_engine from <@C[(d0) -> (((d0 + 2) mod 4) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 2) mod 4) to <@C[(d0) -> (((d0 + 2) mod 4) * 256, 128)] [256, 128]> on (d0) -> (d0) order(5) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
    chunk.transfer @C_p3_c0 push copy_engine from <@C[(d0) -> (((d0 + 3) mod 4) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 3) mod 4) to <@C[(d0) -> (((d0 + 3) mod 4) * 256, 0)] [256, 128]> on (d0) -> (d0) order(6) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
    chunk.transfer @C_p3_c1 push copy_engine from <@C[(d0) -> (((d0 + 3) mod 4) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 3) mod 4) to <@C[(d0) -> (((d0 + 3) mod 4) * 256, 128)] [256, 128]> on (d0) -> (d0) order(7) after [@tiles] collective(all_gather) {chunk.fused, group = "all_gather_C"}
  }
}

// -----

// A reduce-scatter on the copy engine (fuse-reductions-copy-engine.mlir):
// rank 0's side stream copies its partial of chunks 2 and 3 (rank 1's) in
// order: chunk 2 is rows 512..768 of @P (byte 65536 with 128-byte rows),
// into rows 0..256 of rank 1's @P_staging (slot 0, the only one with 2
// ranks); chunk 3 follows at byte 32768. Flags: produced 0..4, arrived
// 4..12, consumed 12..16 and copied 16..20.
// CHECK: num_flags = 20 : i64
// CHECK-SAME: reduction_copies = [{{\[}}{arrived = 8 : i64, bytes = 32768 : i64, dst_buffer = "P_staging", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 2, 2>, src_buffer = "P", src_offset = 65536 : i64}, {arrived = 10 : i64,{{.*}}dst_offset = 32768 : i64, owner = 1 : i64,{{.*}}src_offset = 98304 : i64}]
module {
  chunk.plan @p world_size(2) attributes {chunk.reduction_copies = [[{arrived = 8, bytes = 32768, dst_buffer = "P_staging", dst_offset = 0, owner = 1, produced = array<i64: 2, 2>, src_buffer = "P", src_offset = 65536}, {arrived = 10, bytes = 32768, dst_buffer = "P_staging", dst_offset = 32768, owner = 1, produced = array<i64: 3, 2>, src_buffer = "P", src_offset = 98304}], [{arrived = 5, bytes = 32768, dst_buffer = "P_staging", dst_offset = 0, owner = 0, produced = array<i64: 0, 2>, src_buffer = "P", src_offset = 0}, {arrived = 7, bytes = 32768, dst_buffer = "P_staging", dst_offset = 32768, owner = 0, produced = array<i64: 1, 2>, src_buffer = "P", src_offset = 32768}]]} {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {chunk.fused, group = "reduce_scatter_C"}
  }
}

// -----

// A two-shot all-reduce on ldst (fuse-reductions-two-shot.mlir's @p): the
// kernel moves partials and sums and waits for the peers' sums itself, so
// the schedule has no copies and no completion waits. Flags: the
// reduce-scatter's 0..4, gathered rows 4..8, finished tiles 8..12.
// CHECK: completion = [], copies = {{\[}}[], []], copy_plane = false, copy_programs = 0 : i64, num_flags = 12 : i64, plan = "p"
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.transfer @C_rs_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_ag_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c0 pull ldst from <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c1 pull ldst from <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
  }
}

// -----

// A two-shot all-reduce on the copy engine
// (fuse-reductions-two-shot.mlir's @p_copy_engine): the reduce-scatter's
// flags 0..20, then reduced 20..24, sent 24..28 and gathered 28..32. No
// completion flags: the runtime ends each launch after the peer's side
// stream.
// CHECK: completion = [], copies = {{\[}}[], []], copy_plane = false, copy_programs = 0 : i64, num_flags = 32 : i64, plan = "p_copy_engine"
// Rank 0: its partials of chunks 2 and 3 into rank 1's staging (setting
// arrived[g * 2 + 0] there, which its tiles wait for), then its sums of
// chunk 0 (rows 0..256) and 1 into rank 1's @C.
// CHECK-SAME: reduction_copies = [{{\[}}{arrived = 8 : i64,{{.*}}dst_buffer = "P_staging",{{.*}}}, {{.*}}}, {bytes = 32768 : i64, dst_buffer = "C", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 20, 2>, src_buffer = "C", src_offset = 0 : i64}, {{[{].*}}dst_offset = 32768 : i64, owner = 1 : i64, produced = array<i64: 21, 2>,{{.*}}src_offset = 32768 : i64}]
module {
  chunk.plan @p_copy_engine world_size(2) attributes {chunk.reduction_copies = [[{arrived = 8, bytes = 32768, dst_buffer = "P_staging", dst_offset = 0, owner = 1, produced = array<i64: 2, 2>, src_buffer = "P", src_offset = 65536}, {arrived = 10, bytes = 32768, dst_buffer = "P_staging", dst_offset = 32768, owner = 1, produced = array<i64: 3, 2>, src_buffer = "P", src_offset = 98304}, {bytes = 32768, dst_buffer = "C", dst_offset = 0, owner = 1, produced = array<i64: 20, 2>, src_buffer = "C", src_offset = 0}, {bytes = 32768, dst_buffer = "C", dst_offset = 32768, owner = 1, produced = array<i64: 21, 2>, src_buffer = "C", src_offset = 32768}], [{arrived = 5, bytes = 32768, dst_buffer = "P_staging", dst_offset = 0, owner = 0, produced = array<i64: 0, 2>, src_buffer = "P", src_offset = 0}, {arrived = 7, bytes = 32768, dst_buffer = "P_staging", dst_offset = 32768, owner = 0, produced = array<i64: 1, 2>, src_buffer = "P", src_offset = 32768}, {bytes = 32768, dst_buffer = "C", dst_offset = 65536, owner = 0, produced = array<i64: 22, 2>, src_buffer = "C", src_offset = 65536}, {bytes = 32768, dst_buffer = "C", dst_offset = 98304, owner = 0, produced = array<i64: 23, 2>, src_buffer = "C", src_offset = 98304}]]} {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
    chunk.transfer @C_rs_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c0 pull copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_rs_p1_c1 pull copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) phase(reduce_scatter) {chunk.fused, group = "all_reduce_C_rs"}
    chunk.transfer @C_ag_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c0 pull copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@C_rs_p0_c0, @C_rs_p1_c0] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
    chunk.transfer @C_ag_p1_c1 pull copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@C_rs_p0_c1, @C_rs_p1_c1] collective(all_reduce) phase(all_gather) {chunk.fused, group = "all_reduce_C_ag"}
  }
}

// -----

// Beside recorded copies, a transfer that waits for the tiles but that no
// fuse pass marked chunk.fused is still refused.
module {
  chunk.plan @unmarked world_size(2) attributes {chunk.reduction_copies = [[{bytes = 256, dst_buffer = "C", dst_offset = 0, owner = 1, produced = array<i64: 0, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 0}, {bytes = 256, dst_buffer = "C", dst_offset = 256, owner = 1, produced = array<i64: 1, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 256}], [{bytes = 256, dst_buffer = "C", dst_offset = 131072, owner = 0, produced = array<i64: 2, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131072}, {bytes = 256, dst_buffer = "C", dst_offset = 131328, owner = 0, produced = array<i64: 3, 4>, rows = {count = 256, dst_pitch = 512, src_pitch = 512}, src_buffer = "C", src_offset = 131328}]]} {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-lower-transfers: reducing transfers and transfers that wait for kernel tiles are lowered only by chunk-fuse-reductions (reductions) or chunk-fuse-gathers (an all-gather of what the kernel's tiles produce), which must run first}}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
}

// -----

// A record that does not hold what its pass writes (a copy without its
// `produced` counter) is refused at the plan, naming the field.
module {
  // expected-error @below {{'chunk.reduction_copies' does not hold what its pass records: at [0][0]: missing field `produced`}}
  chunk.plan @malformed world_size(2) attributes {chunk.reduction_copies = [[{bytes = 256, dst_buffer = "C", dst_offset = 0, owner = 1, src_buffer = "C", src_offset = 0}], []]} {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
  }
}
