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

#endif // SYNCO_DIALECT_CHUNK_CHUNKDIALECT_H
