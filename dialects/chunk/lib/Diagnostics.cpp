//===- Diagnostics.cpp - Diagnostics with severity and notes for Rust --===//
//
// The upstream C API can only emit plain errors; Rust passes also need
// warnings, remarks and notes (a note points at the other op in a clash).
//
//===----------------------------------------------------------------------===//

#include "synco-c/Synco.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

void syncoEmitDiagnostic(MlirLocation location,
                         SyncoDiagnosticSeverity severity,
                         MlirStringRef message, intptr_t numNotes,
                         const MlirLocation *noteLocations,
                         const MlirStringRef *noteMessages) {
  Location loc = unwrap(location);
  InFlightDiagnostic diag = [&] {
    switch (severity) {
    case SyncoDiagnosticWarning:
      return emitWarning(loc);
    case SyncoDiagnosticRemark:
      return emitRemark(loc);
    case SyncoDiagnosticError:
      break;
    }
    return emitError(loc);
  }();
  diag << unwrap(message);
  for (intptr_t i = 0; i < numNotes; ++i)
    diag.attachNote(unwrap(noteLocations[i])) << unwrap(noteMessages[i]);
}

void syncoPrintDiagnosticsLikeMlirOpt(MlirContext context) {
  // Both are leaked on purpose: a handler must outlive every diagnostic of
  // the context, and tools keep their context until they exit.
  auto *sourceMgr = new llvm::SourceMgr();
  new SourceMgrDiagnosticHandler(*sourceMgr, unwrap(context), llvm::errs());
}
