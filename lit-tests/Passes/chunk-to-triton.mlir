// chunk-to-triton: kernel-level chunk ops become tt/arith/scf ops against
// the ABI arguments (here already bound: chunk.abi_first_arg = 1), and
// plans disappear. compile-fused-sync.mlir compiles this output to PTX.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-to-triton)' | FileCheck %s

// CHECK-NOT:  chunk.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "sync"
// CHECK:      ^bb0(%[[A:.*]]: !tt.ptr<f32>, %[[RANK:.*]]: i32, %[[W:.*]]: i32, %[[HEAP:.*]]: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %[[ERR:.*]]: !tt.ptr<i32>):
//
// chunk.peer_ptr %a, %peer: the heap bases' difference, in f32 elements
// (a multiple of 16 for Triton's alignment analysis), added to %a.
// CHECK:      %[[PEER:.*]] = arith.remsi
// CHECK:      %[[MYB:.*]] = "tt.addptr"(%[[HEAP]], %[[RANK]])
// CHECK-NEXT: %[[MY:.*]] = "tt.load"(%[[MYB]])
// CHECK-NEXT: %[[PB:.*]] = "tt.addptr"(%[[HEAP]], %[[PEER]])
// CHECK-NEXT: %[[P:.*]] = "tt.load"(%[[PB]])
// CHECK-NEXT: %[[DELTA:.*]] = arith.subi %[[P]], %[[MY]]
// CHECK-NEXT: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK-NEXT: %[[ELEMS:.*]] = arith.divsi %[[DELTA]], %[[FOUR]] {tt.divisibility = dense<16> : tensor<1xi32>}
// CHECK-NEXT: %[[PA:.*]] = "tt.addptr"(%[[A]], %[[ELEMS]]) : (!tt.ptr<f32>, i64) -> !tt.ptr<f32>
//
// chunk.wait %flags[%c], %epoch: a bounded acquire/sys spin, one PTX loop
// (reads the flag, then the error word, then the clock; sleeps 64 ns).
// CHECK:      %[[FLAG:.*]] = "tt.addptr"(%[[FLAGS]], %[[C:.*]])
// CHECK-NEXT: %[[SEEN:.*]] = "tt.elementwise_inline_asm"(%[[FLAG]], %[[EPOCH]], %[[ERR]])
// CHECK-SAME:   mov.u64 %t0, %globaltimer;\0ASYNCO_WAIT:\0A\09ld.acquire.sys.global.u32 $0, [$1];\0A\09setp.ge.s32 %done, $0, $2;
// CHECK-SAME:   ld.relaxed.gpu.global.u32 %err, [$3];
// CHECK-SAME:   setp.ge.u64 %done, %t, 10000000000;
// CHECK-SAME:   nanosleep.u32 64;\0A\09bra SYNCO_WAIT;\0ASYNCO_DONE:\0A\09}"
// CHECK-SAME:   constraints = "=r,l,r,l", packed_element = 1 : i32, pure = false} : (!tt.ptr<i32>, i32, !tt.ptr<i32>) -> i32
// CHECK-NOT:  scf.while
// CHECK:      %[[SHORT:.*]] = arith.cmpi slt, %[[SEEN]], %[[EPOCH]]
// CHECK:      scf.if %[[SHORT]]
// CHECK:        "tt.atomic_cas"(%[[ERR]], %{{.*}}, %{{.*}}) {scope = 3 : i32, sem = 4 : i32}
// CHECK:        scf.if
// CHECK:          "tt.store"
// CHECK:          "tt.store"
// CHECK:          "tt.store"
//
// chunk.signal %flags[%c], %epoch: the barrier in an asm block (no
// gpu.barrier, which stops Triton's pipeliner; no fence in every thread:
// the release covers the program's writes), release/sys exchange.
// CHECK-NOT:  gpu.barrier
// CHECK:      "tt.elementwise_inline_asm"() {asm_string = "bar.sync 0;\0A\09mov.u32 $0, 0;"
// CHECK:      "tt.atomic_rmw"(%{{.*}}, %[[EPOCH]], %{{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
//
// A relaxed, gpu-scope wait reads with ld.relaxed.gpu.
// CHECK:      asm_string = "{{.*}}SYNCO_WAIT:\0A\09ld.relaxed.gpu.global.u32 $0, [$1];
//
// chunk.wait ... count(8): the flag must reach epoch * 8.
// CHECK:      %[[EIGHT:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[TARGET:.*]] = arith.muli %[[EPOCH]], %[[EIGHT]]
// CHECK:      %[[SEEN8:.*]] = "tt.elementwise_inline_asm"(%{{.*}}, %[[TARGET]], %[[ERR]])
// CHECK:      arith.cmpi slt, %[[SEEN8]], %[[TARGET]]
//
// chunk.arrive %flags[%c]: the barrier, release/sys add of 1.
// CHECK-NOT:  gpu.barrier
// CHECK:      "tt.elementwise_inline_asm"() {asm_string = "bar.sync 0;\0A\09mov.u32 $0, 0;"
// CHECK:      %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:      "tt.atomic_rmw"(%{{.*}}, %[[ONE]], %{{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 3 : i32}
// CHECK-NOT:  chunk.abi_first_arg
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<64xf32> bind(0)
  }
  "tt.func"() <{function_type = (!tt.ptr<f32>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "sync", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<f32>, %rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %r = chunk.rank : i32
    %ws = chunk.world_size : i32
    %next = arith.addi %r, %c1 : i32
    %peer = arith.remsi %next, %ws : i32
    %pa = chunk.peer_ptr %a, %peer : !tt.ptr<f32>
    chunk.wait %flags[%c3], %epoch : !tt.ptr<i32>
    %x = "tt.load"(%pa) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
    "tt.store"(%a, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<f32>, f32) -> ()
    chunk.signal %flags[%c3], %epoch : !tt.ptr<i32>
    chunk.wait %flags[%c1], %epoch sem(relaxed) scope(gpu) : !tt.ptr<i32>
    chunk.wait %flags[%c1], %epoch count(8) : !tt.ptr<i32>
    chunk.arrive %flags[%c3] : !tt.ptr<i32>
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

func.func @outside(%flags: !tt.ptr<i32>, %e: i32) {
  // expected-error @below {{chunk-to-triton: chunk.wait must be inside a tt.func bound by chunk-bind-kernel}}
  chunk.wait %flags[%e], %e : !tt.ptr<i32>
  return
}

// -----

// A tensor of pointers: the same difference, splat.
// CHECK-LABEL: sym_name = "tensor"
// CHECK:       %[[E:.*]] = arith.divsi %{{.*}}, %{{.*}} {tt.divisibility = dense<16> : tensor<1xi32>} : i64
// CHECK-NEXT:  %[[S:.*]] = "tt.splat"(%[[E]]) : (i64) -> tensor<4xi64>
// CHECK-NEXT:  "tt.addptr"(%{{.*}}, %[[S]]) : (tensor<4x!tt.ptr<f32>>, tensor<4xi64>) -> tensor<4x!tt.ptr<f32>>
"tt.func"() <{function_type = (!tt.ptr<f32>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "tensor", sym_visibility = "public"}> ({
^bb0(%a: !tt.ptr<f32>, %rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
  %pa = "tt.splat"(%a) : (!tt.ptr<f32>) -> tensor<4x!tt.ptr<f32>>
  %q = chunk.peer_ptr %pa, %rank : tensor<4x!tt.ptr<f32>>
  "tt.store"(%q, %pa) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (tensor<4x!tt.ptr<f32>>, tensor<4x!tt.ptr<f32>>) -> ()
  "tt.return"() : () -> ()
}) {chunk.abi_first_arg = 1 : i32} : () -> ()

// -----

// A loop Triton flattens (tt.flatten) whose body ends in an op with
// regions gets a side-effecting no-op before its yield (Triton 3.6's
// loop flattening would otherwise take values used inside that last op for
// epilogue outputs and build an invalid scf.if); a flattened loop ending in
// a plain op, and a loop that is not flattened, are left alone.
// CHECK-LABEL: sym_name = "flattened"
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:         scf.if
// CHECK-NEXT:      "tt.store"
// CHECK-NEXT:    {{^ *}}}{{$}}
// CHECK-NEXT:    "tt.elementwise_inline_asm"() {asm_string = "mov.u32 $0, 0;", constraints = "=r", packed_element = 1 : i32, pure = false} : () -> i32
// CHECK-NEXT:  {{^ *}}} {tt.flatten}
// CHECK-NEXT:  scf.for
// CHECK-NEXT:    "tt.store"
// CHECK-NEXT:  {{^ *}}} {tt.flatten}
// CHECK-NEXT:  scf.for
// CHECK-NEXT:    scf.if
// CHECK-NEXT:      "tt.store"
// CHECK-NEXT:    {{^ *}}}{{$}}
// CHECK-NEXT:  {{^ *}}}{{$}}
// CHECK-NEXT:  tt.return
"tt.func"() <{function_type = (!tt.ptr<i32>, i32, i1) -> (), sym_name = "flattened", sym_visibility = "public"}> ({
^bb0(%p: !tt.ptr<i32>, %n: i32, %c: i1):
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %s = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32) : i32 {
      %a = arith.addi %acc, %k : i32
      scf.yield %a : i32
    }
    scf.if %c {
      "tt.store"(%p, %s) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<i32>, i32) -> ()
    }
  } {tt.flatten}
  scf.for %i = %c0 to %n step %c1 : i32 {
    "tt.store"(%p, %i) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<i32>, i32) -> ()
  } {tt.flatten}
  scf.for %i = %c0 to %n step %c1 : i32 {
    scf.if %c {
      "tt.store"(%p, %i) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<i32>, i32) -> ()
    }
  }
  "tt.return"() : () -> ()
}) : () -> ()

// -----

// chunk.trace: thread 0 stores %globaltimer into the event's word of the
// record (64 bytes each; none at or past `records`); wait_begin keeps the
// first time (stores only over 0); tile_begin writes the whole record: the
// other events' words cleared, the tile, %smid and %ctaid.
// CHECK-LABEL: sym_name = "traced"
// CHECK:       ^bb0(%{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !tt.ptr<i64>, %{{.*}}: !tt.ptr<i32>, %{{.*}}: i32, %{{.*}}: !tt.ptr<i32>, %[[TRACE:.*]]: !tt.ptr<i64>, %[[REC:.*]]: i32, %[[TILE:.*]]: i32):
// CHECK:       "tt.elementwise_inline_asm"(%[[TRACE]], %[[REC]], %[[TILE]])
// CHECK-SAME:    setp.eq.u32 %sy_p, %sy_x, 0;
// CHECK-SAME:    setp.lt.u32 %sy_in, $2, 128;
// CHECK-SAME:    mul.wide.u32 %sy_a, $2, 64;
// CHECK-SAME:    mov.u32 %sy_sm, %smid;
// CHECK-SAME:    @%sy_p st.global.v2.u64 [%sy_a+0], {%sy_t, 0};
// CHECK-SAME:    @%sy_p st.global.v2.u64 [%sy_a+16], {0, 0};
// CHECK-SAME:    @%sy_p st.global.v4.u32 [%sy_a+32], {0, 0, $3, %sy_sm};
// CHECK-SAME:    @%sy_p st.global.v4.u32 [%sy_a+48], {%sy_cx, %sy_cy, %sy_cz, 0};
// CHECK-SAME:    constraints = "=r,l,r,r", packed_element = 1 : i32, pure = false}
// CHECK:       asm_string = "{{.*}}@%sy_p ld.global.u64 %sy_old, [%sy_a+8];\0A\09setp.eq.and.u64 %sy_p, %sy_old, 0, %sy_p;\0A\09@%sy_p st.global.u64 [%sy_a+8], %sy_t;
// CHECK-NOT:     smid
// CHECK:       asm_string = "{{.*}}@%sy_p st.global.u64 [%sy_a+16], %sy_t;
// CHECK:       asm_string = "{{.*}}@%sy_p st.global.u64 [%sy_a+24], %sy_t;
// CHECK:       asm_string = "{{.*}}@%sy_p st.global.u64 [%sy_a+32], %sy_t;
// CHECK-NOT:   chunk.trace
"tt.func"() <{function_type = (i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<i64>, i32, i32) -> (), sym_name = "traced", sym_visibility = "public"}> ({
^bb0(%rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %trace: !tt.ptr<i64>, %record: i32, %tile: i32):
  chunk.trace tile_begin %trace[%record], %tile records(128) : !tt.ptr<i64>
  chunk.trace wait_begin %trace[%record], %tile records(128) : !tt.ptr<i64>
  chunk.trace wait_end %trace[%record], %tile records(128) : !tt.ptr<i64>
  chunk.trace signal %trace[%record], %tile records(128) : !tt.ptr<i64>
  chunk.trace tile_end %trace[%record], %tile records(128) : !tt.ptr<i64>
  "tt.return"() : () -> ()
}) {chunk.abi_first_arg = 0 : i32} : () -> ()

// -----

"tt.func"() <{function_type = (i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<i32>, i32) -> (), sym_name = "bad_trace", sym_visibility = "public"}> ({
^bb0(%rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %trace: !tt.ptr<i32>, %record: i32):
  // expected-error @below {{chunk-to-triton: a trace buffer is a scalar !tt.ptr<i64>, got !tt.ptr<i32>}}
  chunk.trace tile_begin %trace[%record], %record records(128) : !tt.ptr<i32>
  "tt.return"() : () -> ()
}) {chunk.abi_first_arg = 0 : i32} : () -> ()

// -----

// A kernel that reads through a tensor descriptor: its waits end with a
// proxy fence (the bulk tensor copies read in the async proxy what the
// wait acquired). The kernels above read through pointers: no fence.
// CHECK-LABEL: sym_name = "described"
// CHECK:       "tt.elementwise_inline_asm"
// CHECK-SAME:    bra SYNCO_WAIT;\0ASYNCO_DONE:\0A\09fence.proxy.async.global;\0A\09}"
// So does chunk.acquire.
// CHECK:       "tt.elementwise_inline_asm"() {asm_string = "fence.acquire.sys; fence.proxy.async.global; mov.u32 $0, 0;"
// CHECK:       "tt.descriptor_load"
"tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "described", sym_visibility = "public"}> ({
^bb0(%k: !tt.ptr<bf16>, %rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c1 = arith.constant 1 : i64
  %desc = "tt.make_tensor_descriptor"(%k, %c64, %c64, %c1, %c1) <{padding = 1 : i32}> : (!tt.ptr<bf16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<64x64xbf16>>
  chunk.wait %flags[%c0], %epoch : !tt.ptr<i32>
  chunk.acquire
  %x = "tt.descriptor_load"(%desc, %c0, %c0) <{cache = 1 : i32, evict = 1 : i32}> : (!tt.tensordesc<tensor<64x64xbf16>>, i32, i32) -> tensor<64x64xbf16>
  "tt.return"() : () -> ()
}) {chunk.abi_first_arg = 1 : i32} : () -> ()

// -----

// chunk.poll: one read of the flag, relaxed at the op's scope, in a
// side-effecting asm (never hoisted or merged), compared with
// epoch * count; it never blocks. chunk.agree: bar.red.and.pred on
// barrier 0, every thread's predicate in, the AND of all out (the same on
// every thread). chunk.acquire: an acquire fence at its scope (no proxy
// fence: this kernel reads through pointers).
// CHECK-LABEL: sym_name = "polled"
// CHECK:      ^bb0(%[[A:.*]]: !tt.ptr<f32>, %[[RANK:.*]]: i32, %[[W:.*]]: i32, %[[HEAP:.*]]: !tt.ptr<i64>, %[[FLAGS:.*]]: !tt.ptr<i32>, %[[EPOCH:.*]]: i32, %[[ERR:.*]]: !tt.ptr<i32>):
// CHECK:      %[[FLAG:.*]] = "tt.addptr"(%[[FLAGS]], %{{.*}})
// CHECK-NEXT: %[[SEEN:.*]] = "tt.elementwise_inline_asm"(%[[FLAG]]) {asm_string = "ld.relaxed.sys.global.u32 $0, [$1];", constraints = "=r,l", packed_element = 1 : i32, pure = false} : (!tt.ptr<i32>) -> i32
// CHECK-NEXT: %[[ARRIVED:.*]] = arith.cmpi sge, %[[SEEN]], %[[EPOCH]]
// CHECK:      %[[FOUR:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[TARGET:.*]] = arith.muli %[[EPOCH]], %[[FOUR]]
// CHECK:      %[[SEEN4:.*]] = "tt.elementwise_inline_asm"(%{{.*}}) {asm_string = "ld.relaxed.gpu.global.u32 $0, [$1];"
// CHECK-NEXT: %[[ARRIVED4:.*]] = arith.cmpi sge, %[[SEEN4]], %[[TARGET]]
// CHECK:      %[[BOTH:.*]] = arith.andi %[[ARRIVED]], %[[ARRIVED4]]
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[MINE:.*]] = arith.select %[[BOTH]], %[[ONE]], %[[ZERO]] : i32
// CHECK-NEXT: %[[AGREED:.*]] = "tt.elementwise_inline_asm"(%[[MINE]]) {asm_string = "{ .reg .pred %p<2>; setp.ne.b32 %p0, $1, 0; bar.red.and.pred %p1, 0, %p0; selp.b32 $0, 1, 0, %p1; }", constraints = "=r,r", packed_element = 1 : i32, pure = false} : (i32) -> i32
// CHECK-NEXT: %[[ZERO2:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[ALL:.*]] = arith.cmpi ne, %[[AGREED]], %[[ZERO2]] : i32
// CHECK-NEXT: scf.if %[[ALL]] {
// CHECK-NEXT: "tt.elementwise_inline_asm"() {asm_string = "fence.acquire.sys; mov.u32 $0, 0;", constraints = "=r", packed_element = 1 : i32, pure = false} : () -> i32
// CHECK:      "tt.elementwise_inline_asm"() {asm_string = "fence.acquire.gpu; mov.u32 $0, 0;"
"tt.func"() <{function_type = (!tt.ptr<f32>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "polled", sym_visibility = "public"}> ({
^bb0(%a: !tt.ptr<f32>, %rank: i32, %w: i32, %heap: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %k = chunk.poll %flags[%c1], %epoch : !tt.ptr<i32>
  %v = chunk.poll %flags[%c2], %epoch count(4) scope(gpu) : !tt.ptr<i32>
  %both = arith.andi %k, %v : i1
  %all = chunk.agree %both
  scf.if %all {
    chunk.acquire
    %x = "tt.load"(%a) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<f32>) -> f32
    "tt.store"(%a, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<f32>, f32) -> ()
    chunk.acquire scope(gpu)
  }
  "tt.return"() : () -> ()
}) {chunk.abi_first_arg = 1 : i32} : () -> ()
