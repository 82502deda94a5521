//! Synco's multi-GPU runtime.
//!
//! A [`Node`] drives ranks, each on a GPU with its primary context, a
//! compute stream and a copy stream, and a *symmetric heap*: one
//! allocation of the same size per rank, in which [`Node::alloc`] places
//! every symmetric buffer at the same offset on every rank. A peer's copy
//! of an address is then `addr - heap_bases[rank] + heap_bases[peer]`, the
//! rule the fused kernels use (see `synco-passes`' ABI). [`Node::open`]
//! and [`Node::open_shared`] drive every rank from one process (peer
//! access enabled between every pair of GPUs); [`Node::open_process`] is
//! one rank of a job with a process per rank, whose peers' heaps are mapped
//! from CUDA IPC handles that the caller's rendezvous (a PyTorch process
//! group, in the Python package) exchanges. Either way ranks order each
//! other's streams only through *sync words* in the heap (`sync.rs`): a
//! rank copies the launch's epoch into a word of each peer that waits for
//! its start, its kernel or its copies, and the peer's stream waits on its
//! own word; the kernels and manifests are the same for both. A launch is
//! ordered on each rank's stream as a collective is: peers touch a rank's
//! heap for it only after the rank's earlier stream work, and the rank's
//! later stream work comes after every peer's access (a kernel that
//! reaches into peers' heaps waits for their starts, and their launches
//! end after it).
//!
//! [`FusedKernel::load`] reads a cubin and its launch manifest (no Python,
//! no MLIR) and places the kernel's own storage at the heap's end: its
//! flags and the plan's staging buffers (`chunk.staging`), which
//! [`Node::unload`] gives back. [`Node::launch`] runs one fused operation
//! on every rank, once its bindings check out (every plan buffer the
//! schedule or the kernel uses is bound, no binding is smaller than its
//! plan buffer, and each kernel argument the plan binds, `bind(i)`, is its
//! buffer's address on that rank: otherwise copies and tiles would miss
//! each other or run past the buffer; an error, before any work is issued):
//!
//! 1. a new epoch of the kernel: its launch count. Flags are never reset (but
//!    by launches that replay, below): a
//!    flag is ready when it holds the current epoch or more, a counter that
//!    tiles bump `n` times per launch when it reaches `epoch * n`. Each loaded
//!    kernel has its own flags (a symmetric buffer at the heap's end, so
//!    peers can bump each other's counters) and its own epochs;
//! 2. on each rank's copy stream, after the previous launch on that rank
//!    and on every rank it copies into (their start signals), the manifest's copy-engine schedule
//!    of chunks the kernels wait for (an all-gather's): the rank's list in
//!    `copies` (chunks it pulls, or pushes into peers' heaps), each chunk
//!    copied between the ranks' heaps, then `cuStreamWriteValue32` sets the
//!    destination's flag to the epoch; every rank's copies are issued
//!    before any kernel;
//! 3. the kernel on each rank's compute stream, after the start of every
//!    peer its kernel reaches into (copy programs, tiles that push or pull
//!    partials: `FusedPlan::kernel_reaches_peers`) and the copies into the
//!    rank that stay within its GPU (marked `before_kernel`, e.g. an
//!    all-to-all's own block, or from a rank sharing the GPU: the driver
//!    may run them on SMs, which tiles waiting for them would hold), with
//!    the user's arguments,
//!    the ABI arguments (rank, world size, heap bases, flags, epoch, error
//!    buffer, plan buffers: a plan buffer without `bind(i)`, such as a
//!    reduction's output, is a symmetric buffer the caller binds by name in
//!    `launch`'s `bindings`; a staging buffer is the kernel's own) and
//!    Triton's scratch pointers (a persistent kernel, whose manifest has
//!    `persistent_programs`, with exactly that many programs; one marked
//!    `co_resident`, or whose tiles wait for other ranks' tiles while
//!    ranks share a GPU, only if its GPU holds all the programs of the
//!    ranks on it at once), with the `ldst`
//!    backend's copy programs in front of the grid (or in a plane in front
//!    of a 2D grid); then, issued after every rank's kernel (so that no
//!    kernel waits for the host to issue them, nor for another rank's),
//!    the copies of chunks the kernel's tiles produce (a reduction moved by
//!    the copy engine: `reduction_copies`), each after
//!    `cuStreamWaitValue32` on the tiles' counter, to a peer (the owner's
//!    staging buffer, a two-shot all-reduce's sums or a gathered output's
//!    chunks into every peer's output), the peer's flag then set by a
//!    4-byte copy of the epoch where a kernel waits for it (`arrived`).
//!    Where these copies set no `copied` flag (a copy-engine reduction or
//!    gathered output, whose kernel keeps no flags for the epochs), the
//!    streams keep the epochs apart instead: the copies wait for every
//!    destination's start (its previous launch done, so its tiles have read
//!    the previous epoch's chunks there), and the rank's next kernel waits
//!    for them (an event), so that its tiles overwrite partials and sums
//!    only once they were read;
//! 4. after every rank's copies, each rank's launch ends once its own side
//!    stream's copies are done, once every peer whose kernel reaches into
//!    it has signalled that kernel done, and once what peers write into it
//!    is there: a wait for the copies-done signal of every
//!    peer whose copies into it set no flag (a copy-engine all-reduce's
//!    sums, a gathered output's chunks), and stream waits
//!    (`cuStreamWaitValue32`, >=) on the counters the manifest's
//!    `completion` lists (rows peers' copy programs store into this rank:
//!    a two-shot all-reduce staged on SMs; one whose tiles push the sums
//!    waits for them in its kernel, though older manifests list them
//!    here too).
//!
//! A kernel that keeps a ring's blocks in two slots
//! (`FusedPlan::ring_steps`, `chunk.all_gather ... slots(2)`) launches once
//! per ring step, `steps` launches in a row per call, each as above: launch
//! `s` makes the copies of step `s` (`Copy::step`, the blocks the next
//! launch reads, their flags set to the next epoch), and its programs keep
//! their state between the launches after Triton's scratch
//! (`synco_step_state`). The watchdog keeps every step's stream waits and
//! names a stuck one with its own launch's epoch.
//!
//! A launch captured in a CUDA graph (the compute stream capturing, once
//! the kernel has run eagerly) makes the kernel's launches *replay* from
//! then on ([`FusedKernel::replays`], `docs/graph-capture.md`): each is
//! epoch 1, zeroes its flags, counters and sync words as it starts, and
//! runs between two barriers of every rank, so that a graph replays it
//! with the values it was captured with (a call of ring steps: epochs 1 to
//! W, its words zeroed at its first step).
//!
//! A kernel compiled with `chunk-trace-tiles` also owns a trace buffer:
//! [`Node::clear_trace`] once, then [`Node::read_trace`] after any launch
//! give when each tile of the last launch began, waited, published and
//! ended ([`TileTrace`]).
//!
//! [`Node::wait`] is the watchdog: it waits for every rank with a deadline,
//! then reads each rank's error buffer. A device-side wait that timed out
//! becomes [`RuntimeError::WaitTimedOut`] naming rank, chunk and epoch; a
//! stream that waits at a peer's signal (or a flag) for longer than the
//! peer timeout ([`Node::set_peer_timeout`], 10 s by default, counted once
//! the watchdog sees the launch started on the rank) becomes
//! [`RuntimeError::PeerTimedOut`] naming both ranks and the epoch; a
//! launch that never finishes becomes [`RuntimeError::Hung`] instead of a
//! hang.
//!
//! Only [`Node`] knows which process owns which rank: heaps, heap-base
//! tables, flags and sync words are per rank, and peers are reached only
//! through heap base addresses. In a job with a process per rank, a peer
//! that dies or never launches leaves this rank's tiles waiting for its
//! chunks until they time out, and streams waiting for its signals: the
//! watchdog reports the timed-out wait (rank, chunk, epoch) as soon as a
//! kernel records it, or the stream wait stuck at the peer, and the node
//! then refuses further launches ([`RuntimeError::Failed`]). A kernel's
//! first launch on a node waits on the host for the starts of the peers it
//! waits for (at most the peer timeout, then `PeerTimedOut` from `launch`
//! itself): a first `cuLaunchKernel` queued behind a stream wait that is
//! never met does not return. [`Node::inject_fault`] makes a node's
//! launches keep in step but do no work, for fault tests.

mod args;
mod bindings;
mod copies;
mod descriptor;
mod error;
mod heap;
mod kernel;
mod node;
mod sync;
mod timeline;
pub mod trace;

pub use args::Arg;
pub use bindings::{check_index_bounds, check_user_args};
pub use descriptor::TensorView;
pub use error::{ArgNotBuffer, IndexOutOfBuffer, RuntimeError, ScalarArgMismatch};
pub use heap::Buffer;
pub use kernel::FusedKernel;
pub use node::{DEFAULT_PEER_TIMEOUT, Exchange, Fault, Node};
pub use timeline::{CopySpan, LaunchTimeline};
pub use trace::TileTrace;

pub use cudarc::driver::sys::CUdeviceptr as DevicePtr;
/// A CUDA stream handle (`CUstream`), as [`Node::set_compute_stream`] takes it.
pub use cudarc::driver::sys::CUstream as CudaStream;
/// The crate whose `f16` and `bf16` [`Arg`] takes.
pub use half;
