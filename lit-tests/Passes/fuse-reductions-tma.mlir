// chunk-fuse-reductions on backend(tma): bulk copies move partials only
// from the kernel's copy programs, so a reduce-scatter (or two-shot
// all-reduce) on tma is staged as with mode=stage (fuse-reductions-stage.mlir)
// whatever the mode option says: the plan is marked chunk.staged, the
// owners' @P_staging is declared, and the copies are recorded for
// chunk-lower-transfers (whose copy programs then make them bulk copies,
// lower-transfers-tma.mlir). A one-shot all-reduce stages nothing and is
// refused on tma.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions{mode=push})' \
// RUN:   | FileCheck %s

// CHECK-LABEL: chunk.plan @p
// CHECK-SAME:  chunk.reduction_copies = {{\[\[}}{arrived = 8 : i64, bytes = 32768 : i64, consumed = array<i64: 14, 2>, copied = 18 : i64, dst_buffer = "P_staging", dst_offset = 0 : i64, owner = 1 : i64, produced = array<i64: 2, 2>, src_buffer = "P", src_offset = 65536 : i64},
// CHECK-SAME:  chunk.staged = ["P"]
// CHECK:       chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {chunk.staging}
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{tiles of @P reduce into @C: other rows store their partial and count it; the kernel's copy programs move each finished chunk to its owner; own rows add 1 peer partial(s) per tile after 1 copy-program flag(s) per chunk}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull tma from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull tma from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %c64t = arith.constant dense<64> : tensor<128x1xi32>
    %roff = arith.muli %re, %c64t : tensor<128x1xi32>
    %cols = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%p) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}


// -----

// A one-shot all-reduce on tma.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.all_reduce @P into @C dim(0) chunks(2) backend(tma) algorithm(one_shot), expanded:
    chunk.transfer @C_p0_b0_c0 local copy_engine from <@P[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b1_c0 local copy_engine from <@P[(d0) -> (512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (512, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b0_c1 local copy_engine from <@P[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p0_b1_c1 local copy_engine from <@P[(d0) -> (768, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (768, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    // expected-error @below {{chunk-fuse-reductions: backend(tma) stages partials in the owners' buffers, which a one-shot all-reduce has none of: use backend(ldst), or algorithm(two_shot)}}
    chunk.transfer @C_p1_b0_c0 pull tma from <@P[(d0) -> (0, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(4) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b1_c0 pull tma from <@P[(d0) -> (512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (512, 0)] [256, 64]> on (d0) -> (d0) order(6) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b0_c1 pull tma from <@P[(d0) -> (256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(5) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
    chunk.transfer @C_p1_b1_c1 pull tma from <@P[(d0) -> (768, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (768, 0)] [256, 64]> on (d0) -> (d0) order(7) after [@tiles] reduce(sum) collective(all_reduce) {group = "all_reduce_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile, marked by chunk-reorder-tiles in the kernel's own order
    // (the same on every rank).
    %c0 = arith.constant 0 : i32
    %t = arith.addi %pid_m, %c0 {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
    %r = "tt.make_range"() <{end = 128 : i32, start = 0 : i32}> : () -> tensor<128xi32>
    %rs = "tt.splat"(%row) : (i32) -> tensor<128xi32>
    %rows = arith.addi %rs, %r : tensor<128xi32>
    %re = "tt.expand_dims"(%rows) <{axis = 1 : i32}> : (tensor<128xi32>) -> tensor<128x1xi32>
    %c64t = arith.constant dense<64> : tensor<128x1xi32>
    %roff = arith.muli %re, %c64t : tensor<128x1xi32>
    %cols = "tt.make_range"() <{end = 64 : i32, start = 0 : i32}> : () -> tensor<64xi32>
    %ce = "tt.expand_dims"(%cols) <{axis = 0 : i32}> : (tensor<64xi32>) -> tensor<1x64xi32>
    %rb = "tt.broadcast"(%roff) : (tensor<128x1xi32>) -> tensor<128x64xi32>
    %cb = "tt.broadcast"(%ce) : (tensor<1x64xi32>) -> tensor<128x64xi32>
    %off = arith.addi %rb, %cb : tensor<128x64xi32>
    %ps = "tt.splat"(%p) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
    %ptrs = "tt.addptr"(%ps, %off) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>) -> tensor<128x64x!tt.ptr<bf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.store"(%ptrs, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xbf16>) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

