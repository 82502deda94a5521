//! Loading a compiled kernel and building its launch arguments.

use crate::{
    error::{Result, RuntimeError},
    node::{Node, check},
};
use cudarc::driver::sys::{self, CUdeviceptr, CUfunction, CUmodule, CUstream};
use std::{ffi::CString, path::Path};
use synco_manifest::{LaunchManifest, ParamRole};

/// One kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    Ptr(CUdeviceptr),
    I32(i32),
    I64(i64),
    F32(f32),
}

impl Arg {
    fn kind(&self) -> &'static str {
        match self {
            Arg::Ptr(_) => "a pointer",
            Arg::I32(_) => "an i32",
            Arg::I64(_) => "an i64",
            Arg::F32(_) => "an f32",
        }
    }

    fn fits(&self, ty: &str) -> bool {
        match self {
            Arg::Ptr(_) => ty.starts_with('*'),
            Arg::I32(_) => matches!(ty, "i32" | "u32"),
            Arg::I64(_) => matches!(ty, "i64" | "u64"),
            Arg::F32(_) => ty == "fp32",
        }
    }

    fn bytes(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        match *self {
            Arg::Ptr(p) => out.copy_from_slice(&p.to_ne_bytes()),
            Arg::I64(v) => out.copy_from_slice(&v.to_ne_bytes()),
            Arg::I32(v) => out[..4].copy_from_slice(&v.to_ne_bytes()),
            Arg::F32(v) => out[..4].copy_from_slice(&v.to_ne_bytes()),
        }
        out
    }
}

/// A cubin loaded on every GPU of a node, with its manifest.
pub struct FusedKernel {
    pub manifest: LaunchManifest,
    /// This kernel's chunk flags (and ldst completion counters) on each
    /// rank, zeroed at load: flags belong to one plan, so kernels with other
    /// flag layouts never see each other's values.
    pub(crate) flags: Vec<CUdeviceptr>,
    functions: Vec<CUfunction>,
    _modules: Vec<CUmodule>,
}

impl FusedKernel {
    /// Loads `<manifest>` and the cubin it names on every GPU of `node`.
    pub fn load(node: &Node, manifest_path: &Path) -> Result<FusedKernel> {
        let manifest = LaunchManifest::load(manifest_path)?;
        let cubin_path = manifest.cubin_path(manifest_path);
        let cubin = std::fs::read(&cubin_path).map_err(|source| RuntimeError::Cubin {
            path: cubin_path.clone(),
            source,
        })?;
        let name = CString::new(manifest.kernel.clone()).unwrap_or_default();
        let mut functions = Vec::new();
        let mut modules = Vec::new();
        let mut flags = Vec::new();
        for (rank, gpu) in node.gpus.iter().enumerate() {
            gpu.bind()?;
            unsafe {
                let mut module = std::ptr::null_mut();
                check(
                    rank,
                    "cuModuleLoadData",
                    sys::cuModuleLoadData(&mut module, cubin.as_ptr().cast()),
                )?;
                let mut function = std::ptr::null_mut();
                check(
                    rank,
                    "cuModuleGetFunction",
                    sys::cuModuleGetFunction(&mut function, module, name.as_ptr()),
                )?;
                if manifest.shared_mem_bytes > 48 * 1024 {
                    check(
                        rank,
                        "cuFuncSetAttribute",
                        sys::cuFuncSetAttribute(
                            function,
                            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            manifest.shared_mem_bytes as i32,
                        ),
                    )?;
                }
                functions.push(function);
                modules.push(module);
                let count = manifest.fused.as_ref().map_or(1, |f| f.num_flags.max(1)) as usize;
                let mut p = 0;
                check(rank, "cuMemAlloc", sys::cuMemAlloc_v2(&mut p, 4 * count))?;
                check(rank, "cuMemsetD8", sys::cuMemsetD8_v2(p, 0, 4 * count))?;
                flags.push(p);
            }
        }
        Ok(FusedKernel {
            manifest,
            flags,
            functions,
            _modules: modules,
        })
    }

    /// Number of the kernel's own (role `user`) parameters.
    pub fn num_user_params(&self) -> usize {
        self.manifest
            .params
            .iter()
            .filter(|p| p.role == ParamRole::User)
            .count()
    }

    pub(crate) fn launch_on(
        &self,
        rank: usize,
        stream: CUstream,
        grid: (u32, u32, u32),
        user: &[Arg],
        abi: &[Arg],
        global_scratch: CUdeviceptr,
    ) -> Result<()> {
        let m = &self.manifest;
        if user.len() != self.num_user_params() {
            return Err(RuntimeError::ArgCount {
                kernel: m.kernel.clone(),
                expected: self.num_user_params(),
                given: user.len(),
            });
        }
        let mut values: Vec<[u8; 8]> = Vec::with_capacity(m.params.len());
        let (mut u, mut a) = (0, 0);
        for (index, param) in m.params.iter().enumerate() {
            let value = match param.role {
                ParamRole::User => {
                    u += 1;
                    user[u - 1]
                }
                ParamRole::Synco => {
                    a += 1;
                    abi.get(a - 1).copied().unwrap_or(Arg::I32(0))
                }
                ParamRole::GlobalScratch => Arg::Ptr(global_scratch),
                ParamRole::ProfileScratch => Arg::Ptr(0),
            };
            if !value.fits(&param.ty) {
                return Err(RuntimeError::ArgType {
                    kernel: m.kernel.clone(),
                    index,
                    name: param.name.clone(),
                    ty: param.ty.clone(),
                    given: value.kind(),
                });
            }
            values.push(value.bytes());
        }
        let mut pointers: Vec<*mut std::ffi::c_void> =
            values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
        unsafe {
            check(
                rank,
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    self.functions[rank],
                    grid.0,
                    grid.1,
                    grid.2,
                    32 * m.num_warps,
                    1,
                    1,
                    m.shared_mem_bytes,
                    stream,
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )
        }
    }
}
