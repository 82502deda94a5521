// A produced all-to-all pulled by the copy programs (chunk-fuse-gathers
// on ldst, then chunk-lower-transfers): rank r's programs pull chunk c of
// block r of the peer's @X once the peer's counter of that chunk (flag
// r * 2 + c there) counts its 2 tiles, into @Y at the peer's columns;
// then the rank's own block, from its own counters. The programs wait for
// other ranks' tiles: the schedule says copy_programs_forward.
//
// RUN: synco-opt %s --pass-pipeline='builtin.module(chunk-fuse-gathers,chunk-lower-transfers{copy-programs=2})' \
// RUN:   2>/dev/null | FileCheck %s

// CHECK:       copy_programs = 2 : i64
// CHECK-SAME:  copy_programs_forward = true
// CHECK-LABEL: "tt.func"
// CHECK:       scf.if
// The peer's block first: its rank, its flags, chunk = row / 128 + 0.
// CHECK:       %[[PEER:.*]] = arith.remsi
// CHECK:       %[[PEER_FLAGS:.*]] = chunk.peer_ptr %{{.*}}, %[[PEER]] : !tt.ptr<i32>
// CHECK-NEXT:  chunk.wait %[[PEER_FLAGS]][%{{.*}}], %{{.*}} count(2)
// CHECK:       "tt.load"
// CHECK:       "tt.store"
// CHECK:       chunk.peer_ptr %{{.*}}, %{{.*}} : !tt.ptr<i32>
// CHECK-NEXT:  chunk.wait %{{.*}}[%{{.*}}], %{{.*}} count(2)
// The own block last, from this rank's own counters.
// CHECK:       %[[OWN_FLAGS:.*]] = chunk.peer_ptr %{{.*}}, %arg2 : !tt.ptr<i32>
// CHECK-NEXT:  chunk.wait %[[OWN_FLAGS]][%{{.*}}], %{{.*}} count(2)
// CHECK:       } else {
// CHECK:       chunk.arrive
module {
  chunk.plan @reshard_pulled world_size(2) {
    chunk.buffer @X : !chunk.buffer<512x128xbf16> bind(0)
    chunk.buffer @Y : !chunk.buffer<256x256xbf16>
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

