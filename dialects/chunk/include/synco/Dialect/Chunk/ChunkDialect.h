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
/// region's offsets) on `rank`. Evaluated on integers, without the
/// context's uniqued constant expressions that `AffineMap::compose` builds:
/// the plan verifier evaluates every transfer on every rank.
::llvm::SmallVector<int64_t> evaluateOnRank(::mlir::AffineMap map,
                                            int64_t rank);

} // namespace synco::chunk

#endif // SYNCO_DIALECT_CHUNK_CHUNKDIALECT_H
