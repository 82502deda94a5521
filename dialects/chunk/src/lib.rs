//! The `chunk` dialect and Synco's bridge into MLIR's C++ registries.
//!
//! The dialect is defined in ODS (`include/synco/Dialect/Chunk/*.td`) and
//! compiled by `build.rs` with its C++ verifiers. This crate exposes:
//!
//! * [`dialect_handle`] and [`register_all_dialects`], to load the dialect
//!   (and every upstream dialect) into a melior [`Context`];
//! * [`register_pass`] and [`register_pipeline`], which put passes written
//!   in Rust (see the `synco-passes` crate) into MLIR's global registry so
//!   `--pass-pipeline` can name them;
//! * [`opt_main`], the `mlir-opt` driver used by `synco-opt`.

use melior::{
    Context,
    dialect::{DialectHandle, DialectRegistry},
    ir::{Location, operation::OperationRef},
};
use mlir_sys::{
    MlirDialectHandle, MlirDialectRegistry, MlirLocation, MlirLogicalResult, MlirOperation,
    MlirStringRef,
};
use std::ffi::{CString, c_char, c_int, c_void};

mod ffi {
    use super::*;

    #[repr(C)]
    pub struct PassOptionSpec {
        pub name: MlirStringRef,
        pub description: MlirStringRef,
        pub default_value: MlirStringRef,
    }

    pub type RunFn = unsafe extern "C" fn(
        op: MlirOperation,
        option_values: *const MlirStringRef,
        num_option_values: isize,
        user_data: *mut c_void,
    ) -> MlirLogicalResult;

    #[repr(C)]
    pub struct RustPassInfo {
        pub argument: MlirStringRef,
        pub description: MlirStringRef,
        pub op_name: MlirStringRef,
        pub options: *const PassOptionSpec,
        pub num_options: isize,
        pub run: RunFn,
        pub user_data: *mut c_void,
    }

    unsafe extern "C" {
        pub fn mlirGetDialectHandle__chunk__() -> MlirDialectHandle;
        pub fn syncoRegisterRustPass(info: *const RustPassInfo);
        pub fn syncoRegisterPipelineAlias(
            argument: MlirStringRef,
            description: MlirStringRef,
            pipeline: MlirStringRef,
        );
        pub fn syncoRegisterAllDialects(registry: MlirDialectRegistry);
        pub fn syncoEmitDiagnostic(
            location: MlirLocation,
            severity: c_int,
            message: MlirStringRef,
            num_notes: isize,
            note_locations: *const MlirLocation,
            note_messages: *const MlirStringRef,
        );
        pub fn syncoOptMain(argc: c_int, argv: *mut *mut c_char) -> c_int;
    }
}

/// The `chunk` dialect's handle.
pub fn dialect_handle() -> DialectHandle {
    // SAFETY: returns a static handle defined by the C API registration macro.
    unsafe { DialectHandle::from_raw(ffi::mlirGetDialectHandle__chunk__()) }
}

/// Registers every upstream dialect and `chunk` into `registry`.
pub fn register_all_dialects(registry: &DialectRegistry) {
    // SAFETY: the registry is a valid, live object.
    unsafe { ffi::syncoRegisterAllDialects(registry.to_raw()) }
}

/// A context with every dialect `synco-opt` knows, loaded lazily, and
/// unregistered dialects (Triton's `tt`) allowed.
pub fn create_context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    context.set_allow_unregistered_dialects(true);
    dialect_handle().load_dialect(&context);
    context
}

/// One option of a Rust pass, as `--help` shows it.
#[derive(Clone, Copy, Debug)]
pub struct PassOption {
    pub name: &'static str,
    pub description: &'static str,
    pub default: &'static str,
}

/// What MLIR needs to know to register a Rust pass.
#[derive(Clone, Copy, Debug)]
pub struct PassDescriptor {
    /// The name used in `--pass-pipeline`, e.g. `chunk-verify-plan`.
    pub argument: &'static str,
    /// One line for `--help`.
    pub description: &'static str,
    /// The op the pass runs on, e.g. `builtin.module`.
    pub anchor: &'static str,
    pub options: &'static [PassOption],
    /// Runs the pass. `options` has one value per [`PassOption`], in order.
    /// Returning failure fails the pipeline; emit a diagnostic first.
    pub run: fn(op: OperationRef, options: &[&str]) -> Result<(), PassFailed>,
}

/// A pass failed; the diagnostics saying why were already emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassFailed;

fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    }
}

unsafe extern "C" fn run_trampoline(
    op: MlirOperation,
    option_values: *const MlirStringRef,
    num_option_values: isize,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    // SAFETY: `user_data` is the leaked `PassDescriptor` registered below,
    // and MLIR hands us `num_option_values` valid string refs.
    let descriptor = unsafe { &*(user_data as *const PassDescriptor) };
    let values: Vec<&str> = (0..num_option_values.max(0) as usize)
        .map(|i| unsafe {
            let value = *option_values.add(i);
            let bytes = std::slice::from_raw_parts(value.data.cast::<u8>(), value.length);
            std::str::from_utf8(bytes).unwrap_or("")
        })
        .collect();
    let op = unsafe { OperationRef::from_raw(op) };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (descriptor.run)(op, &values)
    }));
    match result {
        Ok(result) => MlirLogicalResult {
            value: result.is_ok() as i8,
        },
        Err(_) => {
            eprintln!(
                "internal error: pass '{}' panicked; please report this with the input",
                descriptor.argument
            );
            MlirLogicalResult { value: 0 }
        }
    }
}

/// Registers a Rust pass in MLIR's global pass registry. Registering the
/// same argument twice is a no-op.
pub fn register_pass(descriptor: &'static PassDescriptor) {
    let options: Vec<ffi::PassOptionSpec> = descriptor
        .options
        .iter()
        .map(|o| ffi::PassOptionSpec {
            name: string_ref(o.name),
            description: string_ref(o.description),
            default_value: string_ref(o.default),
        })
        .collect();
    let info = ffi::RustPassInfo {
        argument: string_ref(descriptor.argument),
        description: string_ref(descriptor.description),
        op_name: string_ref(descriptor.anchor),
        options: options.as_ptr(),
        num_options: options.len() as isize,
        run: run_trampoline,
        user_data: descriptor as *const PassDescriptor as *mut c_void,
    };
    // SAFETY: the shim copies every string before returning; `user_data`
    // points to a `'static` descriptor.
    unsafe { ffi::syncoRegisterRustPass(&info) }
}

/// Registers a named pipeline: `--pass-pipeline='builtin.module(name)'`
/// (or `--name`) expands to `passes`, a comma-separated pass list.
pub fn register_pipeline(name: &str, description: &str, passes: &str) {
    // SAFETY: the shim copies the strings.
    unsafe {
        ffi::syncoRegisterPipelineAlias(
            string_ref(name),
            string_ref(description),
            string_ref(passes),
        )
    }
}

/// Runs MLIR's `mlir-opt` driver on `args` (including the program name) and
/// returns the process exit code.
pub fn opt_main(args: impl IntoIterator<Item = String>) -> i32 {
    let args: Vec<CString> = args
        .into_iter()
        .map(|a| CString::new(a.replace('\0', "")).unwrap_or_default())
        .collect();
    let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    argv.push(std::ptr::null_mut());
    // SAFETY: argv holds `args.len()` valid C strings followed by null, all
    // alive for the call.
    unsafe { ffi::syncoOptMain(args.len() as c_int, argv.as_mut_ptr()) }
}

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error = 0,
    Warning = 1,
    Remark = 2,
}

/// A diagnostic under construction: a message at a location, plus notes that
/// point elsewhere. Emitted through the context's diagnostic engine, so
/// `--verify-diagnostics` and `expected-*` annotations see it.
#[must_use = "a diagnostic does nothing until emitted"]
pub struct Diagnostic<'c> {
    location: Location<'c>,
    severity: Severity,
    message: String,
    notes: Vec<(Location<'c>, String)>,
}

impl<'c> Diagnostic<'c> {
    pub fn new(location: Location<'c>, severity: Severity, message: impl Into<String>) -> Self {
        Self {
            location,
            severity,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub fn error(location: Location<'c>, message: impl Into<String>) -> Self {
        Self::new(location, Severity::Error, message)
    }

    pub fn remark(location: Location<'c>, message: impl Into<String>) -> Self {
        Self::new(location, Severity::Remark, message)
    }

    pub fn warning(location: Location<'c>, message: impl Into<String>) -> Self {
        Self::new(location, Severity::Warning, message)
    }

    pub fn note(mut self, location: Location<'c>, message: impl Into<String>) -> Self {
        self.notes.push((location, message.into()));
        self
    }

    pub fn emit(self) {
        let note_locations: Vec<MlirLocation> = self.notes.iter().map(|(l, _)| l.to_raw()).collect();
        let note_messages: Vec<MlirStringRef> =
            self.notes.iter().map(|(_, m)| string_ref(m)).collect();
        // SAFETY: every pointer is valid for the call; the shim copies the
        // strings into the diagnostic.
        unsafe {
            ffi::syncoEmitDiagnostic(
                self.location.to_raw(),
                self.severity as c_int,
                string_ref(&self.message),
                self.notes.len() as isize,
                note_locations.as_ptr(),
                note_messages.as_ptr(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::ir::{Module, operation::OperationLike as _};

    #[test]
    fn context_parses_chunk_and_generic_tt_ops() {
        let context = create_context();
        let module = Module::parse(
            &context,
            r#"
            chunk.plan @p world_size(2) {
              chunk.buffer @A : !chunk.buffer<64x32xf32> bind(0)
              chunk.all_gather @A dim(0) chunks(2)
            }
            "tt.func"() <{function_type = () -> (), sym_name = "k"}> ({
              "tt.return"() : () -> ()
            }) : () -> ()
            "#,
        )
        .expect("module parses");
        assert!(module.as_operation().verify());
        let text = module.as_operation().to_string();
        assert!(text.contains("chunk.all_gather @A dim(0) chunks(2)"), "{text}");
    }

    #[test]
    fn context_rejects_an_invalid_plan() {
        let context = create_context();
        // 63 rows cannot be split between 2 ranks.
        let module = Module::parse(
            &context,
            r#"chunk.plan @p world_size(2) {
                 chunk.buffer @A : !chunk.buffer<63x32xf32>
                 chunk.all_gather @A dim(0) chunks(auto)
               }"#,
        );
        assert!(module.is_none());
    }
}
