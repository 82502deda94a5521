// chunk-carry-pointers: a pointer the kernel moved by the loop's step
// (`k_ptrs += 64 * stride`), which chunk-bind-kernel rewrote to
// `p0 + v * stride` and marked `chunk.moved_pointer`, is carried again by
// its loop: the dead iteration value it came from starts at
// `p0 + lower * stride` and its uses read that value. Anything else is left
// at the variable, the marker gone.
//
// RUN: synco-opt %s --split-input-file --pass-pipeline='builtin.module(chunk-carry-pointers)' \
// RUN:   | FileCheck %s

// A loop clipped to a chunk, from %first: the pointer starts at
// p0 + first * stride, moves by 64 * stride, and the load reads it.
// CHECK-LABEL: sym_name = "clipped"
// CHECK:      ^bb0(%[[P0:.*]]: tensor<64x!tt.ptr<bf16>>, %[[X:.*]]: i32, %[[FIRST:.*]]: i32, %[[END:.*]]: i32):
// CHECK:      %[[OFF:.*]] = arith.muli %[[FIRST]], %[[X]] : i32
// CHECK-NEXT: %[[SPLAT:.*]] = "tt.splat"(%[[OFF]]) : (i32) -> tensor<64xi32>
// CHECK-NEXT: %[[INIT:.*]] = "tt.addptr"(%[[P0]], %[[SPLAT]])
// CHECK-NEXT: scf.for %{{.*}} = %[[FIRST]] to %[[END]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[PTR:.*]] = %[[INIT]])
// CHECK-NEXT: %[[V:.*]] = "tt.load"(%[[PTR]])
// CHECK:      %[[NEXT:.*]] = "tt.addptr"(%[[PTR]], %{{.*}})
// CHECK-NEXT: scf.yield %{{.*}}, %[[NEXT]]
// CHECK-NOT:  chunk.moved_pointer
"tt.func"() <{function_type = (tensor<64x!tt.ptr<bf16>>, i32, i32, i32) -> (), sym_name = "clipped"}> ({
^bb0(%p0: tensor<64x!tt.ptr<bf16>>, %x: i32, %first: i32, %end: i32):
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %r:2 = scf.for %v = %first to %end step %c64 iter_args(%acc = %zero, %moved = %p0) -> (tensor<64xf32>, tensor<64x!tt.ptr<bf16>>) : i32 {
    %off = arith.muli %v, %x : i32
    %offs = "tt.splat"(%off) : (i32) -> tensor<64xi32>
    %ptr = "tt.addptr"(%p0, %offs) {chunk.moved_pointer} : (tensor<64x!tt.ptr<bf16>>, tensor<64xi32>) -> tensor<64x!tt.ptr<bf16>>
    %val = "tt.load"(%ptr) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<64x!tt.ptr<bf16>>) -> tensor<64xbf16>
    %f = arith.extf %val : tensor<64xbf16> to tensor<64xf32>
    %sum = arith.addf %acc, %f : tensor<64xf32>
    %by = arith.muli %x, %c64 : i32
    %bys = "tt.splat"(%by) : (i32) -> tensor<64xi32>
    %next = "tt.addptr"(%ptr, %bys) : (tensor<64x!tt.ptr<bf16>>, tensor<64xi32>) -> tensor<64x!tt.ptr<bf16>>
    scf.yield %sum, %next : tensor<64xf32>, tensor<64x!tt.ptr<bf16>>
  }
  "tt.return"() : () -> ()
}) : () -> ()

// -----

// From 0, with an i64 stride (the variable sign-extended): the pointer
// starts at p0 itself.
// CHECK-LABEL: sym_name = "from_zero"
// CHECK:      ^bb0(%[[P0:.*]]: tensor<64x!tt.ptr<bf16>>, %[[X:.*]]: i64, %[[END:.*]]: i32):
// CHECK-NOT:  arith.extsi
// CHECK:      scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args(%[[PTR:.*]] = %[[P0]])
// CHECK-NOT:  arith.extsi
// CHECK-NEXT: "tt.load"(%[[PTR]])
// CHECK-NOT:  chunk.moved_pointer
"tt.func"() <{function_type = (tensor<64x!tt.ptr<bf16>>, i64, i32) -> (), sym_name = "from_zero"}> ({
^bb0(%p0: tensor<64x!tt.ptr<bf16>>, %x: i64, %end: i32):
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c64l = arith.constant 64 : i64
  %r = scf.for %v = %c0 to %end step %c64 iter_args(%moved = %p0) -> (tensor<64x!tt.ptr<bf16>>) : i32 {
    %vl = arith.extsi %v : i32 to i64
    %off = arith.muli %vl, %x : i64
    %offs = "tt.splat"(%off) : (i64) -> tensor<64xi64>
    %ptr = "tt.addptr"(%p0, %offs) {chunk.moved_pointer} : (tensor<64x!tt.ptr<bf16>>, tensor<64xi64>) -> tensor<64x!tt.ptr<bf16>>
    %val = "tt.load"(%ptr) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<64x!tt.ptr<bf16>>) -> tensor<64xbf16>
    %by = arith.muli %c64l, %x : i64
    %bys = "tt.splat"(%by) : (i64) -> tensor<64xi64>
    %next = "tt.addptr"(%ptr, %bys) : (tensor<64x!tt.ptr<bf16>>, tensor<64xi64>) -> tensor<64x!tt.ptr<bf16>>
    scf.yield %next : tensor<64x!tt.ptr<bf16>>
  }
  "tt.return"() : () -> ()
}) : () -> ()

// -----

// The loop yields the pointer moved by twice its step (not the kernel's
// moved value): left at the variable, the marker gone.
// CHECK-LABEL: sym_name = "other_step"
// CHECK:      scf.for %[[V:.*]] = %{{.*}} iter_args(%{{.*}} = %[[P0:[^ )]*]])
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[V]]
// CHECK-NEXT: %[[SPLAT:.*]] = "tt.splat"(%[[OFF]])
// CHECK-NEXT: %[[PTR:.*]] = "tt.addptr"(%[[P0]], %[[SPLAT]]) : (
// CHECK-NEXT: "tt.load"(%[[PTR]])
// CHECK-NOT:  chunk.moved_pointer
"tt.func"() <{function_type = (tensor<64x!tt.ptr<bf16>>, i32, i32, i32) -> (), sym_name = "other_step"}> ({
^bb0(%p0: tensor<64x!tt.ptr<bf16>>, %x: i32, %first: i32, %end: i32):
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %r = scf.for %v = %first to %end step %c64 iter_args(%moved = %p0) -> (tensor<64x!tt.ptr<bf16>>) : i32 {
    %off = arith.muli %v, %x : i32
    %offs = "tt.splat"(%off) : (i32) -> tensor<64xi32>
    %ptr = "tt.addptr"(%p0, %offs) {chunk.moved_pointer} : (tensor<64x!tt.ptr<bf16>>, tensor<64xi32>) -> tensor<64x!tt.ptr<bf16>>
    %val = "tt.load"(%ptr) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<64x!tt.ptr<bf16>>) -> tensor<64xbf16>
    %by = arith.muli %x, %c128 : i32
    %bys = "tt.splat"(%by) : (i32) -> tensor<64xi32>
    %next = "tt.addptr"(%ptr, %bys) : (tensor<64x!tt.ptr<bf16>>, tensor<64xi32>) -> tensor<64x!tt.ptr<bf16>>
    scf.yield %next : tensor<64x!tt.ptr<bf16>>
  }
  "tt.return"() : () -> ()
}) : () -> ()

// -----

// The iteration value is still read in the loop: left at the variable.
// CHECK-LABEL: sym_name = "still_read"
// CHECK:      scf.for %[[V:.*]] = %{{.*}} iter_args(%[[MOVED:[^ ]*]] = %[[P0:[^ )]*]])
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[V]]
// CHECK-NEXT: %[[SPLAT:.*]] = "tt.splat"(%[[OFF]])
// CHECK-NEXT: %[[PTR:.*]] = "tt.addptr"(%[[P0]], %[[SPLAT]]) : (
// CHECK-NEXT: "tt.load"(%[[PTR]])
// CHECK-NEXT: "tt.load"(%[[MOVED]])
// CHECK-NOT:  chunk.moved_pointer
"tt.func"() <{function_type = (tensor<64x!tt.ptr<bf16>>, i32, i32, i32) -> (), sym_name = "still_read"}> ({
^bb0(%p0: tensor<64x!tt.ptr<bf16>>, %x: i32, %first: i32, %end: i32):
  %c64 = arith.constant 64 : i32
  %r = scf.for %v = %first to %end step %c64 iter_args(%moved = %p0) -> (tensor<64x!tt.ptr<bf16>>) : i32 {
    %off = arith.muli %v, %x : i32
    %offs = "tt.splat"(%off) : (i32) -> tensor<64xi32>
    %ptr = "tt.addptr"(%p0, %offs) {chunk.moved_pointer} : (tensor<64x!tt.ptr<bf16>>, tensor<64xi32>) -> tensor<64x!tt.ptr<bf16>>
    %val = "tt.load"(%ptr) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<64x!tt.ptr<bf16>>) -> tensor<64xbf16>
    %val2 = "tt.load"(%moved) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<64x!tt.ptr<bf16>>) -> tensor<64xbf16>
    %by = arith.muli %x, %c64 : i32
    %bys = "tt.splat"(%by) : (i32) -> tensor<64xi32>
    %next = "tt.addptr"(%ptr, %bys) : (tensor<64x!tt.ptr<bf16>>, tensor<64xi32>) -> tensor<64x!tt.ptr<bf16>>
    scf.yield %next : tensor<64x!tt.ptr<bf16>>
  }
  "tt.return"() : () -> ()
}) : () -> ()
