//! `synco._native`: what the Python package needs of the Rust side. A
//! launch manifest, read and checked as the runtime reads it, and the
//! runtime's own check of a launch's arguments, so that a wrong argument
//! raises the same error in Python, before any work is issued, as the
//! runtime gives; and the runtime itself for one rank of a process group
//! (`runtime.rs`).

mod runtime;

use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use synco_manifest::{LaunchManifest, ParamRole, ScalarType};
use synco_runtime::{Arg, TensorView};

create_exception!(
    _native,
    ManifestError,
    PyValueError,
    "A launch manifest that does not load: unreadable, malformed, or one the runtime cannot launch."
);
create_exception!(
    _native,
    LaunchError,
    PyValueError,
    "A launch the runtime refuses before issuing any work (an argument's count, type or value)."
);

/// A compiled kernel's launch manifest (`<kernel>.json`), checked as the
/// runtime checks it on load.
#[pyclass(frozen, module = "synco._native")]
struct Manifest {
    manifest: LaunchManifest,
    path: PathBuf,
}

#[pymethods]
impl Manifest {
    /// Reads and checks the manifest at `path`.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Manifest> {
        let manifest =
            LaunchManifest::load(&path).map_err(|e| ManifestError::new_err(e.to_string()))?;
        Ok(Manifest { manifest, path })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    #[getter]
    fn kernel(&self) -> &str {
        &self.manifest.kernel
    }

    /// The plan's ranks, or `None` for a kernel compiled without a plan.
    #[getter]
    fn world_size(&self) -> Option<i64> {
        self.manifest.fused.as_ref().map(|f| f.world_size)
    }

    /// The parameters the caller passes, in order: `(name, type)`, types
    /// in Triton's spelling (`*bf16`, `i32`, `fp32`,
    /// `tensordesc<bf16[64,128]>`).
    #[getter]
    fn user_params(&self) -> Vec<(String, String)> {
        user_params(&self.manifest)
    }

    /// The kernel argument each of `user_params` is (the two differ after
    /// a host tensor descriptor, whose shape and strides Triton passes as
    /// arguments of their own, filled by the runtime).
    #[getter]
    fn user_param_args(&self) -> Vec<usize> {
        self.manifest
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.role == ParamRole::User)
            .map(|(index, _)| index)
            .collect()
    }

    /// The plan's buffers the caller binds (not the kernel's own staging
    /// or trace buffers): `(name, shape, element, kernel argument or None)`,
    /// the shape what a rank holds (a buffer kept in ring slots: its own
    /// block and two slots, `held_rows` of dimension 0).
    #[getter]
    fn buffers(&self) -> Vec<(String, Vec<i64>, String, Option<usize>)> {
        let Some(fused) = &self.manifest.fused else {
            return Vec::new();
        };
        fused
            .buffers
            .iter()
            .filter(|b| !b.staging && !b.trace)
            .map(|b| {
                let mut shape = b.shape.clone();
                if let (Some(rows), Some(first)) = (b.held_rows, shape.first_mut()) {
                    *first = rows;
                }
                (b.name.clone(), shape, b.element.clone(), b.arg)
            })
            .collect()
    }

    /// The kernel arguments the plan fixes: `(argument, value, buffer,
    /// dimension, role)`, role one of `stride`, `extent`, `max_extent`,
    /// `multiple`.
    #[getter]
    fn scalar_args(&self) -> Vec<(usize, i64, String, usize, String)> {
        let Some(fused) = &self.manifest.fused else {
            return Vec::new();
        };
        fused
            .scalar_args
            .iter()
            .map(|a| {
                let role = match a.role {
                    synco_manifest::ScalarRole::Stride => "stride",
                    synco_manifest::ScalarRole::Extent => "extent",
                    synco_manifest::ScalarRole::MaxExtent => "max_extent",
                    synco_manifest::ScalarRole::Multiple => "multiple",
                };
                (a.arg, a.value, a.buffer.clone(), a.dim, role.to_string())
            })
            .collect()
    }

    /// Checks a launch's user arguments on `rank` as the runtime does
    /// before it issues anything: Python values converted to each
    /// parameter's type (an int for a pointer, an integer or a bool, a
    /// float for a floating-point scalar), then their number, types and
    /// the values the plan fixes; with `grid`, also the values the kernel
    /// computes from the grid and its arguments (its index bounds). Raises
    /// `LaunchError` (or `TypeError` for a value of the wrong Python type)
    /// naming the argument.
    #[pyo3(signature = (rank, args, grid=None))]
    fn check_args(
        &self,
        rank: usize,
        args: Vec<Bound<'_, PyAny>>,
        grid: Option<(u32, u32, u32)>,
    ) -> PyResult<()> {
        let values = to_args(&self.user_params(), &args)?;
        let launch = error_as_launch_error;
        synco_runtime::check_user_args(&self.manifest, rank, &values).map_err(launch)?;
        match grid {
            Some(grid) => synco_runtime::check_index_bounds(&self.manifest, rank, grid, &values)
                .map_err(launch),
            None => Ok(()),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Manifest(kernel='{}', path='{}')",
            self.manifest.kernel,
            self.path.display()
        )
    }
}

/// `m`'s parameters the caller passes: `(name, type)`, in order.
pub(crate) fn user_params(m: &LaunchManifest) -> Vec<(String, String)> {
    m.params
        .iter()
        .filter(|p| p.role == ParamRole::User)
        .map(|p| (p.name.clone(), p.ty.clone()))
        .collect()
}

/// `args` as the runtime's arguments, by the types of `params` (the user
/// parameters; a count that differs is the runtime check's to report).
pub(crate) fn to_args(
    params: &[(String, String)],
    args: &[Bound<'_, PyAny>],
) -> PyResult<Vec<Arg>> {
    args.iter()
        .enumerate()
        .map(|(i, value)| match params.get(i) {
            Some((name, ty)) => to_arg(name, ty, value),
            // Any value: the count is wrong, which the check reports.
            None => Ok(Arg::I32(0)),
        })
        .collect()
}

/// A Python value as an argument of type `ty`.
fn to_arg(name: &str, ty: &str, value: &Bound<'_, PyAny>) -> PyResult<Arg> {
    let wrong = |what: &str| {
        PyTypeError::new_err(format!(
            "argument '{name}' has type {ty}: expected {what}, got {}",
            value
                .get_type()
                .name()
                .map_or_else(|_| "?".to_string(), |n| n.to_string())
        ))
    };
    let out_of_range = || PyValueError::new_err(format!("argument '{name}' does not fit {ty}"));
    if ty.starts_with('*') {
        let address: u64 = value.extract().map_err(|_| wrong("an address (int)"))?;
        return Ok(Arg::Ptr(address));
    }
    if synco_manifest::descriptor_type(ty).is_some() {
        let expected = "(address, shape, strides) of the tensor it views";
        let (address, shape, strides): (u64, Vec<i64>, Vec<i64>) =
            value.extract().map_err(|_| wrong(expected))?;
        return TensorView::new(address, &shape, &strides)
            .map(Arg::Descriptor)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "argument '{name}' views {} dimensions with {} strides: a tensor descriptor has 1 to 5, one stride each",
                    shape.len(),
                    strides.len()
                ))
            });
    }
    let Some(scalar) = ScalarType::parse(ty) else {
        return Err(wrong("a type the runtime can pass"));
    };
    let is_bool = value.is_instance_of::<pyo3::types::PyBool>();
    let int = || -> PyResult<i64> {
        if is_bool {
            return Err(wrong("an int"));
        }
        value.extract::<i64>().map_err(|_| wrong("an int"))
    };
    let float = || -> PyResult<f64> {
        if is_bool {
            return Err(wrong("a float"));
        }
        value.extract::<f64>().map_err(|_| wrong("a float"))
    };
    Ok(match scalar {
        ScalarType::I1 => Arg::I1(value.extract::<bool>().map_err(|_| wrong("a bool"))?),
        ScalarType::I32 => Arg::I32(i32::try_from(int()?).map_err(|_| out_of_range())?),
        ScalarType::U32 => Arg::I32(
            u32::try_from(int()?)
                .map(|v| v as i32)
                .map_err(|_| out_of_range())?,
        ),
        ScalarType::I64 | ScalarType::U64 => Arg::I64(int()?),
        ScalarType::F16 => Arg::F16(synco_runtime::half::f16::from_f64(float()?)),
        ScalarType::BF16 => Arg::BF16(synco_runtime::half::bf16::from_f64(float()?)),
        ScalarType::F32 => Arg::F32(float()? as f32),
        ScalarType::F64 => Arg::F64(float()?),
        ScalarType::I8 | ScalarType::I16 | ScalarType::U8 | ScalarType::U16 => {
            return Err(wrong(
                "a type the runtime can pass (i1, i32, i64, fp16, bf16, fp32, fp64)",
            ));
        }
    })
}

/// `(element, block)` of a host tensor descriptor type, in Triton's
/// spelling or MLIR's (`tensordesc<bf16[64,128]>`: `("bf16", [64, 128])`),
/// else `None`: the parse the manifest and the runtime use.
#[pyfunction]
fn descriptor_type(ty: &str) -> Option<(String, Vec<u32>)> {
    synco_manifest::descriptor_type(ty).map(|(block, element)| (element, block))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Manifest>()?;
    m.add_function(wrap_pyfunction!(descriptor_type, m)?)?;
    m.add_class::<runtime::Node>()?;
    m.add_class::<runtime::Kernel>()?;
    m.add("WatchdogError", m.py().get_type::<runtime::WatchdogError>())?;
    m.add("ManifestError", m.py().get_type::<ManifestError>())?;
    m.add("LaunchError", m.py().get_type::<LaunchError>())?;
    Ok(())
}

fn error_as_launch_error(e: synco_runtime::RuntimeError) -> PyErr {
    LaunchError::new_err(e.to_string())
}
