//===- Synco.h - C API of the Synco MLIR shim ------------------*- C -*-===//
//
// The C entry points that Rust (through `synco-chunk`) uses to reach the
// parts of MLIR that the upstream C API does not expose:
//
//  * the `chunk` dialect handle,
//  * registering the passes declared in `ChunkPasses.td` and Synco's named
//    pipelines in MLIR's global registry, and giving each pass its body
//    (written in Rust),
//  * the `mlir-opt`-compatible driver used by `synco-opt`,
//  * the `#chunk.region` attribute's parts and the dialect's evaluator of
//    rank maps, so Rust reads plans with the verifier's own arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef SYNCO_C_SYNCO_H
#define SYNCO_C_SYNCO_H

#include "mlir-c/AffineMap.h"
#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Chunk, chunk);

/// The value of one option of a declared pass (`ChunkPasses.td`), in the
/// option's declaration order: integers, booleans (0 or 1) and enums (the
/// case's value) in `integer`; strings in `text`.
typedef struct {
  int64_t integer;
  MlirStringRef text;
} SyncoPassOptionValue;

/// The body of a declared pass, written in Rust: runs on `op` with the
/// pass's option values. Returns failure to make the pass fail (the body
/// emits a diagnostic first).
typedef MlirLogicalResult (*SyncoPassBodyFn)(MlirOperation op,
                                             const SyncoPassOptionValue *values,
                                             intptr_t numValues,
                                             void *userData);

/// Registers every pass declared in `ChunkPasses.td` and Synco's named
/// pipelines in MLIR's global registry. Idempotent.
MLIR_CAPI_EXPORTED void syncoRegisterChunkPasses(void);

/// Gives the declared pass `argument` its body. A declared pass run without
/// one fails with an error saying so. Returns false if no pass of that name
/// is declared.
MLIR_CAPI_EXPORTED bool syncoSetPassBody(MlirStringRef argument,
                                         SyncoPassBodyFn body, void *userData);

/// Registers the Synco dialects (and every upstream dialect, like mlir-opt)
/// into `registry`.
MLIR_CAPI_EXPORTED void syncoRegisterAllDialects(MlirDialectRegistry registry);

typedef enum {
  SyncoDiagnosticError = 0,
  SyncoDiagnosticWarning = 1,
  SyncoDiagnosticRemark = 2,
} SyncoDiagnosticSeverity;

/// Emits a diagnostic at `location` with `numNotes` notes attached, through
/// the context's diagnostic engine (so `--verify-diagnostics` sees it).
MLIR_CAPI_EXPORTED void
syncoEmitDiagnostic(MlirLocation location, SyncoDiagnosticSeverity severity,
                    MlirStringRef message, intptr_t numNotes,
                    const MlirLocation *noteLocations,
                    const MlirStringRef *noteMessages);

/// Prints the context's diagnostics like mlir-opt does (`file:line:col:
/// error: ...` with the source line and a caret), reading source files on
/// demand. The handler lives as long as the process.
MLIR_CAPI_EXPORTED void syncoPrintDiagnosticsLikeMlirOpt(MlirContext context);

/// Runs the mlir-opt driver with Synco's dialects and every registered pass.
/// Unregistered dialects (Triton's `tt`, `ttg`) are allowed unless the
/// command line says otherwise. Returns the process exit code.
MLIR_CAPI_EXPORTED int syncoOptMain(int argc, char **argv);

/// Whether `attr` is a `#chunk.region`.
MLIR_CAPI_EXPORTED bool syncoAttributeIsAChunkRegion(MlirAttribute attr);

/// The buffer symbol of a `#chunk.region` (`A` for `@A`). Owned by the
/// context.
MLIR_CAPI_EXPORTED MlirStringRef
syncoChunkRegionGetBuffer(MlirAttribute region);

/// The offsets map of a `#chunk.region`: one dimension (the rank), one
/// result per buffer dimension.
MLIR_CAPI_EXPORTED MlirAffineMap
syncoChunkRegionGetOffsets(MlirAttribute region);

/// The number of sizes of a `#chunk.region` (its buffer's rank).
MLIR_CAPI_EXPORTED intptr_t syncoChunkRegionGetNumSizes(MlirAttribute region);

/// The size at `pos` of a `#chunk.region`.
MLIR_CAPI_EXPORTED int64_t syncoChunkRegionGetSize(MlirAttribute region,
                                                   intptr_t pos);

/// Evaluates `map` (one dimension, no symbols: a rank map or a region's
/// offsets) on `rank` with the arithmetic the plan verifier uses, writing
/// one value per result of `map` into `results`. Returns false, leaving
/// `results` unspecified, where the map has symbols, a `mod`, `floordiv` or
/// `ceildiv` by a value that is not positive, or an overflow.
MLIR_CAPI_EXPORTED bool syncoChunkEvaluateOnRank(MlirAffineMap map,
                                                 int64_t rank,
                                                 int64_t *results);

#ifdef __cplusplus
}
#endif

#endif // SYNCO_C_SYNCO_H
