// Other MLIR compilers embed the chunk dialect as a plugin: upstream
// mlir-opt 22 loads libSyncoChunkPlugin.so, then parses, verifies (the plan
// verifier included) and prints chunk ops.
//
// RUN: %mlir-opt --load-dialect-plugin=%chunk_plugin %s | FileCheck %s
// RUN: %mlir-opt --load-dialect-plugin=%chunk_plugin %s --mlir-print-op-generic \
// RUN:   | %mlir-opt --load-dialect-plugin=%chunk_plugin | FileCheck %s
// RUN: %mlir-opt --load-dialect-plugin=%chunk_plugin %S/plan-verify.mlir \
// RUN:   --split-input-file --verify-diagnostics -o /dev/null
// Without the plugin, mlir-opt does not know the dialect:
// RUN: not %mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: Dialect `chunk' not found for custom op 'chunk.plan'

// CHECK-LABEL: chunk.plan @ag world_size(2) {
// CHECK-NEXT:    chunk.buffer @A : !chunk.buffer<1024x512xbf16> bind(0)
// CHECK-NEXT:    chunk.all_gather @A dim(0) chunks(2) backend(tma)
// CHECK-NEXT:    chunk.consume @A dim(0) tile(128)
// CHECK:       func.func @sync
// CHECK-NEXT:    %[[R:.*]] = chunk.rank : i32
// CHECK-NEXT:    chunk.signal %arg0[%[[R]]], %[[R]] : memref<i32>
chunk.plan @ag world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x512xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(2) backend(tma)
  chunk.consume @A dim(0) tile(128)
}
func.func @sync(%flag: memref<i32>) {
  %r = chunk.rank : i32
  chunk.signal %flag[%r], %r : memref<i32>
  return
}
