// chunk-bind-kernel: the kernel gets the fused ABI's arguments after its
// own (function type, entry block, arg_attrs), named after them.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics --mlir-print-debuginfo \
// RUN:   --pass-pipeline='builtin.module(chunk-bind-kernel)' | FileCheck %s

// CHECK:       "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}, {}, {}, {}, {}, {}, {}],
// CHECK-SAME:  function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> ()
// CHECK-NEXT:  ^bb0(%arg0: !tt.ptr<bf16> {{.*}}, %arg1: i32 {{.*}}, %arg2: i32 loc("synco_rank"({{.*}})), %arg3: i32 loc("synco_world_size"({{.*}})), %arg4: !tt.ptr<i64> loc("synco_heap_bases"({{.*}})), %arg5: !tt.ptr<i32> loc("synco_flags"({{.*}})), %arg6: i32 loc("synco_epoch"({{.*}})), %arg7: !tt.ptr<i32> loc("synco_errors"({{.*}}))):
// CHECK-NEXT:    "tt.return"()
// CHECK-NEXT:  }) {chunk.abi_first_arg = 2 : i32}
module {
  chunk.plan @p world_size(2) kernel(@k) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  }
  "tt.func"() <{arg_attrs = [{tt.divisibility = 16 : i32}, {}], function_type = (!tt.ptr<bf16>, i32) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %n: i32):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// A plan buffer that no user argument binds (a reduce-scatter's output)
// becomes one more pointer argument, synco_buffer_<name>, listed in
// chunk.abi_buffers.
// CHECK:       function_type = (!tt.ptr<f32>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<f32>) -> ()
// CHECK:       %arg7: !tt.ptr<f32> loc("synco_buffer_C"({{.*}}))
// CHECK:       }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 1 : i32}
module {
  chunk.plan @p world_size(2) kernel(@k) {
    chunk.buffer @P : !chunk.buffer<1024x64xf32> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xf32>
    chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(copy_engine)
  }
  "tt.func"() <{function_type = (!tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// One that nothing in the plan names (a GEMM's output, declared for the
// cost model) gets no argument: the kernel writes it through its own.
// CHECK:       function_type = (!tt.ptr<f32>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> ()
// CHECK-NOT:   synco_buffer_C
// CHECK:       }) {chunk.abi_first_arg = 1 : i32}
module {
  chunk.plan @p world_size(2) kernel(@k) {
    chunk.buffer @P : !chunk.buffer<1024x64xf32> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xf32>
  }
  "tt.func"() <{function_type = (!tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  // expected-error @below {{plan @p fuses into @k, but the module has no tt.func of that name}}
  chunk.plan @p world_size(2) kernel(@k) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  }
}

// -----

// The fused code indexes buffers with 32-bit element offsets: a buffer of
// 2^31 elements is refused (2^31 - 1 would be bound).
module {
  chunk.plan @p world_size(2) kernel(@k) {
    chunk.buffer @P : !chunk.buffer<2147483647xf32> bind(0)
    // expected-error @below {{chunk-bind-kernel: @C has 2147483648 elements, more than the fused kernel's 32-bit element offsets reach (at most 2147483647): split it into buffers of at most that many}}
    chunk.buffer @C : !chunk.buffer<2147483648xf32>
  }
  "tt.func"() <{function_type = (!tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// A fusing pipeline on a kernel with no plan is an error, not a kernel
// handed back unfused.
// expected-error @below {{chunk-bind-kernel: the module has no chunk.plan, so there is nothing to fuse into its kernel (give `synco compile --plan FILE`, or leave the fusing passes out)}}
module {
  "tt.func"() <{function_type = (!tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}
