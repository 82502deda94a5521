//===- ChunkPasses.h - Synco's passes ----------------------------*- C++ -*-===//
//
// The passes declared in ChunkPasses.td: their option structs and
// `create<Pass>()` functions, and the option enums.
//
//===----------------------------------------------------------------------===//

#ifndef SYNCO_DIALECT_CHUNK_CHUNKPASSES_H
#define SYNCO_DIALECT_CHUNK_CHUNKPASSES_H

#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#include "synco/Dialect/Chunk/ChunkPassEnums.h.inc"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"

namespace synco::chunk {

/// The command-line parser of an enum option type: llvm::cl's own, except
/// that a value that is no case is refused naming the cases
/// ("'bogus' is not one of push, pull, stage"). MLIR's pass options use it
/// through `llvm::cl::parser<E>`, specialised for each option enum below.
template <typename E>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  struct OptionInfo : public GenericOptionInfo {
    OptionInfo(llvm::StringRef name, E value, llvm::StringRef help)
        : GenericOptionInfo(name, help), V(value) {}
    llvm::cl::OptionValue<E> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  using parser_data_type = E;
  explicit EnumOptionParser(llvm::cl::Option &owner)
      : generic_parser_base(owner) {}

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error, like every llvm::cl parser.
  bool parse(llvm::cl::Option &option, llvm::StringRef name,
             llvm::StringRef arg, E &value) {
    llvm::StringRef text = Owner.hasArgStr() ? arg : name;
    std::string cases;
    for (const OptionInfo &info : Values) {
      if (info.Name == text) {
        value = info.V.getValue();
        return false;
      }
      cases += (cases.empty() ? "" : ", ") + info.Name.str();
    }
    return option.error("'" + text + "' is not one of " + cases);
  }

  template <typename T>
  void addLiteralOption(llvm::StringRef name, const T &value,
                        llvm::StringRef help) {
    Values.push_back(OptionInfo(name, static_cast<E>(value), help));
    AddLiteralOption(Owner, name);
  }
  void removeLiteralOption(llvm::StringRef name) {
    Values.erase(Values.begin() + findOption(name));
  }
};

} // namespace synco::chunk

#include "synco/Dialect/Chunk/ChunkPassParsers.h.inc"

namespace synco::chunk {

#define GEN_PASS_DECL
#include "synco/Dialect/Chunk/ChunkPasses.h.inc"

/// Registers every declared pass (`registerChunkPasses`) and the named
/// pipelines (`synco-fuse` and its aliases).
void registerPassesAndPipelines();

} // namespace synco::chunk

#endif // SYNCO_DIALECT_CHUNK_CHUNKPASSES_H
