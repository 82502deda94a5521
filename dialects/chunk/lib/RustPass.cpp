//===- RustPass.cpp - Passes written in Rust, registered by name -------===//
//
// MLIR's C API can create a pass from callbacks (`mlirCreateExternalPass`),
// but cannot put it in the global pass registry, and such a pass has no
// options. `RustPass` is a plain `mlir::Pass` whose body is a Rust callback
// and whose options are declared at registration time, so a Rust pass is
// used exactly like a C++ one:
//
//   synco-opt --pass-pipeline='builtin.module(chunk-select-chunk-size{chunks-per-rank=4})'
//
//===----------------------------------------------------------------------===//

#include "synco-c/Synco.h"
#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSet.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace mlir;

namespace {

struct OptionSpec {
  std::string name, description, defaultValue;
};

/// Everything the registry needs to construct a Rust pass; lives forever.
struct RustPassDescriptor {
  TypeID typeID;
  std::string argument, description, opName;
  std::vector<OptionSpec> options;
  SyncoRustPassRunFn run;
  void *userData;
};

TypeIDAllocator &rustPassTypeIDs() {
  static TypeIDAllocator allocator;
  return allocator;
}

class RustPass : public Pass {
public:
  explicit RustPass(const RustPassDescriptor &desc)
      : Pass(desc.typeID, StringRef(desc.opName)), desc(desc) {
    for (const OptionSpec &spec : desc.options)
      options.push_back(std::make_unique<Option<std::string>>(
          *this, spec.name, llvm::cl::desc(spec.description),
          llvm::cl::init(spec.defaultValue)));
  }

  StringRef getName() const override { return desc.argument; }
  StringRef getArgument() const override { return desc.argument; }
  StringRef getDescription() const override { return desc.description; }

  /// Every Rust pass may build arith, scf and gpu ops (Triton parses them)
  /// and chunk ops; they must be loaded before the pass runs, or the ops
  /// would be created unregistered.
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect, gpu::GPUDialect,
                    synco::chunk::ChunkDialect>();
  }

  bool canScheduleOn(RegisteredOperationName opName) const override {
    return opName.getStringRef() == desc.opName;
  }

  std::unique_ptr<Pass> clonePass() const override {
    return std::make_unique<RustPass>(desc);
  }

  void runOnOperation() override {
    std::vector<MlirStringRef> values;
    values.reserve(options.size());
    for (const auto &option : options)
      values.push_back(wrap(StringRef(option->getValue())));
    MlirLogicalResult result = desc.run(wrap(getOperation()), values.data(),
                                        values.size(), desc.userData);
    if (mlirLogicalResultIsFailure(result))
      signalPassFailure();
  }

private:
  const RustPassDescriptor &desc;
  std::vector<std::unique_ptr<Option<std::string>>> options;
};

std::mutex &registrationMutex() {
  static std::mutex mutex;
  return mutex;
}

llvm::StringSet<> &registeredArguments() {
  static llvm::StringSet<> arguments;
  return arguments;
}

} // namespace

void syncoRegisterRustPass(const SyncoRustPassInfo *info) {
  std::lock_guard<std::mutex> lock(registrationMutex());
  StringRef argument = unwrap(info->argument);
  if (!registeredArguments().insert(argument).second)
    return;
  // Descriptors are referenced by every pass instance and by the registry,
  // which lives until exit, so they are intentionally never freed.
  auto *desc = new RustPassDescriptor{
      rustPassTypeIDs().allocate(), argument.str(),
      unwrap(info->description).str(), unwrap(info->opName).str(),
      {}, info->run, info->userData};
  for (intptr_t i = 0; i < info->numOptions; ++i)
    desc->options.push_back({unwrap(info->options[i].name).str(),
                             unwrap(info->options[i].description).str(),
                             unwrap(info->options[i].defaultValue).str()});
  registerPass([desc]() -> std::unique_ptr<Pass> {
    return std::make_unique<RustPass>(*desc);
  });
}

void syncoRegisterPipelineAlias(MlirStringRef argument,
                                MlirStringRef description,
                                MlirStringRef pipeline) {
  std::lock_guard<std::mutex> lock(registrationMutex());
  StringRef name = unwrap(argument);
  if (!registeredArguments().insert(name).second)
    return;
  // PassPipelineRegistration keeps copies of these strings.
  std::string text = unwrap(pipeline).str();
  registerPassPipeline(
      name, unwrap(description),
      [text](OpPassManager &pm, StringRef options,
             function_ref<LogicalResult(const Twine &)> errorHandler) {
        if (!options.empty())
          return errorHandler("pipeline alias takes no options");
        return parsePassPipeline(text, pm, llvm::errs());
      },
      [](function_ref<void(const detail::PassOptions &)>) {});
}
