// chunk-lower-transfers on a ring whose buffer is kept in two slots
// (`chunk.slots = 2`): the kernel runs once per ring step, and the host
// schedule says so (`ring_steps`: 4 steps, the state bytes per program
// chunk-reorder-tiles recorded on the kernel). Each rank holds 3 blocks of
// @K (`held_rows = 192`: its own, then slot 0 and slot 1) instead of 4. A
// copy brings the block its destination reads at step s into its place
// there (slot s mod 2: rows 64 + 64 * (s mod 2)), from where the source
// holds it (its own block at rows 0..64, or the slot it read it from at
// step s - 1), in the launch of step s - 1 (`step`). Each rank receives
// from its neighbour r + 1, so rank 0 pushes to rank 3: its own block 0
// (rows 0, into rank 3's rows 128, step 0); block 1, which it read at step
// 1 from slot 1 (rows 128), into rank 3's slot 0 (rows 64) at step 1, once
// it arrived (after_flag 1); block 2 from slot 0 into slot 1 at step 2.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers)' | FileCheck %s

// CHECK:      module attributes {chunk.host_schedule = {
// CHECK-SAME: buffers = [{arg = 1 : i64, element = "bf16", element_bytes = 2 : i64, held_rows = 192 : i64, name = "K", shape = array<i64: 256, 64>
// CHECK-SAME: copies = [
// CHECK-SAME: [{before_kernel = false, dst_buffer = "K", dst_offset = 8192 : i64, {{.*}}dst_rank = 3 : i64, flag = 0 : i64, name = "K_s1_c0", {{.*}}src_offset = 0 : i64, {{.*}}src_rank = 0 : i64, step = 0 : i64}
// CHECK-SAME: {after_flag = 1 : i64, before_kernel = false, dst_buffer = "K", dst_offset = 4096 : i64, {{.*}}dst_rank = 3 : i64, flag = 1 : i64, name = "K_s2_c0", {{.*}}src_offset = 8192 : i64, {{.*}}src_rank = 0 : i64, step = 1 : i64}
// CHECK-SAME: {after_flag = 2 : i64, before_kernel = false, dst_buffer = "K", dst_offset = 8192 : i64, {{.*}}dst_rank = 3 : i64, flag = 2 : i64, name = "K_s3_c0", {{.*}}src_offset = 4096 : i64, {{.*}}src_rank = 0 : i64, step = 2 : i64}]
// CHECK-SAME: ring_steps = {state_bytes = 1024 : i64, steps = 4 : i64}
module {
  chunk.plan @p world_size(4) kernel(@k) {
    chunk.buffer @K : !chunk.buffer<256x64xbf16> bind(1) {chunk.slots = 2}
    chunk.transfer @K_s0_c0 local copy_engine from <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) to <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s1_c0 push copy_engine from <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s2_c0 push copy_engine from <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(2) after [@K_s1_c0] collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s3_c0 push copy_engine from <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(3) after [@K_s2_c0] collective(all_gather) {group = "all_gather_K"}
    chunk.consume @K dim(0) tile(64)
  }
  "tt.func"() <{function_type = () -> (), sym_name = "k", sym_visibility = "public"}> ({
    "tt.return"() : () -> ()
  }) {chunk.step_state_bytes = 1024 : i64} : () -> ()
}

// -----

// A direct gather into slots: rank r reads block r + 2 at step 2, so it
// must come from r + 1, which read it the step before; rank r + 2, its
// owner, read it at step 0 and holds it nowhere else by then. (Block
// r + 1 comes from its owner in both.)
module {
  chunk.plan @direct world_size(4) kernel(@k) {
    chunk.buffer @K : !chunk.buffer<256x64xbf16> bind(1) {chunk.slots = 2}
    chunk.transfer @K_p0_c0 local copy_engine from <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) to <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_p1_c0 push copy_engine from <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_K"}
    // expected-error @below {{chunk-lower-transfers: @K is kept in ring slots: rank 0 reads block 2 at ring step 2, so it must come from rank 1, which read it the step before (the ring's neighbour r + 1); this transfer brings it from rank 2}}
    chunk.transfer @K_p2_c0 push copy_engine from <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 2) mod 4) to <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_p3_c0 push copy_engine from <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 3) mod 4) to <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_K"}
    chunk.consume @K dim(0) tile(64)
  }
  "tt.func"() <{function_type = () -> (), sym_name = "k", sym_visibility = "public"}> ({
    "tt.return"() : () -> ()
  }) {chunk.step_state_bytes = 1024 : i64} : () -> ()
}

// -----

// Slots need a kernel that runs once per ring step (chunk-reorder-tiles
// records its state).
module {
  chunk.plan @unstepped world_size(4) kernel(@k) {
    // expected-error @below {{chunk-lower-transfers: @K is kept in ring slots, but the kernel does not run one ring step per launch; run chunk-reorder-tiles first}}
    chunk.buffer @K : !chunk.buffer<256x64xbf16> bind(1) {chunk.slots = 2}
    chunk.transfer @K_s0_c0 local copy_engine from <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) to <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s1_c0 push copy_engine from <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s2_c0 push copy_engine from <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(2) after [@K_s1_c0] collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s3_c0 push copy_engine from <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(3) after [@K_s2_c0] collective(all_gather) {group = "all_gather_K"}
    chunk.consume @K dim(0) tile(64)
  }
  "tt.func"() <{function_type = () -> (), sym_name = "k", sym_visibility = "public"}> ({
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// Only K in slots: V's ring would belong to no step, and never be made.
module {
  chunk.plan @mixed world_size(4) kernel(@k) {
    chunk.buffer @K : !chunk.buffer<256x64xbf16> bind(1) {chunk.slots = 2}
    chunk.buffer @V : !chunk.buffer<256x64xbf16> bind(2)
    chunk.transfer @K_s0_c0 local copy_engine from <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) to <@K[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s1_c0 push copy_engine from <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s2_c0 push copy_engine from <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(2) after [@K_s1_c0] collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @K_s3_c0 push copy_engine from <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@K[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(3) after [@K_s2_c0] collective(all_gather) {group = "all_gather_K"}
    chunk.transfer @V_s0_c0 local copy_engine from <@V[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) to <@V[(d0) -> (d0 * 64, 0)] [64, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_V"}
    // expected-error @below {{chunk-lower-transfers: the kernel runs once per ring step (@K is kept in ring slots), and each launch makes only its step's copies; a transfer into @V, which has no slots, would never be made: keep every gathered buffer of the plan in slots}}
    chunk.transfer @V_s1_c0 push copy_engine from <@V[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@V[(d0) -> (((d0 + 1) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_V"}
    chunk.transfer @V_s2_c0 push copy_engine from <@V[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@V[(d0) -> (((d0 + 2) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(2) after [@V_s1_c0] collective(all_gather) {group = "all_gather_V"}
    chunk.transfer @V_s3_c0 push copy_engine from <@V[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> ((d0 + 1) mod 4) to <@V[(d0) -> (((d0 + 3) mod 4) * 64, 0)] [64, 64]> on (d0) -> (d0) order(3) after [@V_s2_c0] collective(all_gather) {group = "all_gather_V"}
    chunk.consume @K dim(0) tile(64)
    chunk.consume @V dim(0) tile(64)
  }
  "tt.func"() <{function_type = () -> (), sym_name = "k", sym_visibility = "public"}> ({
    "tt.return"() : () -> ()
  }) {chunk.step_state_bytes = 1024 : i64} : () -> ()
}
