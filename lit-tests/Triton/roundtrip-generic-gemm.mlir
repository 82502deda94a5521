// A real Triton GEMM (`tl.dot` over K, bf16 in, fp32 accumulate), as Triton
// 3.6 prints it in generic form with source locations and the Python
// variable names it keeps in them. synco-opt must print it back unchanged:
// this is the form Synco imports kernels in and hands them back to Triton.
//
// RUN: synco-opt %inputs/matmul.generic.mlir --mlir-print-op-generic \
// RUN:   --mlir-print-debuginfo --mlir-use-nameloc-as-prefix -o %t.mlir
// RUN: diff %inputs/matmul.generic.mlir %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
//
// Also stable through a parse/print cycle of its own output.
// RUN: synco-opt %t.mlir --mlir-print-op-generic --mlir-print-debuginfo \
// RUN:   --mlir-use-nameloc-as-prefix | diff %t.mlir -

// CHECK: #loc = loc("{{.*}}.py":{{[0-9]+}}:0)
// CHECK: "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<bf16>, !tt.ptr<bf16>, {{.*}}sym_name = "matmul_kernel", sym_visibility = "public"}>
// CHECK: ^bb0(%a_ptr: !tt.ptr<bf16> loc("a_ptr"(#loc))
// CHECK: %pid_m = "tt.get_program_id"() <{axis = 0 : i32}>
// CHECK: %pid_n = "tt.get_program_id"() <{axis = 1 : i32}>
// CHECK: "scf.for"
// CHECK: "tt.load"({{.*}}) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}>
// CHECK: "tt.dot"
// CHECK: "tt.store"
