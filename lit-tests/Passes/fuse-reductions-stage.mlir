// chunk-fuse-reductions{mode=stage}: a reduce-scatter on ldst staged like
// the copy engine's (see fuse-reductions-copy-engine.mlir, same flags),
// but moved by the fused kernel's own SM copy programs. The pass marks the
// plan (synco.staged), declares the owners' @P_staging (W - 1 = 1 block of
// @P, kernel-owned) with its kernel argument, rewrites the tiles as for
// the copy engine, and records the copies the side stream would run;
// chunk-lower-transfers then gives the kernel `copy-programs` programs in
// front of its grid that run them: rank r's programs take rank r's list
// in order, wait for the chunk's tiles (produced[g] >= epoch * 2) and for
// the owner's reads of the previous epoch (consumed[g] >= (epoch - 1) * 2),
// store 16384-element blocks into the owner's @P_staging through the peer
// mapping, count themselves on counter 20 + i (acq_rel/sys), and the last
// sets the owner's arrived[g * 2 + r] and its own copied[g] to the epoch
// (release/sys). The host has no reduction copies left to run.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives,chunk-verify-plan,chunk-bind-kernel,chunk-reorder-tiles,chunk-fuse-reductions{mode=stage})' \
// RUN:   | FileCheck %s
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives,chunk-bind-kernel,chunk-reorder-tiles,chunk-fuse-reductions{mode=stage},chunk-lower-transfers{copy-programs=4})' \
// RUN:   | FileCheck %s --check-prefix=PROGRAMS

// CHECK-LABEL: chunk.plan @p
// CHECK-SAME:  synco.staged = ["P"]
// CHECK:       chunk.buffer @C
// CHECK-NEXT:  chunk.buffer @P_staging : !chunk.buffer<512x64xbf16> {synco.staging}
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:       ^bb0(%[[P:.*]]: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %{{.*}}: !tt.ptr<bf16>, %[[STAGING:.*]]: !tt.ptr<bf16>):
// Own rows wait for the copy programs' flag, then add from @P_staging.
// CHECK:       chunk.wait %[[FLAGS]][%{{.*}}], %[[EPOCH]] : !tt.ptr<i32>
// CHECK:       "tt.ptr_to_int"(%[[STAGING]])
// CHECK:       arith.addf
// Other rows store in place once last epoch's copy read them, and count.
// CHECK:       } else {
// CHECK:         %[[C16:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[COPIED:.*]] = arith.addi %{{.*}}, %[[C16]] : i32
// CHECK-NEXT:    chunk.wait %[[FLAGS]][%[[COPIED]]], %{{.*}} : !tt.ptr<i32>
// CHECK-NEXT:    "tt.store"
// CHECK-NEXT:    chunk.arrive %[[FLAGS]][%{{.*}}] : !tt.ptr<i32>

// The schedule: 4 copy programs, counters after the 20 flags, nothing for
// the side stream.
// PROGRAMS:      \22copy_programs\22:4
// PROGRAMS-SAME: \22num_flags\22:40
// PROGRAMS-SAME: \22reduction_copies\22:[]
// PROGRAMS-LABEL: "tt.func"
// PROGRAMS:      ^bb0(%[[P:.*]]: !tt.ptr<bf16>, %{{.*}}: i32, %[[RANK:.*]]: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %{{.*}}: !tt.ptr<i32>, %{{.*}}: !tt.ptr<bf16>, %[[STAGING:.*]]: !tt.ptr<bf16>):
// PROGRAMS:      %[[PID:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// PROGRAMS:      %[[C4:.*]] = arith.constant 4 : i32
// PROGRAMS-NEXT: %[[COPIER:.*]] = arith.cmpi slt, %[[PID]], %[[C4]]
// PROGRAMS-NEXT: %[[COMPUTE:.*]] = arith.subi %[[PID]], %[[C4]]
// PROGRAMS:      scf.if %[[COPIER]] {
// Rank 0's list: its partial of rank 1's chunk 2, then chunk 3.
// PROGRAMS:        %[[R0:.*]] = arith.cmpi eq, %[[RANK]], %{{.*}}
// PROGRAMS:        scf.if %[[R0]] {
// PROGRAMS:          %[[C2:.*]] = arith.constant 2 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C2]]], %[[EPOCH]] count(2)
// PROGRAMS:          %[[C14:.*]] = arith.constant 14 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C14]]], %{{.*}} count(2)
// Rows 512.. of @P (element 32768) into slot 0 of rank 1's @P_staging.
// PROGRAMS:          %[[SRC_OFF:.*]] = arith.constant 32768 : i64
// PROGRAMS-NEXT:     %[[SRC:.*]] = "tt.addptr"(%[[P]], %[[SRC_OFF]])
// PROGRAMS:          %[[DST:.*]] = "tt.addptr"(%[[STAGING]], %{{.*}})
// PROGRAMS-NEXT:     %[[REMOTE:.*]] = chunk.peer_ptr %[[DST]], %{{.*}} : !tt.ptr<bf16>
// PROGRAMS:          scf.for %{{.*}} = %[[PID]] to %{{.*}} step %[[C4]]
// PROGRAMS:            "tt.make_range"() {end = 16384 : i32, start = 0 : i32}
// PROGRAMS:            "tt.splat"(%[[SRC]])
// PROGRAMS:            "tt.load"
// PROGRAMS:            "tt.splat"(%[[REMOTE]])
// PROGRAMS:            "tt.store"
// PROGRAMS:          %[[C20:.*]] = arith.constant 20 : i32
// PROGRAMS-NEXT:     gpu.barrier
// PROGRAMS-NEXT:     %[[COUNTER:.*]] = "tt.addptr"(%[[FLAGS]], %[[C20]])
// PROGRAMS:          "tt.atomic_rmw"(%[[COUNTER]], {{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 4 : i32}
// PROGRAMS:          arith.remsi
// PROGRAMS:          scf.if
// PROGRAMS:            %[[OWNER_FLAGS:.*]] = chunk.peer_ptr %[[FLAGS]], %{{.*}} : !tt.ptr<i32>
// PROGRAMS-NEXT:       %[[C8:.*]] = arith.constant 8 : i32
// PROGRAMS-NEXT:       %[[ARRIVED:.*]] = "tt.addptr"(%[[OWNER_FLAGS]], %[[C8]])
// PROGRAMS:            "tt.atomic_rmw"(%[[ARRIVED]], %[[EPOCH]], {{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
// PROGRAMS:            %[[C18:.*]] = arith.constant 18 : i32
// PROGRAMS-NEXT:       %[[COPIED:.*]] = "tt.addptr"(%[[FLAGS]], %[[C18]])
// PROGRAMS:            "tt.atomic_rmw"(%[[COPIED]], %[[EPOCH]], {{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
// PROGRAMS:          %[[C3:.*]] = arith.constant 3 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C3]]], %[[EPOCH]] count(2)
// PROGRAMS:          %[[C21:.*]] = arith.constant 21 : i32
// Rank 1's list.
// PROGRAMS:        scf.if
// PROGRAMS:          %[[C0:.*]] = arith.constant 0 : i32
// PROGRAMS-NEXT:     chunk.wait %[[FLAGS]][%[[C0]]], %[[EPOCH]] count(2)
// The GEMM's programs come after the copy programs.
// PROGRAMS:      } else {
// PROGRAMS:        arith.divsi %[[COMPUTE]]
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index}}
    // expected-remark @below {{tiles of @P reduce into @C: other rows store their partial and count it; the kernel's copy programs move each finished chunk to its owner; own rows add 1 peer partial(s) per tile after 1 copy-program flag(s) per chunk}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst)
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

// -----

// A one-shot all-reduce has no owner to stage for.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<1024x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index}}
    chunk.produce @tiles @P dim(0) tile(128)
    // expected-error @below {{mode=stage moves a reduce-scatter or a two-shot all-reduce; this one-shot all-reduce needs mode=push or pull}}
    chunk.all_reduce @P into @C dim(0) chunks(2) backend(ldst) algorithm(one_shot)
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

// -----

// The plan already has a buffer of the staging buffer's name.
module {
  // expected-error @below {{the staging buffer @P_staging would clash with the plan's buffer of that name}}
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    chunk.buffer @P_staging : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{tiles of @P: the row tile index}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst)
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
