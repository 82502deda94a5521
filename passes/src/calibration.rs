//! The cost model's machine constants for the passes that ask it: the
//! built-in H200 NVLink constants, or a calibration file given as a pass
//! option.

use crate::plan::{AsOp, fail};
use synco_chunk::PassFailed;
use synco_cost_model::Machine;

/// The machine of option `calibration` (a JSON file's path; empty: the
/// built-in H200 NVLink constants), or an error at `at` naming `pass`.
pub fn machine(at: impl AsOp, pass: &str, calibration: &str) -> Result<Machine, PassFailed> {
    if calibration.is_empty() {
        return Ok(Machine::H200_NVLINK);
    }
    let text = std::fs::read_to_string(calibration).map_err(|e| {
        fail(
            at,
            format!("{pass}: cannot read calibration {calibration}: {e}"),
        )
    })?;
    Machine::from_json(&text)
        .map_err(|e| fail(at, format!("{pass}: bad calibration {calibration}: {e}")))
}
