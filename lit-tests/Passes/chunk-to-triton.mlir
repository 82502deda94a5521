// chunk-to-triton: kernel-level chunk ops become tt/arith/scf ops against
// the ABI arguments (here already bound: synco.abi_first_arg = 1), and
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
// chunk.wait %flags[%c], %epoch: a bounded acquire/sys spin.
// CHECK:      %[[FLAG:.*]] = "tt.addptr"(%[[FLAGS]], %[[C:.*]])
// CHECK:      %[[START:.*]] = "tt.elementwise_inline_asm"() {asm_string = "mov.u64 $0, %globaltimer;", constraints = "=l", packed_element = 1 : i32, pure = false} : () -> i64
// CHECK:      scf.while
// CHECK:        arith.cmpi slt, %{{.*}}, %[[EPOCH]]
// CHECK:        "tt.elementwise_inline_asm"(%[[ERR]]) {asm_string = "ld.relaxed.gpu.global.u32 $0, [$1];"
// CHECK:        scf.condition
// CHECK:      } do {
// CHECK:        "tt.elementwise_inline_asm"(%[[FLAG]]) {asm_string = "nanosleep.u32 64;\0A\09ld.acquire.sys.global.u32 $0, [$1];", constraints = "=r,l"
// CHECK:      scf.if
// CHECK:        "tt.atomic_cas"(%[[ERR]], %{{.*}}, %{{.*}}) {scope = 3 : i32, sem = 4 : i32}
// CHECK:        scf.if
// CHECK:          "tt.store"
// CHECK:          "tt.store"
// CHECK:          "tt.store"
//
// chunk.signal %flags[%c], %epoch: barrier, fence, release/sys exchange.
// CHECK:      gpu.barrier
// CHECK-NEXT: "tt.elementwise_inline_asm"() {asm_string = "fence.acq_rel.sys;\0A\09mov.u32 $0, 0;"
// CHECK:      "tt.atomic_rmw"(%{{.*}}, %[[EPOCH]], %{{.*}}) {atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}
//
// A relaxed, gpu-scope wait reads with ld.relaxed.gpu.
// CHECK:      asm_string = "nanosleep.u32 64;\0A\09ld.relaxed.gpu.global.u32 $0, [$1];", constraints = "=r,l"
//
// chunk.wait ... count(8): the flag must reach epoch * 8.
// CHECK:      %[[EIGHT:.*]] = arith.constant 8 : i32
// CHECK-NEXT: %[[TARGET:.*]] = arith.muli %[[EPOCH]], %[[EIGHT]]
// CHECK:      scf.while
// CHECK:        arith.cmpi slt, %{{.*}}, %[[TARGET]]
//
// chunk.arrive %flags[%c]: barrier, fence, release/sys add of 1.
// CHECK:      gpu.barrier
// CHECK-NEXT: "tt.elementwise_inline_asm"() {asm_string = "fence.acq_rel.sys;\0A\09mov.u32 $0, 0;"
// CHECK:      %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:      "tt.atomic_rmw"(%{{.*}}, %[[ONE]], %{{.*}}) {atomic_rmw_op = 4 : i32, scope = 3 : i32, sem = 3 : i32}
// CHECK-NOT:  synco.abi_first_arg
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
  }) {synco.abi_first_arg = 1 : i32} : () -> ()
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
}) {synco.abi_first_arg = 1 : i32} : () -> ()
