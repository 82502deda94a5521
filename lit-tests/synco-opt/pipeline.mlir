// A textual pipeline that mixes upstream passes with a Synco pass, on a
// Triton kernel in generic form (tt is not a registered dialect).
//
// RUN: synco-opt %s --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(canonicalize,cse,synco-kernel-summary)' \
// RUN:   | FileCheck %s

// cse folds the duplicated constant, canonicalize leaves tt ops alone.
// CHECK-LABEL: "tt.func"
// CHECK:       %[[C:.*]] = arith.constant 4 : i32
// CHECK-NOT:   arith.constant 4
// CHECK:       "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK:       arith.muli %{{.*}}, %[[C]]
// CHECK:       arith.addi %{{.*}}, %[[C]]
// expected-remark @below {{kernel @scale: 1 arguments, program ids on axes [0], 0 tt.load, 1 tt.store, 0 tt.dot, 0 loops}}
"tt.func"() <{function_type = (!tt.ptr<f32>) -> (), sym_name = "scale", sym_visibility = "public"}> ({
^bb0(%arg0: !tt.ptr<f32>):
  %c4 = arith.constant 4 : i32
  %c4_dup = arith.constant 4 : i32
  %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
  %x = arith.muli %pid, %c4 : i32
  %y = arith.addi %x, %c4_dup : i32
  %p = "tt.addptr"(%arg0, %y) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
  %v = arith.constant 1.0 : f32
  "tt.store"(%p, %v) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<f32>, f32) -> ()
  "tt.return"() : () -> ()
}) : () -> ()
