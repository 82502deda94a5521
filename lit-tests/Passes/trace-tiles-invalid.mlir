// chunk-trace-tiles refuses what it cannot instrument.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-trace-tiles)'
// RUN: not synco-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(chunk-trace-tiles{records=0})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=RECORDS
// RECORDS: error: chunk-trace-tiles: option records must be in 1..2147483647, not 0
// RECORDS: failed to add `chunk-trace-tiles` with options `records=0`

// Not bound yet (chunk-bind-kernel did not run).
module {
  // expected-error @below {{chunk-trace-tiles: the kernel has no ABI arguments; run chunk-bind-kernel first}}
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// After chunk-bind-kernel, but without a marked tile index
// (chunk-reorder-tiles did not run).
module {
  // expected-error @below {{chunk-trace-tiles: the kernel has no marked tile index; run chunk-reorder-tiles first}}
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.all_gather @A dim(0) chunks(2)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}
