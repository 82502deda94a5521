//! Reading Triton's source locations.
//!
//! Triton names values after the Python variables that hold them:
//! `%pid_m = "tt.get_program_id"() ... loc(#loc12)` with
//! `#loc12 = loc("pid_m"(#loc3))`. Inlined helpers nest the name inside
//! call-site and fused locations.

use crate::{Loc, Op, Value, location_of, string, value_loc};
use mlir_sys::*;

/// The outermost Python variable name in `loc`, if any.
pub fn variable_name(loc: Loc) -> Option<String> {
    unsafe {
        if mlirLocationIsAName(loc) {
            return Some(string(mlirIdentifierStr(mlirLocationNameGetName(loc))));
        }
        if mlirLocationIsACallSite(loc) {
            return variable_name(mlirLocationCallSiteGetCallee(loc));
        }
        if mlirLocationIsAFused(loc) {
            let n = mlirLocationFusedGetNumLocations(loc);
            let mut locs = vec![mlirLocationUnknownGet(mlirLocationGetContext(loc)); n as usize];
            mlirLocationFusedGetLocations(loc, locs.as_mut_ptr());
            return locs.into_iter().find_map(variable_name);
        }
    }
    None
}

/// The Python variable name of the op's first result (or the op).
pub fn op_variable_name(op: Op) -> Option<String> {
    variable_name(location_of(op))
}

/// The Python variable name of a value (block arguments carry their own
/// location; results use their op's).
pub fn value_variable_name(value: Value) -> Option<String> {
    variable_name(value_loc(value))
}

/// Where `loc` points in the source, as `file.py:line` (the file's last
/// path component): the innermost file location under its names and, for
/// an inlined helper, the callee's (the line of the helper's own code).
pub fn source_line(loc: Loc) -> Option<String> {
    unsafe {
        if mlirLocationIsAFileLineColRange(loc) {
            let file = string(mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(
                loc,
            )));
            let name = file.rsplit('/').next().unwrap_or(&file).to_string();
            return Some(format!(
                "{name}:{}",
                mlirLocationFileLineColRangeGetStartLine(loc)
            ));
        }
        if mlirLocationIsAName(loc) {
            return source_line(mlirLocationNameGetChildLoc(loc));
        }
        if mlirLocationIsACallSite(loc) {
            return source_line(mlirLocationCallSiteGetCallee(loc));
        }
        if mlirLocationIsAFused(loc) {
            let n = mlirLocationFusedGetNumLocations(loc);
            let mut locs = vec![mlirLocationUnknownGet(mlirLocationGetContext(loc)); n as usize];
            mlirLocationFusedGetLocations(loc, locs.as_mut_ptr());
            return locs.into_iter().find_map(source_line);
        }
    }
    None
}
