//===- ChunkPipelines.cpp - Synco's named pipelines --------------------===//
//
// `synco-fuse` fuses a plan into its kernel, down to plain TTIR: every
// chunk pass in order, then canonicalize and cse. Its options select how
// reductions move partials, what a split loop's present path runs, how
// many SM copy programs the kernel gets,
// whether tiles are traced, and the copy-engine threshold of
// `chunk-select-backend`; each is forwarded to the pass that declares it
// (and that pass's declaration in ChunkPasses.td gives its default and
// range). The older names, one per operator, are the same pipeline.
//
//===----------------------------------------------------------------------===//

#include "synco/Dialect/Chunk/ChunkPasses.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace synco::chunk {
#define GEN_PASS_REGISTRATION
#include "synco/Dialect/Chunk/ChunkPasses.h.inc"
} // namespace synco::chunk

namespace {

using synco::chunk::PresentPath;
using synco::chunk::PresentSplit;
using synco::chunk::ReductionMode;

struct FuseOptions : public PassPipelineOptions<FuseOptions> {
  Option<ReductionMode> reductionMode{
      *this, "reduction-mode",
      llvm::cl::desc("chunk-fuse-reductions' mode: how the partials of a "
                     "reduction on ldst reach their owner"),
      llvm::cl::init(synco::chunk::ChunkFuseReductionsOptions().mode),
      llvm::cl::values(
          clEnumValN(ReductionMode::push, "push",
                     "tiles store partials into their owner's memory"),
          clEnumValN(ReductionMode::pull, "pull",
                     "owners load partials from the producers"),
          clEnumValN(ReductionMode::stage, "stage",
                     "the kernel's SM copy programs move finished chunks"))};
  Option<std::string> copyPrograms{
      *this, "copy-programs",
      llvm::cl::desc("chunk-lower-transfers' copy-programs: SM programs of "
                     "the fused kernel that copy ldst and tma chunks (a "
                     "count, or auto)"),
      llvm::cl::init(synco::chunk::ChunkLowerTransfersOptions().copyPrograms)};
  Option<int64_t> copyEngineMinBytes{
      *this, "copy-engine-min-bytes",
      llvm::cl::desc("chunk-select-backend's threshold for backend(auto)"),
      llvm::cl::init(
          synco::chunk::ChunkSelectBackendOptions().copyEngineMinBytes)};
  Option<PresentPath> presentPath{
      *this, "present-path",
      llvm::cl::desc("chunk-reorder-tiles' present-path: what a program runs "
                     "when every chunk its split loop reads is present"),
      llvm::cl::init(synco::chunk::ChunkReorderTilesOptions().presentPath),
      llvm::cl::values(
          clEnumValN(PresentPath::arrival, "arrival",
                     "the split's iterations in its order, in fewer loops"),
          clEnumValN(PresentPath::none, "none", "the split loop only"))};
  Option<int64_t> maxUnrolledChunks{
      *this, "max-unrolled-chunks",
      llvm::cl::desc("chunk-reorder-tiles' max-unrolled-chunks: the most "
                     "chunks of a split loop that is unrolled"),
      llvm::cl::init(
          synco::chunk::ChunkReorderTilesOptions().maxUnrolledChunks)};
  Option<PresentSplit> presentSplit{
      *this, "present-split",
      llvm::cl::desc("chunk-reorder-tiles' present-split: whether the split "
                     "beside a present path unrolls"),
      llvm::cl::init(synco::chunk::ChunkReorderTilesOptions().presentSplit),
      llvm::cl::values(
          clEnumValN(PresentSplit::automatic, "auto",
                     "unrolled where its loop runs to a kernel argument"),
          clEnumValN(PresentSplit::rolled, "rolled", "rolled"),
          clEnumValN(PresentSplit::unrolled, "unrolled", "unrolled"))};
  Option<bool> trace{
      *this, "trace",
      llvm::cl::desc("Run chunk-trace-tiles (default options) before "
                     "chunk-lower-transfers"),
      llvm::cl::init(false)};
};

/// The pass list of `synco-fuse` with these options, as text, so that each
/// option is parsed and range-checked by the pass that declares it.
std::string fusePipeline(const FuseOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "chunk-select-backend{copy-engine-min-bytes="
     << options.copyEngineMinBytes
     << "},chunk-select-chunk-size,chunk-expand-collectives,"
        "chunk-verify-plan,chunk-bind-kernel,chunk-reorder-tiles{present-path="
     << synco::chunk::stringifyPresentPath(options.presentPath)
     << " max-unrolled-chunks=" << options.maxUnrolledChunks
     << " present-split="
     << synco::chunk::stringifyPresentSplit(options.presentSplit)
     << "},chunk-insert-waits,chunk-fuse-reductions{mode="
     << synco::chunk::stringifyReductionMode(options.reductionMode)
     << "},chunk-fuse-gathers,"
     << (options.trace ? "chunk-trace-tiles," : "")
     << "chunk-lower-transfers{copy-programs=" << options.copyPrograms
     << "},chunk-carry-pointers,chunk-to-triton,canonicalize,cse";
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
