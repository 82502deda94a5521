//! Synco's bridge to Triton (pinned `triton==3.6.0`).
//!
//! Triton is Python, so the bridge is a small Python program
//! (`python/synco_bridge.py`, embedded in this crate and written to a
//! temporary file per call) driven over JSON on stdin/stdout. It does two
//! things:
//!
//! * [`Bridge::import`]: a `@triton.jit` kernel (Python file, kernel name,
//!   signature, constexprs) or a `.ttir` file into generic-form MLIR that
//!   synco-opt parses, source locations and Python variable names kept.
//!   Every import is checked by a round trip: Triton parses the generic text
//!   back and must print the same module, or the import fails.
//! * [`Bridge::compile`]: generic TTIR into TTGIR, LLIR, PTX and cubin for a
//!   target, plus the [`LaunchManifest`] the runtime loads.
//!
//! The Python interpreter is the project's own `.venv/bin/python` (in a
//! folder above the running executable), else `$SYNCO_PYTHON`; never one
//! found from the current directory ([`Bridge::interpreter`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};
use synco_manifest::{LaunchManifest, Target};
use wait_timeout::ChildExt;

mod manifest;

pub use manifest::DescriptorMeta;
use manifest::build_manifest;

const BRIDGE_SOURCE: &str = include_str!("../python/synco_bridge.py");

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(
        "no Python with Triton found (looked for {searched} and $SYNCO_PYTHON); run `tools/dev setup`, \
         or set SYNCO_PYTHON to a python that has triton==3.6.0"
    )]
    PythonNotFound { searched: String },
    #[error("{python} cannot run Triton: {message}")]
    TritonUnavailable { python: PathBuf, message: String },
    #[error(
        "{python} exited ({status}) without answering the Triton bridge; what it printed:\n{output}"
    )]
    NoAnswer {
        python: PathBuf,
        status: String,
        output: String,
    },
    #[error(
        "the Triton bridge did not answer within {seconds} s (set SYNCO_BRIDGE_TIMEOUT to wait longer); what it printed:\n{output}"
    )]
    Timeout { seconds: u64, output: String },
    #[error("{0}")]
    Input(String),
    #[error("Triton failed in stage '{stage}':\n{message}")]
    Stage { stage: String, message: String },
    #[error("import round trip failed: {0}")]
    RoundTrip(String),
    #[error("the Triton bridge failed: {0}")]
    Internal(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> BridgeError {
    let context = context.into();
    move |source| BridgeError::Io { context, source }
}

/// Triton options a user sets on `triton.compile` (`num_warps`, ...).
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub num_warps: Option<u32>,
    pub num_stages: Option<u32>,
    /// Any other option of Triton's CUDA backend, by its Python name.
    pub extra: Map<String, Value>,
}

impl Options {
    fn to_json(&self) -> Value {
        let mut map = self.extra.clone();
        if let Some(n) = self.num_warps {
            map.insert("num_warps".into(), n.into());
        }
        if let Some(n) = self.num_stages {
            map.insert("num_stages".into(), n.into());
        }
        Value::Object(map)
    }
}

/// The oldest CUDA architecture whose PTX has the scoped acquire and release
/// memory operations the flags use.
pub const MIN_ARCH: u32 = 70;

/// Parses `sm_90a`, `sm90`, `90` or `cuda:90` into a CUDA target (sm_70 or
/// newer; the bridge checks that Triton's ptxas knows it).
pub fn parse_target(text: &str) -> Result<Target, BridgeError> {
    let digits = text
        .trim_start_matches("cuda:")
        .trim_start_matches("sm_")
        .trim_start_matches("sm")
        .trim_end_matches('a');
    let arch: u32 = digits.parse().map_err(|_| {
        BridgeError::Input(format!(
            "unknown target '{text}': expected a CUDA architecture such as sm_90a"
        ))
    })?;
    if arch < MIN_ARCH {
        return Err(BridgeError::Input(format!(
            "target '{text}': Synco's kernels wait with acquire loads and signal with release \
             stores, which need sm_{MIN_ARCH} or newer"
        )));
    }
    Ok(Target {
        backend: "cuda".into(),
        arch,
        warp_size: 32,
    })
}

/// What to import.
#[derive(Clone, Debug, Default)]
pub struct ImportRequest {
    /// A `.py` file with `@triton.jit` kernels, or a `.ttir` file.
    pub path: PathBuf,
    /// The kernel's name; optional when the file defines one kernel.
    pub kernel: Option<String>,
    /// Types of the kernel's runtime parameters, in order (`*bf16`, `i32`).
    pub signature: Vec<String>,
    /// Values of its `tl.constexpr` parameters (or of any parameter to
    /// specialise on, such as a unit stride).
    pub constexprs: Map<String, Value>,
    /// Parameters whose values (pointers or integers) are multiples of 16,
    /// as Triton's JIT specialises them: loads and stores can then be
    /// vectorised.
    pub divisible: Vec<String>,
    pub target: Target,
    pub options: Options,
}

#[derive(Clone, Debug)]
pub struct ImportedKernel {
    pub kernel: String,
    /// The kernel as a generic-form MLIR module, as Triton prints it.
    pub generic_mlir: String,
    /// Triton's own (pretty) print of the module, locations included: what
    /// any other generic text of the kernel must parse back to.
    pub triton_print: String,
    pub target: Target,
}

/// What compiling produced: one file per stage, and the launch manifest.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    pub kernel: String,
    pub ttir: PathBuf,
    pub ttgir: PathBuf,
    pub llir: PathBuf,
    pub ptx: PathBuf,
    pub cubin: PathBuf,
    pub manifest: LaunchManifest,
}

#[derive(Deserialize)]
struct Response {
    ok: bool,
    kind: Option<String>,
    stage: Option<String>,
    message: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct CompileFiles {
    ttir: PathBuf,
    ttgir: PathBuf,
    llir: PathBuf,
    ptx: PathBuf,
    cubin: PathBuf,
}

pub struct Bridge {
    python: PathBuf,
}

/// How long a bridge call may run: `$SYNCO_BRIDGE_TIMEOUT` seconds, or 600
/// (a kernel file that never returns from its import would hang forever).
fn bridge_timeout() -> std::time::Duration {
    let seconds = std::env::var("SYNCO_BRIDGE_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(600);
    std::time::Duration::from_secs(seconds)
}

/// The child's stdout and stderr, read on threads as it runs (so a full
/// pipe never blocks it).
struct Output(Vec<std::thread::JoinHandle<Vec<u8>>>);

impl Output {
    /// Everything the child printed, stdout then stderr, as text.
    fn join(self) -> String {
        let bytes: Vec<u8> = self
            .0
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

fn collect_output(child: &mut std::process::Child) -> Output {
    fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    }
    let mut handles = Vec::new();
    if let Some(out) = child.stdout.take() {
        handles.push(drain(out));
    }
    if let Some(err) = child.stderr.take() {
        handles.push(drain(err));
    }
    Output(handles)
}

impl Bridge {
    /// Finds the Python interpreter (see the crate docs).
    pub fn locate() -> Result<Self, BridgeError> {
        match Bridge::interpreter() {
            (Some(python), _) => Ok(Self::with_python(python)),
            (None, searched) => Err(BridgeError::PythonNotFound { searched }),
        }
    }

    /// The interpreter [`Bridge::locate`] would run and why (for `--help`),
    /// or `None` and where it looked: the project's own `.venv/bin/python`
    /// (the one in a folder above the running executable, as
    /// `target/debug/synco` sits in the repository), then `$SYNCO_PYTHON`.
    /// Never one found from the current directory: a `.venv` planted in a
    /// folder the user works in must not run.
    pub fn interpreter() -> (Option<PathBuf>, String) {
        let project = std::env::current_exe().ok().and_then(|exe| {
            exe.ancestors()
                .skip(1)
                .map(|dir| dir.join(".venv/bin/python"))
                .find(|candidate| candidate.exists())
        });
        if let Some(python) = project {
            return (Some(python), "the project's .venv".into());
        }
        if let Some(python) = std::env::var_os("SYNCO_PYTHON") {
            return (Some(python.into()), "$SYNCO_PYTHON".into());
        }
        (None, "a .venv above the synco binary".into())
    }

    pub fn with_python(python: impl Into<PathBuf>) -> Self {
        Self {
            python: python.into(),
        }
    }

    pub fn python(&self) -> &Path {
        &self.python
    }

    fn call(&self, request: Value) -> Result<Map<String, Value>, BridgeError> {
        let mut script = tempfile::Builder::new()
            .prefix("synco_bridge_")
            .suffix(".py")
            .tempfile()
            .map_err(io_error("cannot create the bridge script"))?;
        script
            .write_all(BRIDGE_SOURCE.as_bytes())
            .map_err(io_error("cannot write the bridge script"))?;
        // The answer comes back in a file of its own: whatever Triton,
        // ptxas or the user's kernel file print goes to stdout and stderr,
        // which are kept apart from it and shown.
        let answer = tempfile::Builder::new()
            .prefix("synco_answer_")
            .suffix(".json")
            .tempfile()
            .map_err(io_error("cannot create the bridge's answer file"))?;
        let mut child = Command::new(&self.python)
            .arg(script.path())
            .arg(answer.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| BridgeError::TritonUnavailable {
                python: self.python.clone(),
                message: format!("cannot start it: {e}"),
            })?;
        let output = collect_output(&mut child);
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(request.to_string().as_bytes())
                .map_err(io_error("cannot send the request to Python"))?;
        }
        let limit = bridge_timeout();
        let status = child
            .wait_timeout(limit)
            .map_err(io_error("cannot wait for the bridge"))?;
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BridgeError::Timeout {
                seconds: limit.as_secs(),
                output: output.join(),
            });
        };
        let printed = output.join();
        let text = std::fs::read(answer.path()).unwrap_or_default();
        let Ok(response) = serde_json::from_slice::<Response>(&text) else {
            return Err(BridgeError::NoAnswer {
                python: self.python.clone(),
                status: status.to_string(),
                output: printed,
            });
        };
        if !printed.trim().is_empty() {
            // Triton's and ptxas's own messages (register spills, ...).
            eprint!("{printed}");
        }
        if response.ok {
            return Ok(response.rest);
        }
        let message = response.message.unwrap_or_default();
        Err(match response.kind.as_deref() {
            Some("missing-triton") => BridgeError::TritonUnavailable {
                python: self.python.clone(),
                message,
            },
            Some("stage") => BridgeError::Stage {
                stage: response.stage.unwrap_or_else(|| "?".into()),
                message,
            },
            Some("round-trip") => BridgeError::RoundTrip(message),
            Some("input") => BridgeError::Input(message),
            _ => BridgeError::Internal(message),
        })
    }

    /// Imports a Triton kernel as generic-form MLIR (see the crate docs).
    pub fn import(&self, request: &ImportRequest) -> Result<ImportedKernel, BridgeError> {
        let path = absolute(&request.path)?;
        let answer = self.call(json!({
            "op": "import",
            "path": path,
            "kernel": request.kernel,
            "signature": request.signature,
            "constexprs": request.constexprs,
            "divisible": request.divisible,
            "target": request.target,
            "options": request.options.to_json(),
        }))?;
        Ok(ImportedKernel {
            kernel: string_field(&answer, "kernel")?,
            generic_mlir: string_field(&answer, "generic")?,
            triton_print: string_field(&answer, "triton_print")?,
            target: request.target.clone(),
        })
    }

    /// Checks that `generic` (another print of an imported kernel, such as
    /// MLIR 22's) parses in Triton to exactly the imported module.
    pub fn verify_same_module(
        &self,
        imported: &ImportedKernel,
        generic: &str,
    ) -> Result<(), BridgeError> {
        self.call(json!({
            "op": "verify",
            "generic": generic,
            "triton_print": imported.triton_print,
            "target": imported.target,
        }))
        .map(|_| ())
    }

    /// Compiles generic TTIR (one `tt.func`, no chunk ops left) into every
    /// stage under `out_dir`, and writes `<kernel>.json`, the manifest, with
    /// `fused` (the plan's schedule) in it if given.
    pub fn compile(
        &self,
        generic_ttir: &str,
        out_dir: &Path,
        target: &Target,
        options: &Options,
        fused: Option<synco_manifest::FusedPlan>,
    ) -> Result<CompiledKernel, BridgeError> {
        std::fs::create_dir_all(out_dir)
            .map_err(io_error(format!("cannot create {}", out_dir.display())))?;
        let out_dir = absolute(out_dir)?;
        let mut input = tempfile::Builder::new()
            .prefix("synco_input_")
            .suffix(".ttir")
            .tempfile()
            .map_err(io_error("cannot create a temporary .ttir"))?;
        input
            .write_all(generic_ttir.as_bytes())
            .map_err(io_error("cannot write a temporary .ttir"))?;
        let answer = self
            .call(json!({
                "op": "compile",
                "path": input.path(),
                "out_dir": out_dir,
                "target": target,
                "options": options.to_json(),
            }))
            .map_err(|error| point_at_source(error, input.path(), generic_ttir))?;
        let files: CompileFiles =
            serde_json::from_value(answer.get("files").cloned().unwrap_or_default())
                .map_err(|e| BridgeError::Internal(format!("bad 'files' in answer: {e}")))?;
        let kernel = string_field(&answer, "kernel")?;
        if Path::new(&kernel).file_name() != Some(std::ffi::OsStr::new(&kernel)) {
            return Err(BridgeError::Internal(format!(
                "the bridge named the kernel {kernel:?}, which is not a plain file name"
            )));
        }
        let metadata = answer
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let signature: Vec<String> =
            serde_json::from_value(answer.get("signature").cloned().unwrap_or_default())
                .map_err(|e| BridgeError::Internal(format!("bad 'signature' in answer: {e}")))?;
        let names: Vec<String> =
            serde_json::from_value(answer.get("param_names").cloned().unwrap_or_default())
                .map_err(|e| BridgeError::Internal(format!("bad 'param_names' in answer: {e}")))?;
        let divisibility: Vec<Option<u32>> = serde_json::from_value(
            answer
                .get("param_divisibility")
                .cloned()
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        let descriptors: Vec<Option<DescriptorMeta>> =
            serde_json::from_value(answer.get("tensordesc_meta").cloned().unwrap_or_default())
                .map_err(|e| {
                    BridgeError::Internal(format!("bad 'tensordesc_meta' in answer: {e}"))
                })?;
        let mut manifest = build_manifest(
            &kernel,
            &files.cubin,
            target,
            &metadata,
            &signature,
            &names,
            &descriptors,
        )?;
        for (param, by) in manifest.params.iter_mut().zip(divisibility) {
            param.divisible_by = by;
        }
        manifest.fused = fused;
        let manifest_path = out_dir.join(format!("{kernel}.json"));
        // What the runtime will check on load but the parameters' types,
        // checked before writing: a manifest that fails it is Synco's bug,
        // better seen here than on the GPUs.
        manifest.check_written(&manifest_path).map_err(|e| {
            BridgeError::Internal(format!("the launch manifest it made does not check: {e}"))
        })?;
        std::fs::write(&manifest_path, manifest.to_json()).map_err(io_error(format!(
            "cannot write {}",
            manifest_path.display()
        )))?;
        Ok(CompiledKernel {
            kernel,
            ttir: files.ttir,
            ttgir: files.ttgir,
            llir: files.llir,
            ptx: files.ptx,
            cubin: files.cubin,
            manifest,
        })
    }
}

/// Triton reports errors in the TTIR it was handed at positions in our
/// temporary file. Name each such line's own source location instead (the
/// op's `loc(...)`, alias resolved), so the user sees their file.
fn point_at_source(error: BridgeError, temp: &Path, generic: &str) -> BridgeError {
    let BridgeError::Stage { stage, message } = error else {
        return error;
    };
    let temp = temp.display().to_string();
    let lines: Vec<&str> = generic.lines().collect();
    let resolve_alias = |alias: &str| -> Option<String> {
        let prefix = format!("{alias} = ");
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(str::to_string)
    };
    let mut out = String::new();
    for line in message.lines() {
        let marker = format!("loc(\"{temp}\":");
        let Some(at) = line.find(&marker) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let rest = &line[at + marker.len()..];
        let line_no: Option<usize> = rest.split(':').next().and_then(|n| n.parse().ok());
        let op_loc = line_no
            .and_then(|n| lines.get(n.wrapping_sub(1)))
            .and_then(|text| {
                text.rfind(" loc(")
                    .map(|i| text[i + 1..].trim().to_string())
            })
            .map(
                |loc| match loc.strip_prefix("loc(#").and_then(|a| a.strip_suffix(')')) {
                    Some(alias) => resolve_alias(&format!("#{alias}")).unwrap_or(loc),
                    None => loc,
                },
            );
        let shown = line.replace(&temp, "<generic TTIR>");
        out.push_str(&shown);
        out.push('\n');
        if let Some(loc) = op_loc {
            out.push_str(&format!("  (the op is at {loc})\n"));
        }
    }
    BridgeError::Stage {
        stage,
        message: out.trim_end().to_string(),
    }
}

fn absolute(path: &Path) -> Result<PathBuf, BridgeError> {
    std::path::absolute(path).map_err(io_error(format!("bad path {}", path.display())))
}

fn string_field(answer: &Map<String, Value>, key: &str) -> Result<String, BridgeError> {
    answer
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| BridgeError::Internal(format!("the answer has no '{key}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_errors_point_at_the_source_location() {
        let generic = "#loc3 = loc(\"user.mlir\":4:5)\n\"builtin.module\"() ({\n  \"tt.foo\"() : () -> () loc(#loc3)\n}) : () -> ()\n";
        let error = BridgeError::Stage {
            stage: "parse".into(),
            message: "loc(\"/tmp/x.ttir\":3:3): error: bad op\nParse MLIR file failed.".into(),
        };
        let BridgeError::Stage { message, .. } =
            point_at_source(error, Path::new("/tmp/x.ttir"), generic)
        else {
            panic!("stays a stage error");
        };
        assert_eq!(
            message,
            "loc(\"<generic TTIR>\":3:3): error: bad op\n  (the op is at loc(\"user.mlir\":4:5))\nParse MLIR file failed."
        );
    }

    #[test]
    fn parses_targets() {
        for text in ["sm_90a", "sm90", "90", "cuda:90", "sm_90"] {
            assert_eq!(parse_target(text).unwrap().arch, 90, "{text}");
        }
        assert_eq!(parse_target("sm_80").unwrap().arch, 80);
        let old = parse_target("sm_52").unwrap_err().to_string();
        assert!(old.contains("need sm_70 or newer"), "{old}");
        let err = parse_target("hopper").unwrap_err().to_string();
        assert!(err.contains("unknown target 'hopper'"), "{err}");
    }

    #[test]
    fn missing_python_is_a_clear_error() {
        let bridge = Bridge::with_python("/nonexistent/python");
        let err = bridge
            .import(&ImportRequest {
                path: "k.ttir".into(),
                ..Default::default()
            })
            .unwrap_err();
        assert!(
            matches!(err, BridgeError::TritonUnavailable { .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("/nonexistent/python cannot run Triton"),
            "{err}"
        );
    }
}
