//===- Synco.h - C API of the Synco MLIR shim ------------------*- C -*-===//
//
// The C entry points that Rust (through `synco-chunk`) uses to reach the
// parts of MLIR that the upstream C API does not expose:
//
//  * the `chunk` dialect handle,
//  * registering passes written in Rust in MLIR's global pass registry (so
//    `--pass-pipeline`, `--help` and `--list-passes` see them, with options),
//  * registering named pass pipelines,
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

/// One option of a Rust pass. Every option is parsed by MLIR as a string and
/// handed to the pass's `run` callback; the pass validates and converts it.
typedef struct {
  MlirStringRef name;
  MlirStringRef description;
  MlirStringRef defaultValue;
} SyncoPassOptionSpec;

/// Runs a Rust pass on `op`. `optionValues` has one entry per declared
/// option, in declaration order. Returns failure to make the pass fail (the
/// pass is expected to have emitted a diagnostic first).
typedef MlirLogicalResult (*SyncoRustPassRunFn)(MlirOperation op,
                                                const MlirStringRef *optionValues,
                                                intptr_t numOptionValues,
                                                void *userData);

typedef struct {
  MlirStringRef argument;    ///< Pipeline name, e.g. "chunk-verify-plan".
  MlirStringRef description; ///< One line for --help.
  MlirStringRef opName;      ///< Anchor op, e.g. "builtin.module".
  const SyncoPassOptionSpec *options;
  intptr_t numOptions;
  SyncoRustPassRunFn run;
  void *userData;
} SyncoRustPassInfo;

/// Registers a Rust pass in MLIR's global pass registry. All strings are
/// copied. Registering the same argument twice is a no-op.
MLIR_CAPI_EXPORTED void syncoRegisterRustPass(const SyncoRustPassInfo *info);

/// Registers `argument` as a named pipeline that expands to the textual
/// `pipeline` (e.g. "builtin.module(canonicalize,cse)").
MLIR_CAPI_EXPORTED void syncoRegisterPipelineAlias(MlirStringRef argument,
                                                   MlirStringRef description,
                                                   MlirStringRef pipeline);

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
