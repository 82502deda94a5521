//===- Synco.h - C API of the Synco MLIR shim ------------------*- C -*-===//
//
// The C entry points that Rust (through `synco-chunk`) uses to reach the
// parts of MLIR that the upstream C API does not expose:
//
//  * the `chunk` dialect handle,
//  * registering passes written in Rust in MLIR's global pass registry (so
//    `--pass-pipeline`, `--help` and `--list-passes` see them, with options),
//  * registering named pass pipelines,
//  * the `mlir-opt`-compatible driver used by `synco-opt`.
//
//===----------------------------------------------------------------------===//

#ifndef SYNCO_C_SYNCO_H
#define SYNCO_C_SYNCO_H

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

#ifdef __cplusplus
}
#endif

#endif // SYNCO_C_SYNCO_H
