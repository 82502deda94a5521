//===- Plugin.cpp - The chunk dialect as an mlir-opt plugin ------------===//
//
//   mlir-opt --load-dialect-plugin=libSyncoChunkPlugin.so input.mlir
//
//===----------------------------------------------------------------------===//

#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "SyncoChunk", LLVM_VERSION_STRING,
          [](::mlir::DialectRegistry *registry) {
            registry->insert<::synco::chunk::ChunkDialect>();
          }};
}
