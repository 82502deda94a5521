//===- CAPI.cpp - C API of the chunk dialect ---------------------------===//
//
// The dialect's registration handle, the parts of `#chunk.region`, and
// `evaluateOnRank`, for the Rust passes (see `synco-c/Synco.h`).
//
//===----------------------------------------------------------------------===//

#include "synco-c/Synco.h"
#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/CAPI/AffineMap.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"

using namespace mlir;
using synco::chunk::RegionAttr;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Chunk, chunk,
                                      synco::chunk::ChunkDialect)

bool syncoAttributeIsAChunkRegion(MlirAttribute attr) {
  return isa<RegionAttr>(unwrap(attr));
}

MlirStringRef syncoChunkRegionGetBuffer(MlirAttribute region) {
  return wrap(cast<RegionAttr>(unwrap(region)).getBuffer().getValue());
}

MlirAffineMap syncoChunkRegionGetOffsets(MlirAttribute region) {
  return wrap(cast<RegionAttr>(unwrap(region)).getOffsets());
}

intptr_t syncoChunkRegionGetNumSizes(MlirAttribute region) {
  ArrayRef<int64_t> sizes = cast<RegionAttr>(unwrap(region)).getSizes();
  return static_cast<intptr_t>(sizes.size());
}

int64_t syncoChunkRegionGetSize(MlirAttribute region, intptr_t pos) {
  return cast<RegionAttr>(unwrap(region)).getSizes()[pos];
}

bool syncoChunkEvaluateOnRank(MlirAffineMap map, int64_t rank,
                              int64_t *results) {
  std::optional<SmallVector<int64_t>> values =
      synco::chunk::evaluateOnRank(unwrap(map), rank);
  if (!values)
    return false;
  llvm::copy(*values, results);
  return true;
}
