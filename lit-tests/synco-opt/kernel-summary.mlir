// synco-kernel-summary on a real Triton GEMM: one remark per tt.func.
//
// RUN: synco-opt %inputs/matmul.generic.mlir --pass-pipeline='builtin.module(synco-kernel-summary)' \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK: remark: kernel @matmul_kernel: 12 arguments, program ids on axes [0, 1], 2 tt.load, 1 tt.store, 1 tt.dot, 1 loops
// CHECK-NOT: remark
