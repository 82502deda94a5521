//===- CAPI.cpp - C API registration of the chunk dialect --------------===//

#include "synco-c/Synco.h"
#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Chunk, chunk,
                                      synco::chunk::ChunkDialect)
