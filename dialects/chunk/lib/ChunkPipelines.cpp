//===- ChunkPipelines.cpp - Synco's named pipelines --------------------===//
//
// `synco-fuse` fuses a plan into its kernel, down to plain TTIR: every
// chunk pass in order, then canonicalize and cse. Its options select how
// reductions move partials, what a split loop's present path runs, how
// many SM copy programs the kernel gets, whether tiles are traced, and the
// copy-engine threshold of `chunk-select-backend`. All but `trace` are
// forwarded to the pass that declares them: ChunkPasses.td lists them
// (SyncoFuseForwards), and `build.rs` generates them from the passes'
// declarations, with their types, defaults, values and descriptions. The
// older names, one per operator, are the same pipeline.
//
//===----------------------------------------------------------------------===//

#include "synco/Dialect/Chunk/ChunkPasses.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace synco::chunk {
#define GEN_PASS_REGISTRATION
#include "synco/Dialect/Chunk/ChunkPasses.h.inc"
} // namespace synco::chunk

namespace {

struct FuseOptions : public PassPipelineOptions<FuseOptions> {
  // The options that go to the passes (SyncoFuseForwards in ChunkPasses.td),
  // and `printPass`, which writes a pass with them.
#include "synco/Dialect/Chunk/SyncoFuseOptions.h.inc"

  Option<bool> trace{
      *this, "trace",
      llvm::cl::desc("Run chunk-trace-tiles (default options) before "
                     "chunk-lower-transfers"),
      llvm::cl::init(false)};
};

/// The pass list of `synco-fuse` with these options, as text, so that each
/// option is parsed and range-checked by the pass that declares it.
std::string fusePipeline(const FuseOptions &options) {
  SmallVector<StringRef> passes = {
      "chunk-select-backend", "chunk-select-chunk-size",
      "chunk-expand-collectives", "chunk-verify-plan", "chunk-bind-kernel",
      "chunk-reorder-tiles", "chunk-insert-waits", "chunk-fuse-reductions",
      "chunk-fuse-gathers"};
  if (options.trace)
    passes.push_back("chunk-trace-tiles");
  passes.append({"chunk-lower-transfers", "chunk-carry-pointers",
                 "chunk-to-triton", "canonicalize", "cse"});
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      passes, os, [&](StringRef pass) { options.printPass(os, pass); }, ",");
  return text;
}

LogicalResult
buildFusePipeline(OpPassManager &pm, StringRef optionText,
                  function_ref<LogicalResult(const Twine &)> errorHandler) {
  FuseOptions options;
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  // llvm::cl reports a bad value itself, on stderr.
  if (failed(options.parseFromString(optionText, errorStream)))
    return errorHandler("synco-fuse: bad options `" + optionText + "` " +
                        errors);
  if (failed(parsePassPipeline(fusePipeline(options), pm, errorStream)))
    return errorHandler("synco-fuse: " + errors);
  return success();
}

void registerFusePipeline(StringRef name, StringRef description) {
  registerPassPipeline(
      name, description, buildFusePipeline,
      [](function_ref<void(const detail::PassOptions &)> printOptions) {
        printOptions(FuseOptions());
      });
}

} // namespace

void synco::chunk::registerPassesAndPipelines() {
  registerChunkPasses();
  registerFusePipeline(
      "synco-fuse",
      "Fuse every chunk.plan of the module into its kernel, down to plain "
      "TTIR (all chunk passes in order, then canonicalize and cse)");
  // One name per operator, from before `synco-fuse`: the same pipeline.
  for (const char *alias : {"synco-ag-gemm", "synco-gemm-rs",
                            "synco-gemm-rs-gather", "synco-gemm-ar-gather",
                            "synco-gemm-ar"})
    registerFusePipeline(alias, "Alias of synco-fuse");
}
