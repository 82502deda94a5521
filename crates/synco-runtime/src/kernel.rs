//! Loading a compiled kernel and launching it.

use crate::args::{Arg, BoundsKey, ParamValue, kernel_params};
use crate::descriptor;
use crate::{
    error::{Result, RuntimeError},
    heap::{Buffer, aligned},
    node::{Node, check},
    sync::{SyncPlan, SyncWords},
};
use cudarc::driver::sys::{self, CUdeviceptr, CUfunction, CUmodule, CUstream};
use std::{ffi::CString, path::Path};
use synco_manifest::{LaunchManifest, ParamRole};

/// A persistent kernel (`persistent_programs` in its manifest) must be
/// launched with exactly the programs its tile loop strides by, in a 1D
/// grid: fewer skip tiles, more run some twice.
pub(crate) fn check_persistent_grid(
    manifest: &LaunchManifest,
    grid: (u32, u32, u32),
) -> Result<()> {
    match manifest.fused.as_ref().and_then(|f| f.persistent_programs) {
        Some(stride) if grid != (stride, 1, 1) => Err(RuntimeError::PersistentGrid {
            kernel: manifest.kernel.clone(),
            stride,
            launched: grid.0 * grid.1 * grid.2,
        }),
        _ => Ok(()),
    }
}

/// A kernel whose programs must all be resident at once
/// (`FusedPlan::co_resident`): `programs` of each of the `sharing` ranks on
/// one GPU must fit in the `resident` programs it holds, or the programs
/// already running would wait for ones that never start.
pub(crate) fn check_co_resident(
    kernel: &str,
    device: usize,
    programs: u32,
    sharing: u32,
    resident: u32,
) -> Result<()> {
    if programs * sharing <= resident {
        return Ok(());
    }
    Err(RuntimeError::NotCoResident {
        kernel: kernel.to_string(),
        device,
        programs: programs * sharing,
        resident,
    })
}

/// How many programs of `function` rank `rank`'s GPU (its context bound)
/// holds at once: blocks per SM at the manifest's warps and shared memory,
/// times the SMs.
fn resident_programs(
    rank: usize,
    gpu: &crate::node::Gpu,
    function: CUfunction,
    manifest: &LaunchManifest,
) -> Result<u32> {
    let mut per_sm = 0;
    unsafe {
        check(
            rank,
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut per_sm,
                function,
                (manifest.num_warps * 32) as i32,
                manifest.shared_mem_bytes as usize,
            ),
        )?;
    }
    let sms = gpu
        .ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| RuntimeError::Open {
            gpu: gpu.device,
            message: format!("{e:?}"),
        })?;
    Ok((per_sm.max(0) * sms.max(0)) as u32)
}

/// A cubin loaded on every GPU of a node, with its manifest.
pub struct FusedKernel {
    pub manifest: LaunchManifest,
    /// This kernel's chunk flags and counters, a symmetric buffer (peers
    /// bump each other's counters) zeroed at load: flags belong to one
    /// plan, so kernels with other flag layouts never see each other's
    /// values.
    pub(crate) flags: Buffer,
    /// The sync words after the flags, and who waits for whom.
    pub(crate) words: SyncWords,
    pub(crate) sync: SyncPlan,
    /// The first rank of the node it was loaded on (its functions and
    /// modules are those of the node's ranks, in order).
    first_rank: usize,
    /// The plan's staging buffers (`PlanBuffer::staging`), by name: the
    /// kernel's own, never bound by the caller.
    pub(crate) staging: Vec<(String, Buffer)>,
    /// Flags and staging buffers: one region at the heap's end.
    pub(crate) storage: Buffer,
    /// Launches so far: the last launch's epoch, unless launches replay.
    pub(crate) epochs: std::cell::Cell<u32>,
    /// Its launches replay (`docs/graph-capture.md`): once one was captured
    /// in a CUDA graph, every launch zeroes its words and runs epoch 1.
    pub(crate) replays: std::cell::Cell<bool>,
    /// Its flags were marked reached for every epoch
    /// ([`crate::Node::mark_chunks_present`]): a launch with peers would
    /// not wait for anything, so only [`crate::Node::launch_alone`] runs it.
    pub(crate) chunks_marked_present: std::cell::Cell<bool>,
    /// The grid and integer arguments of the last launch whose index
    /// bounds were evaluated (and held): a launch with the same ones
    /// skips the evaluation.
    pub(crate) bounds_checked_for: std::cell::RefCell<Option<BoundsKey>>,
    /// Per rank, how many programs of this kernel its GPU holds at once
    /// (blocks per SM x SMs), for kernels whose programs must all be
    /// resident (`FusedPlan::co_resident`, or tiles that wait for other
    /// ranks' tiles: `FusedPlan::waits_for_tiles`); empty otherwise.
    pub(crate) resident: Vec<u32>,
    functions: Vec<CUfunction>,
    modules: Vec<CUmodule>,
}

impl FusedKernel {
    /// Loads `<manifest>` and the cubin it names on every GPU of `node`,
    /// and places its flags in the symmetric heap (they stay there for the
    /// node's life: a few bytes per chunk).
    pub fn load(node: &mut Node, manifest_path: &Path) -> Result<FusedKernel> {
        let manifest = LaunchManifest::load(manifest_path)?;
        let cubin_path = manifest.cubin_path(manifest_path);
        let cubin = std::fs::read(&cubin_path).map_err(|source| RuntimeError::Cubin {
            path: cubin_path.clone(),
            source,
        })?;
        let name = CString::new(manifest.kernel.clone()).unwrap_or_default();
        let mut functions = Vec::new();
        let mut modules = Vec::new();
        // Resident programs per GPU, for the launch checks (see
        // `Node::launch`): kernels whose programs wait for other programs.
        let co_resident = manifest
            .fused
            .as_ref()
            .is_some_and(|f| f.co_resident || f.waits_for_tiles());
        let mut resident = Vec::new();
        for gpu in &node.gpus {
            let rank = gpu.rank;
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
                // Loaded onto the GPU now, not at its first launch (CUDA's
                // lazy loading), so that loading stays out of the first
                // launch. (A first launch queued behind a stream wait that
                // is never met still blocks the host: see
                // `Node::await_first_starts`.)
                check(rank, "cuFuncLoad", sys::cuFuncLoad(function))?;
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
            }
            if co_resident {
                let function = *functions.last().unwrap_or(&std::ptr::null_mut());
                resident.push(resident_programs(rank, gpu, function, &manifest)?);
            }
        }
        // The flags and the sync words (see `sync.rs`), then the staging
        // buffers.
        let words = SyncWords {
            num_flags: manifest.fused.as_ref().map_or(0, |f| f.num_flags.max(0)) as usize,
            world_size: node.world_size(),
        };
        let sync = manifest.fused.as_ref().map_or_else(SyncPlan::default, |f| {
            SyncPlan::new(f, &|a, b| node.same_gpu(a, b))
        });
        let count = words.count();
        let staging_sizes: Vec<(String, usize)> = manifest
            .fused
            .iter()
            .flat_map(|f| &f.buffers)
            .filter(|b| b.staging)
            .map(|b| (b.name.clone(), b.bytes().max(0) as usize))
            .collect();
        let total = aligned(4 * count)
            + staging_sizes
                .iter()
                .map(|(_, b)| aligned(*b))
                .sum::<usize>();
        let storage = node.alloc_kernel_storage(total)?;
        let flags = Buffer {
            offset: storage.offset,
            bytes: 4 * count,
        };
        for rank in node.local_ranks() {
            node.fill(rank, &flags, 0)?;
        }
        let mut offset = storage.offset + aligned(4 * count);
        let staging = staging_sizes
            .into_iter()
            .map(|(name, bytes)| {
                let buffer = Buffer { offset, bytes };
                offset += aligned(bytes);
                (name, buffer)
            })
            .collect();
        Ok(FusedKernel {
            manifest,
            flags,
            words,
            sync,
            first_rank: node.local_ranks().start,
            staging,
            storage,
            epochs: std::cell::Cell::new(0),
            replays: std::cell::Cell::new(false),
            chunks_marked_present: std::cell::Cell::new(false),
            bounds_checked_for: std::cell::RefCell::new(None),
            resident,
            functions,
            modules,
        })
    }

    /// Unloads the cubin from every GPU (see `Node::unload`).
    pub(crate) fn unload_modules(self, node: &Node) -> Result<()> {
        for (rank, module) in (self.first_rank..).zip(self.modules) {
            node.local(rank).bind()?;
            unsafe { check(rank, "cuModuleUnload", sys::cuModuleUnload(module))? };
        }
        Ok(())
    }

    /// The kernel's launches so far (the last launch's epoch, unless its
    /// launches replay).
    pub fn epochs(&self) -> u32 {
        self.epochs.get()
    }

    /// Counts a new launch; returns its epoch: the launch count, or 1 for
    /// launches that replay (they zero the words the epochs tell apart).
    pub(crate) fn next_epoch(&self) -> u32 {
        let launches = self.epochs.get() + 1;
        self.epochs.set(launches);
        if self.replays.get() { 1 } else { launches }
    }

    /// Whether its launches replay (see [`FusedKernel::replays`]).
    pub fn replays(&self) -> bool {
        self.replays.get()
    }

    /// `peers`, whose start words a stream waits for, or none where the
    /// launches replay: they wait for every peer at their start barrier.
    pub(crate) fn start_waits<'a>(&self, peers: &'a [usize]) -> &'a [usize] {
        if self.replays() { &[] } else { peers }
    }

    /// `bindings` and the kernel's own staging buffers (which the caller
    /// never binds), as a launch binds the plan's buffers.
    pub(crate) fn with_staging<'a>(
        &'a self,
        bindings: &[(&'a str, Buffer)],
    ) -> Vec<(&'a str, Buffer)> {
        bindings
            .iter()
            .copied()
            .chain(self.staging.iter().map(|(name, b)| (name.as_str(), *b)))
            .collect()
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
        abi: &dyn Fn(&str) -> Option<Arg>,
        global_scratch: CUdeviceptr,
    ) -> Result<()> {
        let m = &self.manifest;
        let mut values = kernel_params(m, user, abi, global_scratch, &descriptor::encode)?;
        let mut pointers: Vec<*mut std::ffi::c_void> =
            values.iter_mut().map(ParamValue::as_mut_ptr).collect();
        unsafe {
            check(
                rank,
                "cuLaunchKernel",
                sys::cuLaunchKernel(
                    self.functions[rank - self.first_rank],
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::args::test_support::manifest;

    /// A persistent kernel runs with exactly its tile loop's stride of
    /// programs; other kernels with any grid.
    #[test]
    fn persistent_kernels_launch_with_their_stride() {
        let mut m = manifest(&[]);
        assert!(check_persistent_grid(&m, (7, 3, 1)).is_ok());
        m.fused = Some(
            serde_json::from_str(
                r#"{"plan": "p", "world_size": 2, "num_flags": 4, "buffers": [], "chunks": [],
                    "copies": [], "persistent_programs": 132}"#,
            )
            .expect("a fused plan"),
        );
        assert!(check_persistent_grid(&m, (132, 1, 1)).is_ok());
        for grid in [(124, 1, 1), (133, 1, 1), (66, 2, 1)] {
            match check_persistent_grid(&m, grid) {
                Err(RuntimeError::PersistentGrid {
                    stride: 132,
                    launched,
                    ..
                }) => assert_eq!(launched, grid.0 * grid.1 * grid.2),
                other => panic!("{grid:?}: {other:?}"),
            }
        }
    }

    /// Programs that wait for each other must fit on the GPU together,
    /// counting every rank that shares it.
    #[test]
    fn co_resident_programs_fit_on_their_gpu() {
        assert!(check_co_resident("k", 0, 132, 1, 132).is_ok());
        assert!(check_co_resident("k", 0, 33, 4, 132).is_ok());
        match check_co_resident("k", 1, 34, 4, 132) {
            Err(RuntimeError::NotCoResident {
                device: 1,
                programs: 136,
                resident: 132,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert!(check_co_resident("k", 0, 140, 1, 132).is_err());
    }
}
