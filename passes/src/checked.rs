//! Checked arithmetic for the sizes, offsets and counts the passes compute
//! from a plan: an overflow is an error at the op that asked for the
//! value, never a panic (debug builds) or a wrapped value (release).
//!
//! What one buffer bounds needs none of this: the dialect verifies that a
//! buffer's element count and byte size fit an `i64` and that every region
//! lies inside its buffer on every rank, and `chunk-bind-kernel` that a
//! bound buffer's elements fit the kernel's `i32` offsets. Sums and
//! products across transfers, chunks, ranks or options do not.

use crate::plan::{AsOp, fail};
use synco_chunk::PassFailed;

/// `a * b`, or an error at `at` saying that `what` overflows.
pub fn mul(a: i64, b: i64, at: impl AsOp, what: &str) -> Result<i64, PassFailed> {
    a.checked_mul(b)
        .ok_or_else(|| overflow(at, what, format!("{a} x {b}")))
}

/// The product of `factors`, or an error at `at` saying that `what`
/// overflows.
pub fn product(factors: &[i64], at: impl AsOp, what: &str) -> Result<i64, PassFailed> {
    factors
        .iter()
        .try_fold(1i64, |n, f| n.checked_mul(*f))
        .ok_or_else(|| {
            let listed: Vec<String> = factors.iter().map(i64::to_string).collect();
            overflow(at, what, listed.join(" x "))
        })
}

fn overflow(at: impl AsOp, what: &str, expression: String) -> PassFailed {
    fail(at, format!("{what}: {expression} overflows 64 bits"))
}
