//! The passes declared in `ChunkPasses.td`, and how their Rust bodies are
//! attached to them.
//!
//! MLIR's registry, pipeline parser and `--help` know each pass through the
//! C++ class generated from its declaration; the pass's options are parsed
//! (and range-checked) there, and handed to the body as the pass's options
//! struct below, generated from the same declaration. A body implements
//! [`RustPass`] and is attached with [`set_body`]:
//!
//! ```ignore
//! struct VerifyPlan;
//! impl RustPass for VerifyPlan {
//!     type Options = ChunkVerifyPlanOptions;
//!     fn run(module: OperationRef, options: &Self::Options) -> Result<(), PassFailed> { ... }
//! }
//! synco_chunk::passes::set_body::<VerifyPlan>();
//! ```

use melior::ir::operation::OperationRef;
use mlir_sys::{MlirLogicalResult, MlirOperation, MlirStringRef};
use std::ffi::c_void;

use crate::{PassFailed, string_ref};

/// One option value as the declared pass hands it over (`SyncoPassOptionValue`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OptionValue {
    /// Integers, booleans (0 or 1) and enum cases (their value).
    pub integer: i64,
    /// Strings.
    text: MlirStringRef,
}

impl OptionValue {
    /// The value of a string option.
    pub fn text(&self) -> Result<String, String> {
        if self.text.length == 0 {
            return Ok(String::new());
        }
        // SAFETY: the pass hands over a view of its option's std::string,
        // alive for the call.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.text.data.cast::<u8>(), self.text.length) };
        String::from_utf8(bytes.to_vec()).map_err(|_| "an option value is not UTF-8".to_string())
    }
}

/// The options struct of one declared pass.
pub trait PassOptions: Sized {
    /// The pass's name in pipelines, e.g. `chunk-verify-plan`.
    const ARGUMENT: &'static str;
    /// Builds the struct from the values, in declaration order.
    fn from_values(values: &[OptionValue]) -> Result<Self, String>;
}

// Generated code: a pass without options gets the same shapes as the rest.
#[allow(clippy::derivable_impls, clippy::len_zero)]
mod generated {
    use super::{OptionValue, PassOptions};
    include!(concat!(env!("OUT_DIR"), "/pass_options.rs"));
}
pub use generated::*;

/// The body of a declared pass.
pub trait RustPass {
    /// The declared pass's options (which also names the pass).
    type Options: PassOptions;
    /// Runs the pass on the module. Returning failure fails the pipeline;
    /// emit a diagnostic first.
    fn run(module: OperationRef, options: &Self::Options) -> Result<(), PassFailed>;
}

mod ffi {
    use super::*;

    pub type BodyFn = unsafe extern "C" fn(
        op: MlirOperation,
        values: *const OptionValue,
        num_values: isize,
        user_data: *mut c_void,
    ) -> MlirLogicalResult;

    unsafe extern "C" {
        pub fn syncoRegisterChunkPasses();
        pub fn syncoSetPassBody(
            argument: MlirStringRef,
            body: BodyFn,
            user_data: *mut c_void,
        ) -> bool;
    }
}

unsafe extern "C" fn body_trampoline<P: RustPass>(
    op: MlirOperation,
    values: *const OptionValue,
    num_values: isize,
    _user_data: *mut c_void,
) -> MlirLogicalResult {
    let argument = P::Options::ARGUMENT;
    let values = if values.is_null() || num_values <= 0 {
        &[][..]
    } else {
        // SAFETY: the pass hands over `num_values` values, alive for the call.
        unsafe { std::slice::from_raw_parts(values, num_values as usize) }
    };
    // SAFETY: the pass hands over its live anchor op.
    let op = unsafe { OperationRef::from_raw(op) };
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || match P::Options::from_values(values) {
                Ok(options) => P::run(op, &options),
                Err(message) => {
                    eprintln!("internal error: {argument}: {message}; please report it");
                    Err(PassFailed)
                }
            },
        ));
    let ok = match result {
        Ok(result) => result.is_ok(),
        Err(_) => {
            eprintln!(
                "internal error: pass '{argument}' panicked; please report this with the input"
            );
            false
        }
    };
    MlirLogicalResult { value: ok as i8 }
}

/// Registers every pass declared in `ChunkPasses.td` and Synco's named
/// pipelines (`synco-fuse` and its aliases) in MLIR's global registry.
/// Idempotent.
pub fn register_declared() {
    // SAFETY: takes no arguments; guarded by a once-flag on the C++ side.
    unsafe { ffi::syncoRegisterChunkPasses() }
}

/// Attaches `P` as the body of the declared pass its options name.
///
/// # Panics
/// If no such pass is registered (call [`register_declared`] first): the
/// options struct comes from the declarations, so this is a build defect.
pub fn set_body<P: RustPass>() {
    let argument = P::Options::ARGUMENT;
    // SAFETY: the shim copies the name; the trampoline is a static function.
    let known = unsafe {
        ffi::syncoSetPassBody(
            string_ref(argument),
            body_trampoline::<P>,
            std::ptr::null_mut(),
        )
    };
    assert!(known, "{argument} is not a registered pass");
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn no_body(
        _op: MlirOperation,
        _values: *const OptionValue,
        _num_values: isize,
        _user_data: *mut c_void,
    ) -> MlirLogicalResult {
        MlirLogicalResult { value: 0 }
    }

    /// Only the passes ChunkPasses.td declares take a Rust body: upstream
    /// passes and unknown names are refused.
    #[test]
    fn bodies_attach_to_declared_passes_only() {
        register_declared();
        let set = |name: &str| unsafe {
            ffi::syncoSetPassBody(string_ref(name), no_body, std::ptr::null_mut())
        };
        assert!(!set("canonicalize"));
        assert!(!set("chunk-no-such-pass"));
        assert!(!set("synco-fuse"));
        // A declared pass takes one (this test process runs no pass).
        assert!(set(ChunkVerifyPlanOptions::ARGUMENT));
    }
}
