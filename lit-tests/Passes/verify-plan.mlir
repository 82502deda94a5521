// chunk-verify-plan: the plan against its kernel. A plan that fits its
// kernel passes unchanged; each mismatch is refused at the plan op that
// causes it.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-verify-plan)' | FileCheck %s

// CHECK-LABEL: chunk.plan @fits
// CHECK:       chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
module {
  chunk.plan @fits world_size(2) kernel(@k) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @O : !chunk.buffer<1024x64xf32> bind(1)
    chunk.all_gather @A dim(0) chunks(2)
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @out_of_range world_size(2) kernel(@k) {
    // expected-error @below {{buffer @A binds argument 3 of @k, which has 2 arguments}}
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(3)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @wrong_type world_size(2) kernel(@k) {
    // expected-error @below {{buffer @A of f16 binds argument 0 of @k, which is !tt.ptr<bf16>, not !tt.ptr<f16>}}
    chunk.buffer @A : !chunk.buffer<1024x64xf16> bind(0)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @twice world_size(2) kernel(@k) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    // expected-error @below {{buffers @A and @B both bind argument 0 of @k}}
    chunk.buffer @B : !chunk.buffer<64x64xbf16> bind(0)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @unbound world_size(2) kernel(@k) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16>
    chunk.all_gather @A dim(0) chunks(2)
    // expected-error @below {{@A is consumed by kernel tiles but not bound to an argument of @k: add bind(i)}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<f32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %o: !tt.ptr<f32>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  // expected-error @below {{plan @missing fuses into @nope, but the module has no tt.func of that name}}
  chunk.plan @missing world_size(2) kernel(@nope) {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
  }
}

// -----

// expected-error @below {{plan @two names no kernel and the module has 0 tt.func ops: add kernel(@name)}}
chunk.plan @two world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
}

// -----

module {
  chunk.plan @unbound_partial world_size(2) kernel(@k) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16>
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-error @below {{@P is produced by kernel tiles but not bound to an argument of @k: add bind(i)}}
    chunk.produce @tiles @P dim(0) tile(128)
    chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// A buffer bound to a host tensor descriptor (the tutorial's [Z * H * N, D]
// view of a [Z * H, N, D] buffer, read in [64, 16] blocks) fits.
// CHECK-LABEL: chunk.plan @host_descriptor
// CHECK:       chunk.buffer @K : !chunk.buffer<4x256x16xbf16> bind(0)
module {
  chunk.plan @host_descriptor world_size(2) kernel(@k) {
    chunk.buffer @K : !chunk.buffer<4x256x16xbf16> bind(0)
    chunk.all_gather @K dim(1) chunks(2)
    chunk.consume @K dim(1) tile(64)
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<64x16xbf16>>, i32, i32, i64, i64) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%k: !tt.tensordesc<tensor<64x16xbf16>>, %k0: i32, %k1: i32, %k2: i64, %k3: i64):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @descriptor_element world_size(2) kernel(@k) {
    // expected-error @below {{buffer @K binds argument 0 of @k, a host tensor descriptor of 64x16xbf16 blocks, but the buffer holds f16}}
    chunk.buffer @K : !chunk.buffer<4x256x16xf16> bind(0)
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<64x16xbf16>>, i32, i32, i64, i64) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%k: !tt.tensordesc<tensor<64x16xbf16>>, %k0: i32, %k1: i32, %k2: i64, %k3: i64):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @descriptor_rank world_size(2) kernel(@k) {
    // expected-error @below {{a host tensor descriptor of 64x16xbf16 blocks, but the buffer has 1 dimensions: a descriptor views at most as many}}
    chunk.buffer @K : !chunk.buffer<16384xbf16> bind(0)
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<64x16xbf16>>, i32, i32, i64, i64) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%k: !tt.tensordesc<tensor<64x16xbf16>>, %k0: i32, %k1: i32, %k2: i64, %k3: i64):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

module {
  chunk.plan @descriptor_block world_size(2) kernel(@k) {
    // expected-error @below {{but it views the buffer as 1024x8: a block does not fit}}
    chunk.buffer @K : !chunk.buffer<4x256x8xbf16> bind(0)
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<64x16xbf16>>, i32, i32, i64, i64) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%k: !tt.tensordesc<tensor<64x16xbf16>>, %k0: i32, %k1: i32, %k2: i64, %k3: i64):
    "tt.return"() : () -> ()
  }) : () -> ()
}

// -----

// A produced buffer bound to a host descriptor fits too: the passes that
// fuse the producer rewrite the store through it as a store through
// pointers (fuse-reductions-descriptor-store.mlir).
// CHECK-LABEL: chunk.plan @descriptor_produced
// CHECK:       chunk.buffer @P : !chunk.buffer<256x16xbf16> bind(0)
module {
  chunk.plan @descriptor_produced world_size(2) kernel(@k) {
    chunk.buffer @P : !chunk.buffer<256x16xbf16> bind(0)
    chunk.buffer @O : !chunk.buffer<128x16xbf16>
    chunk.produce @tiles @P dim(0) tile(64)
    chunk.reduce_scatter @P into @O dim(0) chunks(1)
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<64x16xbf16>>, i32, i32, i64, i64) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%k: !tt.tensordesc<tensor<64x16xbf16>>, %k0: i32, %k1: i32, %k2: i64, %k3: i64):
    "tt.return"() : () -> ()
  }) : () -> ()
}
