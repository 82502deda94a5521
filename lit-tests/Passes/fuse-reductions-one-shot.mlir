// chunk-fuse-reductions, one-shot all-reduce on more than 2 ranks: every
// tile pushes its partial to every peer and adds the W partials of its rows
// in rank order. Source s's partial lands on rank r in slot
// (s - r - 1) mod W: slot 0 is r's own @P (a one-shot all-reduce never
// stores its own partial there), slots 1.. are in @P_staging, which
// chunk-expand-collectives declares and chunk-bind-kernel makes a kernel
// argument. (2 ranks: fuse-reductions.mlir.)
//
// RUN: synco-opt %s --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives,chunk-verify-plan,chunk-bind-kernel,chunk-reorder-tiles,chunk-fuse-reductions)' \
// RUN:   | FileCheck %s
// Bound before the expansion declared the staging buffer: no argument for it.
// RUN: not synco-opt %s --pass-pipeline='builtin.module(chunk-bind-kernel,chunk-expand-collectives,chunk-reorder-tiles,chunk-fuse-reductions)' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ORDER
// ORDER: fuse-reductions-one-shot.mlir:{{[0-9]+}}:5: error: chunk-fuse-reductions: a one-shot all-reduce of 4 ranks stages peers' partials in @P_staging, which is not a kernel argument; run chunk-expand-collectives and chunk-bind-kernel first

// A one-shot all-reduce of 4 ranks: each tile pushes its partial to the 3
// peers, into the slot (rank - peer - 1) mod 4 for it there: slot 0 is the
// peer's own @P, slots 1 and 2 are in @P_staging (a kernel argument after
// @C, declared by chunk-expand-collectives). The counters count the 3
// peers' 2 tiles per chunk; the sum adds the 4 partials in rank order, each
// loaded from the slot of its source (masked off for the rank's own).
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:      ^bb0(%[[P:.*]]: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %[[C:.*]]: !tt.ptr<bf16>, %[[STAGING:.*]]: !tt.ptr<bf16>):
// CHECK:      %[[PTRS:.*]] = "tt.addptr"(%{{.*}}, %{{.*}}) : (tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>)
// CHECK:      %[[V:.*]] = arith.truncf
// CHECK:      chunk.wait %[[FLAGS]][%[[ACK:.*]]], %{{.*}} count(6) : !tt.ptr<i32>
// CHECK:      scf.if
// CHECK:        %[[SLOT:.*]] = arith.remsi %{{.*}}, %{{.*}} : i32
// CHECK:        %[[TO_S:.*]] = "tt.ptr_to_int"(%[[STAGING]])
// CHECK:        %[[FROM_P:.*]] = "tt.ptr_to_int"(%[[P]])
// CHECK:        %[[PARTIALS:.*]] = arith.constant 65536 : i64
// CHECK:        %[[IS_P:.*]] = arith.cmpi eq, %[[SLOT]], %{{.*}} : i32
// CHECK:        %[[SHIFT:.*]] = arith.select %[[IS_P]], %{{.*}}, %{{.*}} {tt.divisibility = dense<16> : tensor<1xi32>} : i64
// CHECK:        %[[SLOT_PTRS:.*]] = "tt.addptr"(%[[PTRS]], %{{.*}})
// CHECK-NEXT:   %[[REMOTE:.*]] = chunk.peer_ptr %[[SLOT_PTRS]], %{{.*}} : tensor<128x64x!tt.ptr<bf16>>
// CHECK-NEXT:   "tt.store"(%[[REMOTE]], %[[V]])
// CHECK-NEXT:   %[[PF:.*]] = chunk.peer_ptr %[[FLAGS]], %{{.*}} : !tt.ptr<i32>
// CHECK-NEXT:   chunk.arrive %[[PF]][%[[ARRIVAL:.*]]] : !tt.ptr<i32>
// CHECK-COUNT-3: chunk.arrive %{{.*}}[%[[ARRIVAL]]] : !tt.ptr<i32>
// CHECK:      chunk.wait %[[FLAGS]][%[[ARRIVAL]]], %[[EPOCH]] count(6) : !tt.ptr<i32>
// CHECK-COUNT-4: "tt.load"
// CHECK:      %[[SUM:.*]] = arith.truncf %{{.*}} : tensor<128x64xf32> to tensor<128x64xbf16>
// CHECK:      "tt.store"(%{{.*}}, %[[SUM]])
// CHECK-COUNT-4: chunk.arrive %{{.*}}[%[[ACK]]] : !tt.ptr<i32>
// CHECK:      "tt.return"
// CHECK:      synco.abi_buffers = ["C", "P_staging"]
module {
  chunk.plan @p world_size(4) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index keeps the kernel's order (the same on every rank)}}
    // expected-remark @below {{tiles of @P all-reduce into @C: every tile pushes its partial to the 3 peers and adds theirs, in rank order, after 6 arrivals per chunk (counters 0..8, 2 peers' partials in @P_staging)}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.all_reduce @P into @C dim(0) chunks(1) backend(ldst) algorithm(one_shot)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    %row = arith.muli %pid_m, %c128 : i32
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
  }) : () -> ()
}
