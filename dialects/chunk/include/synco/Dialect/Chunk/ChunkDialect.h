//===- ChunkDialect.h - The chunk dialect ------------------------*- C++ -*-===//

#ifndef SYNCO_DIALECT_CHUNK_CHUNKDIALECT_H
#define SYNCO_DIALECT_CHUNK_CHUNKDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "synco/Dialect/Chunk/ChunkDialect.h.inc"
#include "synco/Dialect/Chunk/ChunkEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "synco/Dialect/Chunk/ChunkTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "synco/Dialect/Chunk/ChunkAttrs.h.inc"

#define GET_OP_CLASSES
#include "synco/Dialect/Chunk/ChunkOps.h.inc"

namespace synco::chunk {

/// The results of `map` (one dimension, no symbols: a rank map or a
/// region's offsets) on `rank`, or nothing where a `mod`, `floordiv` or
/// `ceildiv` has a divisor that is not positive or the arithmetic
/// overflows (`AffineMap::compose` cannot fold those and leaves no value).
/// Evaluated on integers, without the context's uniqued constant
/// expressions that `compose` builds: the plan verifier evaluates every
/// transfer on every rank.
std::optional<::llvm::SmallVector<int64_t>>
evaluateOnRank(::mlir::AffineMap map, int64_t rank);

/// Why `evaluateOnRank` gave nothing, for diagnostics.
inline constexpr const char *kUnevaluableMap =
    "a mod, floordiv or ceildiv by a value that is not positive, or an "
    "overflow";

/// Parses an affine map (a rank map or a region's offsets) and refuses one
/// whose coefficients, as written, leave 64 bits: MLIR folds constants as
/// it builds the map, wrapping around, so the map it returns can evaluate
/// on every rank although the map as written overflows (`(r) -> (r *
/// 4611686018427387904 * 4)` becomes `(d0) -> (0)`; written as four sums
/// of `r * 4611686018427387904`, `evaluateOnRank` reports the overflow).
::mlir::ParseResult parseAffineMapAsWritten(::mlir::AsmParser &parser,
                                            ::mlir::AffineMap &map);

} // namespace synco::chunk

#endif // SYNCO_DIALECT_CHUNK_CHUNKDIALECT_H
