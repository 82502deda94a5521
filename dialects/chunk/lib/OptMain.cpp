//===- OptMain.cpp - The synco-opt driver ------------------------------===//
//
// synco-opt is mlir-opt plus Synco's dialects and passes: the same flags, the
// same diagnostics and exit codes, because it *is* MLIR's MlirOptMain. The
// one difference is that unregistered dialects are allowed by default, since
// Triton's `tt`/`ttg` ops reach Synco in generic form without a dialect.
//
//===----------------------------------------------------------------------===//

#include "synco-c/Synco.h"
#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

using namespace mlir;

void syncoRegisterAllDialects(MlirDialectRegistry registry) {
  DialectRegistry &reg = *unwrap(registry);
  registerAllDialects(reg);
  registerAllExtensions(reg);
  reg.insert<synco::chunk::ChunkDialect>();
}

int syncoOptMain(int argc, char **argv) {
  registerAllPasses();

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<synco::chunk::ChunkDialect>();

  // Default to --allow-unregistered-dialect unless the user set it.
  std::vector<char *> args(argv, argv + argc);
  bool userChoseUnregistered = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--") // Everything after `--` is a positional argument.
      break;
    if (arg.ltrim('-').starts_with("allow-unregistered-dialect"))
      userChoseUnregistered = true;
  }
  static char allowUnregistered[] = "--allow-unregistered-dialect";
  if (!userChoseUnregistered)
    args.insert(args.begin() + 1, allowUnregistered);

  return asMainReturnCode(MlirOptMain(
      static_cast<int>(args.size()), args.data(),
      "synco-opt: MLIR optimizer driver with Synco's chunk dialect and "
      "passes\n",
      registry));
}
