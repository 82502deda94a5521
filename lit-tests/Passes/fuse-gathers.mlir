// chunk-fuse-gathers: an all-gather of the output the kernel's tiles
// produce. Each rank's kernel computes its 256 rows of @C [512, 256] in
// 128x64 tiles (program_id 1 is the column tile); the all-gather sends
// them to the peer in 2 column chunks of 128 (2 column tiles x 2 row
// tiles = 4 tiles each). chunk-expand-collectives makes the peer's
// transfers wait for the tiles; this pass moves the kernel's store to the
// rank's rows (+ rank * 256 * 256 elements) and counts it (produced[g]);
// chunk g = rank * 2 + column tile * 64 / 128. Flags: produced 0..4, and
// nothing else: the copies set no flag (no kernel waits for them; the
// runtime's streams end each launch after its peers' copies and start the
// next kernel, which overwrites the chunks, after the rank's own).
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-gathers)' | FileCheck %s
//
// The input is in the state chunk-expand-collectives, chunk-verify-plan and
// chunk-bind-kernel leave: the all-gather is its transfers, the peer's
// waiting for @tiles (expand-collectives.mlir), and the kernel takes the
// fused ABI's arguments. What chunk-lower-transfers makes of the recorded
// copies: lower-transfers-fused.mlir; without this pass it refuses the
// gather (lower-transfers.mlir).
//
// Rank 0's side stream: chunk 0 (g = 0) once its 4 tiles are counted,
// 256 rows of 128 elements (256 bytes), pitch 512 bytes, into rank 1's
// @C at the same place, setting no flag (a copy lists no `arrived`,
// `consumed` or `copied` flag); chunk 1 from byte 256.
// Rank 1's first copy: its chunk g = 2 (byte 256 * 256 * 2 = 131072).
// CHECK-LABEL: chunk.plan @gather
// CHECK-SAME:  chunk.flag_layout = [{base = 0 : i64, buffer = "C", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 1 : i64, kind = "output", rank_block = 256 : i64, rank_dim = 0 : i64, rows_per_chunk = 128 : i64}]
// CHECK-SAME:  chunk.reduction_copies = {{\[\[}}{bytes = 256 : i64, dst_buffer = "C", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 0, 4>, rows = {count = 256 : i64, dst_pitch = 512 : i64, src_pitch = 512 : i64}, src_buffer = "C", src_offset = 0 : i64},
// CHECK-SAME:  {bytes = 256 : i64, dst_buffer = "C", dst_offset = 256 : i64, owner = 1 : i64, produced = array<i64: 1, 4>,{{[^}]*}}}, src_buffer = "C", src_offset = 256 : i64}],
// CHECK-SAME:  [{bytes = 256 : i64, dst_buffer = "C", dst_offset = 131072 : i64, owner = 0 : i64, produced = array<i64: 2, 4>,
// CHECK-NOT:   chunk.completion
// CHECK:       chunk.transfer @C_p1_c0 {{.*}}chunk.fused
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:       ^bb0(%{{.*}}: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>):
// CHECK:       %[[PID_N:.*]] = "tt.get_program_id"() <{axis = 1 : i32}>
// CHECK:       %[[C64:.*]] = arith.constant 64 : i32
// CHECK-NEXT:  %[[COL:.*]] = arith.muli %[[PID_N]], %[[C64]] : i32
// CHECK-NEXT:  %[[C128:.*]] = arith.constant 128 : i32
// CHECK-NEXT:  %[[C:.*]] = arith.divsi %[[COL]], %[[C128]] : i32
// CHECK-NEXT:  %[[C2:.*]] = arith.constant 2 : i32
// CHECK-NEXT:  %[[FIRST:.*]] = arith.muli %[[RANK]], %[[C2]] : i32
// CHECK-NEXT:  %[[G:.*]] = arith.addi %[[C]], %[[FIRST]] : i32
// CHECK-NEXT:  %[[R64:.*]] = arith.extsi %[[RANK]] : i32 to i64
// CHECK-NEXT:  %[[BLOCK:.*]] = arith.constant 65536 : i64
// CHECK-NEXT:  %[[SHIFT:.*]] = arith.muli %[[R64]], %[[BLOCK]] {tt.divisibility = dense<16> : tensor<1xi32>} : i64
// CHECK-NEXT:  %[[SPLAT:.*]] = "tt.splat"(%[[SHIFT]]) : (i64) -> tensor<128x64xi64>
// CHECK-NEXT:  %[[MINE:.*]] = "tt.addptr"(%{{.*}}, %[[SPLAT]])
// CHECK-NEXT:  "tt.store"(%[[MINE]], %{{.*}})
// CHECK-NEXT:  %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:  %[[PRODUCED:.*]] = arith.addi %[[G]], %[[C0]] : i32
// CHECK-NEXT:  chunk.arrive %[[FLAGS]][%[[PRODUCED]]] : !tt.ptr<i32>
// CHECK-NEXT:  "tt.return"
module {
  chunk.plan @gather world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    // expected-remark @below {{tiles of @C store into the rank's block and count its chunks (2 per rank, 4 tiles each, counters 0..4); the copy engine sends each finished chunk to 1 peer(s), 256 rows of 128 columns per copy}}
    chunk.produce @tiles @C dim(1) tile(64)
    // chunk.all_gather @C dim(0) chunks(2) split(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<256> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%c) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// Only the copy engine sends a produced output's chunks so far.
module {
  chunk.plan @sm_gather world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    // chunk.all_gather @C dim(0) chunks(2) split(1) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-fuse-gathers: an all-gather of an output the tiles produce is sent by the copy engine; backend 'ldst' is not implemented for it}}
    chunk.transfer @C_p1_c0 pull ldst from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A reduction fused before this pass (its records on the plan) keeps the
// side stream and the launch's end: one fused operation per plan.
module {
  chunk.plan @after_reduction world_size(2) attributes {chunk.reduction_copies = [[], []]} {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    // chunk.all_gather @C dim(0) chunks(2) split(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-fuse-gathers: a reduction fused into this plan already has copies on the copy engine's side stream (chunk.reduction_copies); gathering an output beside it is not supported}}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

module {
  chunk.plan @after_two_shot world_size(2) attributes {chunk.completion = [[], []]} {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    // chunk.all_gather @C dim(0) chunks(2) split(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-fuse-gathers: a reduction fused into this plan already ends the launch on its own completion flags (chunk.completion); gathering an output beside it is not supported}}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Chunks of 32 columns would split the 64-wide tiles: a tile could not say
// which chunk it finished. (The plan verifier refuses such a chunk count
// on a collective; here the all-gather is written as its transfers: each
// rank's 128 rows in 2 chunks of 32 of the 64 columns.)
module {
  chunk.plan @narrow world_size(2) {
    chunk.buffer @C : !chunk.buffer<256x64xbf16> bind(0)
    // expected-error @below {{chunks of 32 along dimension 1 of @C would split its 64-wide tiles: pick a chunk count whose chunks hold whole tiles}}
    chunk.produce @tiles @C dim(1) tile(64)
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 128, 0)] [128, 32]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 128, 0)] [128, 32]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 128, 32)] [128, 32]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 128, 32)] [128, 32]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 128, 0)] [128, 32]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 128, 0)] [128, 32]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 128, 32)] [128, 32]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 128, 32)] [128, 32]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Row chunks of an output produced by column tiles: every row chunk needs
// every tile, so its chunks would not follow the tiles.
module {
  chunk.plan @rows world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    // chunk.all_gather @C dim(0) chunks(2), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [128, 256]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [128, 256]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256 + 128, 0)] [128, 256]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256 + 128, 0)] [128, 256]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-fuse-gathers: the all-gather's chunks of @C must cut dimension 1 (along which its tiles are produced) and nothing else; use split(1), or chunks(1)}}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [128, 256]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [128, 256]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256 + 128, 0)] [128, 256]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256 + 128, 0)] [128, 256]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Blocks of columns per rank: the kernel's rows would not be the rank's
// block.
module {
  chunk.plan @columns world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    // expected-error @below {{chunk-fuse-gathers: each rank's block of @C must be rows (an all-gather along dim(0)); it is along dimension 1}}
    chunk.produce @tiles @C dim(0) tile(128)
    // chunk.all_gather @C dim(1) chunks(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (0, d0 * 128)] [512, 128]> on (d0) -> (d0) to <@C[(d0) -> (0, d0 * 128)] [512, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [512, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [512, 128]> on (d0) -> (d0) order(1) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// The named tile index is not what the store's addresses are computed
// from (here pid_x = pid_n + 1): the tiles would count the wrong chunks.
module {
  chunk.plan @wrong_index world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64) index("pid_x")
    // chunk.all_gather @C dim(0) chunks(2) split(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c1 = arith.constant 1 : i32
    %c64 = arith.constant 64 : i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %pid_x = arith.addi %pid_n, %c1 : i32 loc("pid_x")
    %col = arith.muli %pid_n, %c64 : i32
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %off = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %ps = "tt.splat"(%c) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    // expected-error @below {{chunk-fuse-gathers: this store of @C does not address its tile as the tile index times 64; cannot tell which chunk it writes}}
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Four ranks (issue 8's W): each rank's 256 rows of @C [1024, 256] go to
// its 3 peers, chunk by chunk, in rank-rotated order (r+1, r+2, r+3),
// setting no flag. Counters: produced 0..8.
// CHECK-LABEL: chunk.plan @gather4
// CHECK-SAME:  chunk.reduction_copies = {{\[\[}}{bytes = 256 : i64, dst_buffer = "C", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 0, 4>,
// CHECK-SAME:  owner = 2 : i64, produced = array<i64: 0, 4>,{{.*}}owner = 3 : i64, produced = array<i64: 0, 4>,{{.*}}owner = 1 : i64, produced = array<i64: 1, 4>,
module {
  chunk.plan @gather4 world_size(4) {
    chunk.buffer @C : !chunk.buffer<1024x256xbf16> bind(0)
    // expected-remark @below {{tiles of @C store into the rank's block and count its chunks (2 per rank, 4 tiles each, counters 0..8); the copy engine sends each finished chunk to 3 peer(s), 256 rows of 128 columns per copy}}
    chunk.produce @tiles @C dim(1) tile(64)
    // chunk.all_gather @C dim(0) chunks(2) split(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 4) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 4) to <@C[(d0) -> (((d0 + 1) mod 4) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 4) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 4) to <@C[(d0) -> (((d0 + 1) mod 4) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p2_c0 push copy_engine from <@C[(d0) -> (((d0 + 2) mod 4) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 2) mod 4) to <@C[(d0) -> (((d0 + 2) mod 4) * 256, 0)] [256, 128]> on (d0) -> (d0) order(4) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p2_c1 push copy_engine from <@C[(d0) -> (((d0 + 2) mod 4) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 2) mod 4) to <@C[(d0) -> (((d0 + 2) mod 4) * 256, 128)] [256, 128]> on (d0) -> (d0) order(5) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p3_c0 push copy_engine from <@C[(d0) -> (((d0 + 3) mod 4) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 3) mod 4) to <@C[(d0) -> (((d0 + 3) mod 4) * 256, 0)] [256, 128]> on (d0) -> (d0) order(6) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p3_c1 push copy_engine from <@C[(d0) -> (((d0 + 3) mod 4) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 3) mod 4) to <@C[(d0) -> (((d0 + 3) mod 4) * 256, 128)] [256, 128]> on (d0) -> (d0) order(7) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<256> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%c) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Written out by hand with the peer's column chunks swapped: every element
// still lands once (the plan verifies), but not where the fused gather's
// copies put it.
module {
  chunk.plan @swapped world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    chunk.produce @tiles @C dim(1) tile(64)
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    // expected-error @below {{chunk-fuse-gathers: on rank 0, this transfer sends [256, 128] of @C at [256, 0] from rank 1 to [256, 128], but the fused gather sends each rank's own block (256 along dimension 0), 128 along dimension 1 at a time, to the same place on every peer: write the collective and let chunk-expand-collectives expand it}}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<256> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%c) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// A re-sharding all-to-all of the tiles' output (attention's by heads back
// by tokens): the tiles write all 512 rows of @X [512, 128] (128x64 tiles);
// rank d's rows (256 of them, 2 row tiles x 2 column tiles = 4 tiles) go
// to rank d's @Y [256, 256], into the sender's 128 columns. The tiles keep
// their addresses and count chunk c = row tile * 128 / 256; the side
// stream sends the peer's rows first (256 rows of 256 bytes, pitch 256
// into pitch 512), then the rank's own into its own @Y, each once its 4
// tiles are counted.
// CHECK-LABEL: chunk.plan @reshard
// CHECK-SAME:  chunk.flag_layout = [{base = 0 : i64, buffer = "X", chunks_per_rank = 1 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "output", rank_block = 256 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]
// CHECK-SAME:  chunk.reduction_copies = {{\[\[}}{bytes = 256 : i64, dst_buffer = "Y", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 1, 4>, rows = {count = 256 : i64, dst_pitch = 512 : i64, src_pitch = 256 : i64}, src_buffer = "X", src_offset = 65536 : i64},
// CHECK-SAME:  {bytes = 256 : i64, dst_buffer = "Y", dst_offset = 0 : i64, owner = 0 : i64, produced = array<i64: 0, 4>,{{[^}]*}}}, src_buffer = "X", src_offset = 0 : i64}],
// CHECK-SAME:  [{bytes = 256 : i64, dst_buffer = "Y", dst_offset = 256 : i64, owner = 0 : i64, produced = array<i64: 0, 4>,{{[^}]*}}}, src_buffer = "X", src_offset = 0 : i64},
// CHECK-SAME:  {bytes = 256 : i64, dst_buffer = "Y", dst_offset = 256 : i64, owner = 1 : i64, produced = array<i64: 1, 4>,
// CHECK:       chunk.transfer @Y_p0_c0 {{.*}}chunk.fused
// CHECK:       chunk.transfer @Y_p1_c0 {{.*}}chunk.fused
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:       %[[PID_M:.*]] = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK:       %[[C128:.*]] = arith.constant 128 : i32
// CHECK-NEXT:  %[[ROW:.*]] = arith.muli %[[PID_M]], %[[C128]] : i32
// CHECK-NEXT:  %[[C256:.*]] = arith.constant 256 : i32
// CHECK-NEXT:  %[[C:.*]] = arith.divsi %[[ROW]], %[[C256]] : i32
// CHECK-NEXT:  "tt.store"(%[[PTRS:.*]], %{{.*}})
// CHECK-NEXT:  %[[C0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:  %[[PRODUCED:.*]] = arith.addi %[[C]], %[[C0]] : i32
// CHECK-NEXT:  chunk.arrive %{{.*}}[%[[PRODUCED]]] : !tt.ptr<i32>
// CHECK-NEXT:  "tt.return"
module {
  chunk.plan @reshard world_size(2) {
    chunk.buffer @X : !chunk.buffer<512x128xbf16> bind(0)
    chunk.buffer @Y : !chunk.buffer<256x256xbf16>
    // expected-remark @below {{tiles of @X count each rank's rows they finish (4 tiles each, counters 0..2); the copy engine sends rank d's rows to rank d's @Y (this rank's 128 columns there) as soon as they are done}}
    chunk.produce @tiles @X dim(0) tile(128)
    // chunk.all_to_all @X into @Y dim(0) chunks(1) to(1), expanded:
    chunk.transfer @Y_p0_c0 local copy_engine from <@X[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@Y[(d0) -> (0, d0 * 128)] [256, 128]> on (d0) -> (d0) order(0) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c0 push copy_engine from <@X[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [256, 128]> on (d0) -> (d0) order(1) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%x: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %y: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<128> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%x) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32, chunk.abi_buffers = ["Y"]} : () -> ()
}

// -----

// The same in chunks of each rank's rows (chunks(2), 128 rows, one row
// tile each): the tiles count chunk c = row tile * 128 / 128 of @X (2 per
// rank, 2 tiles each), and the side stream sends each chunk once its
// tiles are counted: 128 rows of 256 bytes into the destination's rows
// c * 128 (byte c * 32768), the peer's chunks first.
// CHECK-LABEL: chunk.plan @reshard_chunks
// CHECK-SAME:  chunk.flag_layout = [{base = 0 : i64, buffer = "X", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "output", rank_block = 256 : i64, rank_dim = 0 : i64, rows_per_chunk = 128 : i64}]
// CHECK-SAME:  chunk.reduction_copies = {{\[\[}}{bytes = 256 : i64, dst_buffer = "Y", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 2, 2>, rows = {count = 128 : i64, dst_pitch = 512 : i64, src_pitch = 256 : i64}, src_buffer = "X", src_offset = 65536 : i64},
// CHECK-SAME:  {bytes = 256 : i64, dst_buffer = "Y", dst_offset = 65536 : i64, owner = 1 : i64, produced = array<i64: 3, 2>, rows = {count = 128 : i64, dst_pitch = 512 : i64, src_pitch = 256 : i64}, src_buffer = "X", src_offset = 98304 : i64},
// CHECK-SAME:  {bytes = 256 : i64, dst_buffer = "Y", dst_offset = 0 : i64, owner = 0 : i64, produced = array<i64: 0, 2>,
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:       %[[PID_M:.*]] = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK:       %[[TILE:.*]] = arith.constant 128 : i32
// CHECK-NEXT:  %[[ROW:.*]] = arith.muli %[[PID_M]], %[[TILE]] : i32
// CHECK-NEXT:  %[[CHUNK:.*]] = arith.constant 128 : i32
// CHECK-NEXT:  %[[C:.*]] = arith.divsi %[[ROW]], %[[CHUNK]] : i32
// CHECK-NEXT:  "tt.store"
module {
  chunk.plan @reshard_chunks world_size(2) {
    chunk.buffer @X : !chunk.buffer<512x128xbf16> bind(0)
    chunk.buffer @Y : !chunk.buffer<256x256xbf16>
    // expected-remark @below {{tiles of @X count each chunk of each rank's rows (2 per rank) they finish (2 tiles each, counters 0..4); the copy engine sends each chunk of rank d's rows to rank d's @Y (this rank's 128 columns there) as soon as they are done}}
    chunk.produce @tiles @X dim(0) tile(128)
    // chunk.all_to_all @X into @Y dim(0) chunks(2) to(1), expanded:
    chunk.transfer @Y_p0_c0 local copy_engine from <@X[(d0) -> (d0 * 256, 0)] [128, 128]> on (d0) -> (d0) to <@Y[(d0) -> (0, d0 * 128)] [128, 128]> on (d0) -> (d0) order(0) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p0_c1 local copy_engine from <@X[(d0) -> (d0 * 256 + 128, 0)] [128, 128]> on (d0) -> (d0) to <@Y[(d0) -> (128, d0 * 128)] [128, 128]> on (d0) -> (d0) order(1) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c0 push copy_engine from <@X[(d0) -> (d0 * 256, 0)] [128, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [128, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c1 push copy_engine from <@X[(d0) -> (d0 * 256 + 128, 0)] [128, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (128, ((d0 + 1) mod 2) * 128)] [128, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%x: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %y: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<128> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%x) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32, chunk.abi_buffers = ["Y"]} : () -> ()
}

// -----

// The same on ldst: the destinations' copy programs pull each chunk
// (chunk-lower-transfers), so nothing is recorded for the side stream and
// the transfers stay; the flag layout records that 2 tiles complete a
// chunk, which each copy waits for on its source rank.
// CHECK-LABEL: chunk.plan @reshard_pulled
// CHECK-SAME:  chunk.flag_layout = [{arrivals_per_chunk = 2 : i64, base = 0 : i64, buffer = "X", chunks_per_rank = 2 : i64
// CHECK-NOT:   chunk.reduction_copies
// CHECK:       chunk.transfer @Y_p0_c0 local ldst
// CHECK-NOT:   chunk.fused
// CHECK:       chunk.transfer @Y_p1_c1 pull ldst
// CHECK-NOT:   chunk.fused
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:       chunk.arrive
module {
  chunk.plan @reshard_pulled world_size(2) {
    chunk.buffer @X : !chunk.buffer<512x128xbf16> bind(0)
    chunk.buffer @Y : !chunk.buffer<256x256xbf16>
    // expected-remark @below {{tiles of @X count each chunk of each rank's rows they finish (2 per rank, 2 tiles each, counters 0..4); rank d's copy programs pull each into its @Y once the chunk's tiles are counted on the source rank}}
    chunk.produce @tiles @X dim(0) tile(128)
    // chunk.all_to_all @X into @Y dim(0) chunks(2) to(1) backend(ldst), expanded:
    chunk.transfer @Y_p0_c0 local ldst from <@X[(d0) -> (d0 * 256, 0)] [128, 128]> on (d0) -> (d0) to <@Y[(d0) -> (0, d0 * 128)] [128, 128]> on (d0) -> (d0) order(0) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p0_c1 local ldst from <@X[(d0) -> (d0 * 256 + 128, 0)] [128, 128]> on (d0) -> (d0) to <@Y[(d0) -> (128, d0 * 128)] [128, 128]> on (d0) -> (d0) order(1) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c0 pull ldst from <@X[(d0) -> (d0 * 256, 0)] [128, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [128, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c1 pull ldst from <@X[(d0) -> (d0 * 256 + 128, 0)] [128, 128]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (128, ((d0 + 1) mod 2) * 128)] [128, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%x: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %y: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<128> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%x) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32, chunk.abi_buffers = ["Y"]} : () -> ()
}

// -----

// Chunks that cut the tiles' columns (as chunks(2) of a consumed buffer
// would) do not follow the tiles, which finish rows: refused.
module {
  chunk.plan @reshard_columns world_size(2) {
    chunk.buffer @X : !chunk.buffer<512x128xbf16> bind(0)
    chunk.buffer @Y : !chunk.buffer<256x256xbf16>
    chunk.produce @tiles @X dim(0) tile(128)
    // expected-error @below {{chunk-fuse-gathers: an all-to-all of @X, which tiles produce along dimension 0, is fused as dim(0) to(1): each rank's block to its rank, in chunks along dimension 0}}
    chunk.transfer @Y_p0_c0 local copy_engine from <@X[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@Y[(d0) -> (0, d0 * 128)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p0_c1 local copy_engine from <@X[(d0) -> (d0 * 256, 64)] [256, 64]> on (d0) -> (d0) to <@Y[(d0) -> (0, d0 * 128 + 64)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c0 push copy_engine from <@X[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (0, ((d0 + 1) mod 2) * 128)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
    chunk.transfer @Y_p1_c1 push copy_engine from <@X[(d0) -> (d0 * 256, 64)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@Y[(d0) -> (0, ((d0 + 1) mod 2) * 128 + 64)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] collective(all_to_all) {group = "all_to_all_Y"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%x: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %y: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %pitch = arith.constant dense<128> : tensor<128x1xi32>
    %roff = arith.muli %re, %pitch : tensor<128x1xi32>
    %k = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %cs = "tt.splat"(%col) : (i32) -> tensor<64xi32>
    %cols = arith.addi %cs, %k : tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%x) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32, chunk.abi_buffers = ["Y"]} : () -> ()
}

// -----

// The first case with the tile stored through a descriptor the kernel
// makes (its column tile named: the tile index is looked for in pointer
// addresses): the store is rewritten as a masked store through pointers
// (the rewrite: fuse-reductions-descriptor-store.mlir), moved to the rank's
// rows and counted as above; no bulk store is left, whose completion the
// count would not wait for.
// CHECK-LABEL: chunk.plan @gather
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK-NOT:   tt.descriptor_store
// CHECK:       %[[MASK:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<128x64xi1>
// CHECK:       %[[SPLAT:.*]] = "tt.splat"(%{{.*}}) : (i64) -> tensor<128x64xi64>
// CHECK-NEXT:  %[[MINE:.*]] = "tt.addptr"(%{{.*}}, %[[SPLAT]])
// CHECK-NEXT:  "tt.store"(%[[MINE]], %{{.*}}, %[[MASK]])
// CHECK:       chunk.arrive
// CHECK-NOT:   tt.descriptor_store
module {
  chunk.plan @gather world_size(2) {
    chunk.buffer @C : !chunk.buffer<512x256xbf16> bind(0)
    // expected-remark @below {{tiles of @C store into the rank's block and count its chunks (2 per rank, 4 tiles each, counters 0..4); the copy engine sends each finished chunk to 1 peer(s), 256 rows of 128 columns per copy}}
    chunk.produce @tiles @C dim(1) tile(64) index("pid_n")
    // chunk.all_gather @C dim(0) chunks(2) split(1), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 0)] [256, 128]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) to <@C[(d0) -> (d0 * 256, 128)] [256, 128]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c0 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 128]> on (d0) -> (d0) order(2) after [@tiles] collective(all_gather) {group = "all_gather_C"}
    chunk.transfer @C_p1_c1 push copy_engine from <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 128]> on (d0) -> (d0) order(3) after [@tiles] collective(all_gather) {group = "all_gather_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%c: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c128 = arith.constant 128 : i32
    %c64 = arith.constant 64 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %pid_n = "tt.get_program_id"() <{axis = 1 : i32}> : () -> i32 loc("pid_n")
    %row = arith.muli %pid_m, %c128 : i32
    %col = arith.muli %pid_n, %c64 : i32
    %c0 = arith.constant 0 : i32
    %rows = arith.constant 512 : i32
    %cols = arith.constant 256 : i32
    %stride = arith.constant 256 : i64
    %unit = arith.constant 1 : i64
    %desc = "tt.make_tensor_descriptor"(%c, %rows, %cols, %stride, %unit) <{padding = 1 : i32}> : (!tt.ptr<bf16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<128x64xbf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.descriptor_store"(%desc, %v, %row, %col) : (!tt.tensordesc<tensor<128x64xbf16>>, tensor<128x64xbf16>, i32, i32) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}
