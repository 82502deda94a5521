//! The runtime for one rank of a job with a process per rank: `Node` (the
//! rank's symmetric heap, its peers' mapped through the caller's exchange)
//! and `Kernel` (a fused kernel loaded on it, launched on the caller's
//! stream). The Python side (`synco.runtime`) turns torch tensors into the
//! addresses and heap offsets these take, and checks them first.

use crate::{LaunchError, to_args, user_params};
use pyo3::exceptions::{PyRuntimeError, PyTimeoutError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::{path::PathBuf, time::Duration};
use synco_runtime::{Buffer, Fault, FusedKernel, RuntimeError};

pyo3::create_exception!(
    _native,
    WatchdogError,
    PyTimeoutError,
    "A launch that did not finish: a wait that timed out on the GPU (naming rank, chunk and epoch), a stream that waited too long for a peer (naming both ranks and the epoch) or a rank whose streams never drained. The node launches nothing more."
);

fn runtime_error(e: RuntimeError) -> PyErr {
    match e {
        RuntimeError::WaitTimedOut { .. }
        | RuntimeError::PeerTimedOut { .. }
        | RuntimeError::Hung { .. }
        | RuntimeError::Failed { .. } => WatchdogError::new_err(e.to_string()),
        RuntimeError::ArgCount { .. }
        | RuntimeError::ArgType { .. }
        | RuntimeError::ArgNotBuffer(_)
        | RuntimeError::ScalarArg(_)
        | RuntimeError::UnboundBuffer(_)
        | RuntimeError::BufferTooSmall { .. }
        | RuntimeError::WorldSize { .. }
        | RuntimeError::PersistentGrid { .. }
        | RuntimeError::CopyPlane { .. }
        | RuntimeError::NotCoResident { .. }
        | RuntimeError::NotAlone { .. }
        | RuntimeError::NotDivisible { .. }
        | RuntimeError::Descriptor { .. }
        | RuntimeError::IndexOutOfBuffer(_)
        | RuntimeError::NotLaunchable { .. }
        | RuntimeError::Capture { .. } => LaunchError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// One rank's node: `Node.open_process(rank, world_size, device,
/// heap_bytes, exchange)`, where `exchange(bytes)` returns every rank's
/// bytes in rank order (an all-gather over the process group); or, for
/// tests and tools, every rank in this process: `Node.open_shared(...)`.
#[pyclass(unsendable, module = "synco._native")]
pub(crate) struct Node {
    node: synco_runtime::Node,
    /// The rank this process drives, or `None` where it drives them all.
    rank: Option<usize>,
}

#[pymethods]
impl Node {
    #[staticmethod]
    fn open_process(
        rank: usize,
        world_size: usize,
        device: usize,
        heap_bytes: usize,
        exchange: Bound<'_, PyAny>,
    ) -> PyResult<Node> {
        let mut call = |mine: Vec<u8>| -> Result<Vec<Vec<u8>>, String> {
            let all = exchange
                .call1((PyBytes::new(exchange.py(), &mine),))
                .map_err(|e| e.to_string())?;
            all.extract::<Vec<Vec<u8>>>()
                .map_err(|e| format!("the exchange must return a list of bytes: {e}"))
        };
        let node =
            synco_runtime::Node::open_process(rank, world_size, device, heap_bytes, &mut call)
                .map_err(runtime_error)?;
        Ok(Node {
            node,
            rank: Some(rank),
        })
    }

    /// Every one of `world_size` ranks in this process, rank r on GPU r
    /// mod `devices` (the runtime's single-process node, as the Rust
    /// benchmarks use it): launched with `Kernel.launch_ranks`.
    #[staticmethod]
    fn open_shared(world_size: usize, devices: usize, heap_bytes: usize) -> PyResult<Node> {
        let node = synco_runtime::Node::open_shared(world_size, devices, heap_bytes)
            .map_err(runtime_error)?;
        Ok(Node { node, rank: None })
    }

    /// The rank this process drives (`None`: every rank).
    #[getter]
    fn rank(&self) -> Option<usize> {
        self.rank
    }

    #[getter]
    fn world_size(&self) -> usize {
        self.node.world_size()
    }

    /// Places a symmetric buffer of `bytes` in the heap (at the same offset
    /// on every rank, when every rank allocates the same in the same
    /// order): returns its offset.
    fn alloc(&mut self, bytes: usize) -> PyResult<usize> {
        Ok(self.node.alloc(bytes).map_err(runtime_error)?.offset)
    }

    /// How long (seconds) this rank's streams may wait for a peer's signal
    /// before `wait` raises `WatchdogError` (default: the kernels' own
    /// bound on a spin, 10 s).
    fn set_peer_timeout(&mut self, seconds: f64) -> PyResult<()> {
        let timeout = Duration::try_from_secs_f64(seconds)
            .map_err(|e| LaunchError::new_err(format!("peer timeout {seconds} s: {e}")))?;
        self.node.set_peer_timeout(timeout);
        Ok(())
    }

    /// For fault tests: `"withhold_work"` makes this rank keep in step with
    /// its peers (its signals) but issue neither copies nor kernels, so the
    /// chunks its peers wait for never come; `"stall_issue"` makes its host
    /// stall 300 ms in each launch between signalling its start and issuing
    /// its work (peers run ahead of it); `"none"` undoes either.
    fn inject_fault(&mut self, fault: &str) -> PyResult<()> {
        let fault = match fault {
            "none" => Fault::None,
            "withhold_work" => Fault::WithholdWork,
            "stall_issue" => Fault::StallIssue,
            other => {
                return Err(LaunchError::new_err(format!(
                    "no fault '{other}': 'none', 'withhold_work' or 'stall_issue'"
                )));
            }
        };
        self.node.inject_fault(fault);
        Ok(())
    }

    /// Frees every buffer (kernels' storage stays).
    fn reset_heap(&mut self) {
        self.node.reset_heap();
    }

    /// The address of heap offset 0 on `rank`, in this process.
    fn heap_base(&self, rank: usize) -> PyResult<u64> {
        if rank >= self.node.world_size() {
            return Err(LaunchError::new_err(format!(
                "rank {rank} does not exist: the group has {} ranks",
                self.node.world_size()
            )));
        }
        Ok(self.node.ptr(
            rank,
            &Buffer {
                offset: 0,
                bytes: 0,
            },
        ))
    }

    /// Loads the kernel whose launch manifest is at `manifest`.
    fn load(slf: Bound<'_, Self>, manifest: PathBuf) -> PyResult<Kernel> {
        let kernel =
            FusedKernel::load(&mut slf.borrow_mut().node, &manifest).map_err(runtime_error)?;
        Ok(Kernel {
            node: slf.unbind(),
            params: user_params(&kernel.manifest),
            kernel: Some(kernel),
        })
    }

    /// Waits at most `timeout` seconds for this rank's last launch (on
    /// `stream` where given: a CUDA graph replays launches on the stream
    /// current at the replay), then reads its error buffer:
    /// `WatchdogError` naming rank, chunk and epoch for a wait that timed
    /// out on the GPU.
    #[pyo3(signature = (timeout, stream=None))]
    fn wait(&mut self, py: Python<'_>, timeout: f64, stream: Option<usize>) -> PyResult<()> {
        if let (Some(stream), Some(rank)) = (stream, self.rank) {
            self.node
                .set_compute_stream(rank, stream as synco_runtime::CudaStream)
                .map_err(runtime_error)?;
        }
        let deadline = Duration::from_secs_f64(timeout.max(0.0));
        let node = OwnerThreadOnly(&self.node);
        py.detach(move || node.wait(deadline))
            .map_err(runtime_error)
    }
}

/// The node, lent to code that runs while the interpreter lets other
/// threads run (`Python::detach`).
struct OwnerThreadOnly<'a>(&'a synco_runtime::Node);

// SAFETY: `Node` is `unsendable`: Python code on other threads cannot reach
// it (PyO3 refuses), so while its owner thread waits with the interpreter
// released, this reference stays the only use, on that same thread.
unsafe impl Send for OwnerThreadOnly<'_> {}

impl OwnerThreadOnly<'_> {
    fn wait(&self, deadline: Duration) -> Result<(), RuntimeError> {
        self.0.wait(deadline)
    }
}

/// A fused kernel loaded on a `Node`.
#[pyclass(unsendable, module = "synco._native")]
pub(crate) struct Kernel {
    node: Py<Node>,
    /// The kernel's own parameters, `(name, type)` (read once, at load).
    params: Vec<(String, String)>,
    kernel: Option<FusedKernel>,
}

#[pymethods]
impl Kernel {
    /// Launches on `stream` (a CUDA stream handle of this rank's GPU, e.g.
    /// `torch.cuda.current_stream().cuda_stream`) over `grid`, with the
    /// kernel's own arguments `args` (addresses as ints, scalars) and the
    /// plan's buffers bound by name to `(heap offset, bytes)`. Every check
    /// runs before any work is issued.
    fn launch(
        &self,
        py: Python<'_>,
        grid: (u32, u32, u32),
        args: Vec<Bound<'_, PyAny>>,
        bindings: Vec<(String, usize, usize)>,
        stream: usize,
    ) -> PyResult<()> {
        let kernel = self.loaded()?;
        let values = to_args(&self.params, &args)?;
        let buffers = heap_buffers(&bindings);
        let mut node = self.node.borrow_mut(py);
        let rank = node.rank.ok_or_else(|| {
            LaunchError::new_err("this node drives every rank: launch with launch_ranks")
        })?;
        node.node
            .set_compute_stream(rank, stream as synco_runtime::CudaStream)
            .map_err(runtime_error)?;
        node.node
            .launch(kernel, grid, &|_| values.clone(), &buffers)
            .map_err(runtime_error)
    }

    /// On a node that drives every rank (`Node.open_shared`): one launch
    /// on every rank, on the node's own streams, with `args_by_rank[r]`
    /// rank r's arguments (as `launch` takes them).
    fn launch_ranks(
        &self,
        py: Python<'_>,
        grid: (u32, u32, u32),
        args_by_rank: Vec<Vec<Bound<'_, PyAny>>>,
        bindings: Vec<(String, usize, usize)>,
    ) -> PyResult<()> {
        let kernel = self.loaded()?;
        let values = args_by_rank
            .iter()
            .map(|args| to_args(&self.params, args))
            .collect::<PyResult<Vec<_>>>()?;
        let buffers = heap_buffers(&bindings);
        let mut node = self.node.borrow_mut(py);
        if node.rank.is_some() || values.len() != node.node.world_size() {
            return Err(LaunchError::new_err(format!(
                "launch_ranks takes every rank's arguments ({} ranks) on a node that drives them all",
                node.node.world_size()
            )));
        }
        node.node
            .launch(kernel, grid, &|rank| values[rank].clone(), &buffers)
            .map_err(runtime_error)
    }

    /// Marks every chunk `rank`'s launches wait for as present (for
    /// benchmarks: the kernel then runs only through `launch_alone`).
    fn mark_chunks_present(&self, py: Python<'_>, rank: usize) -> PyResult<()> {
        let kernel = self.loaded()?;
        let node = self.node.borrow(py);
        node.node
            .mark_chunks_present(rank, kernel)
            .map_err(runtime_error)
    }

    /// Launches `rank`'s kernel alone on `stream` (no copies, no peers),
    /// its chunks marked present: the fused kernel's own time, to compare
    /// with the local kernel's (a kernel without a plan runs the same way).
    #[allow(clippy::too_many_arguments)]
    fn launch_alone(
        &self,
        py: Python<'_>,
        rank: usize,
        grid: (u32, u32, u32),
        args: Vec<Bound<'_, PyAny>>,
        bindings: Vec<(String, usize, usize)>,
        stream: usize,
    ) -> PyResult<()> {
        let kernel = self.loaded()?;
        let values = to_args(&self.params, &args)?;
        let buffers = heap_buffers(&bindings);
        let mut node = self.node.borrow_mut(py);
        node.node
            .set_compute_stream(rank, stream as synco_runtime::CudaStream)
            .map_err(runtime_error)?;
        node.node
            .launch_alone(kernel, rank, grid, &values, &buffers)
            .map_err(runtime_error)
    }

    /// This kernel's launches so far (the last one's epoch, unless its
    /// launches replay).
    #[getter]
    fn epoch(&self) -> PyResult<u32> {
        Ok(self.loaded()?.epochs())
    }

    /// Whether this kernel's launches replay: one was captured in a CUDA
    /// graph, so every launch since is epoch 1 on zeroed words, between
    /// two barriers of every rank.
    #[getter]
    fn replays(&self) -> PyResult<bool> {
        Ok(self.loaded()?.replays())
    }

    /// Gives the kernel's storage back once its launches are done.
    fn unload(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(kernel) = self.kernel.take() {
            self.node
                .borrow_mut(py)
                .node
                .unload(kernel)
                .map_err(runtime_error)?;
        }
        Ok(())
    }
}

/// `(plan buffer, heap offset, bytes)` bindings as the runtime takes them.
fn heap_buffers(bindings: &[(String, usize, usize)]) -> Vec<(&str, Buffer)> {
    bindings
        .iter()
        .map(|(name, offset, bytes)| {
            (
                name.as_str(),
                Buffer {
                    offset: *offset,
                    bytes: *bytes,
                },
            )
        })
        .collect()
}

impl Kernel {
    fn loaded(&self) -> PyResult<&FusedKernel> {
        self.kernel
            .as_ref()
            .ok_or_else(|| LaunchError::new_err("this kernel was unloaded"))
    }
}
