// mlir-opt's diagnostic habits: --split-input-file runs each chunk on its
// own, --verify-diagnostics matches expected-error annotations, and a
// mismatch or unexpected error makes synco-opt fail.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics
// RUN: not synco-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=RAW

// RAW: diagnostics.mlir:13:18: error: expected ':'
// RAW: error: use of undeclared SSA value name

func.func @missing_type() {
  // expected-error @below {{expected ':'}}
  %r = chunk.rank
  return
}

// -----

func.func @undeclared() {
  // expected-error @below {{use of undeclared SSA value name}}
  "tt.return"(%nope) : (i32) -> ()
}

// -----

// A chunk that is fine parses cleanly in its own split.
func.func @fine() -> i32 {
  %r = chunk.rank : i32
  return %r : i32
}
