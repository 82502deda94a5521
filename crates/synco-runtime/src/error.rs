use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("CUDA call {call} failed on rank {rank}: {code:?}")]
    Cuda {
        call: &'static str,
        rank: usize,
        code: cudarc::driver::sys::CUresult,
    },
    #[error("no CUDA driver (libcuda.so) on this machine: Synco's runtime needs NVIDIA GPUs")]
    NoDriver,
    #[error("cannot open GPU {gpu}: {message}")]
    Open { gpu: usize, message: String },
    #[error("this node has {found} GPUs, {wanted} were asked for")]
    NotEnoughGpus { wanted: usize, found: usize },
    #[error("{world_size} ranks cannot share {devices} GPUs: give from 1 to {world_size} GPUs")]
    BadSharing { world_size: usize, devices: usize },
    #[error("GPU {a} cannot access GPU {b}'s memory (no peer access)")]
    NoPeerAccess { a: usize, b: usize },
    #[error(transparent)]
    Manifest(#[from] synco_manifest::ManifestError),
    #[error("cannot read cubin {path}: {source}")]
    Cubin {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the symmetric heap is full: {wanted} bytes asked, {free} free")]
    HeapFull { wanted: usize, free: usize },
    #[error("kernel '{kernel}' takes {expected} arguments of its own, {given} were given")]
    ArgCount {
        kernel: String,
        expected: usize,
        given: usize,
    },
    #[error("argument {index} ('{name}') of '{kernel}' is {ty}, but the value given is {given}")]
    ArgType {
        kernel: String,
        index: usize,
        name: String,
        ty: String,
        given: &'static str,
    },
    #[error(
        "kernel '{kernel}' takes ABI argument '{name}', which this launch cannot provide \
         (a plan buffer without a binding?)"
    )]
    MissingAbiValue { kernel: String, name: String },
    #[error(
        "the kernel's {programs} copy programs do not fit in one plane of its {plane}-program 2D grid; \
         compile with fewer (chunk-lower-transfers{{copy-programs=N}})"
    )]
    CopyPlane { programs: u32, plane: u32 },
    #[error(
        "kernel '{kernel}' is persistent: its tile loop strides by {stride} programs, so it must be launched \
         with {stride} programs on axis 0, not {launched} (it would skip tiles or run some twice)"
    )]
    PersistentGrid {
        kernel: String,
        stride: u32,
        launched: u32,
    },
    #[error(
        "kernel '{kernel}' needs all its programs resident at once (its programs wait for other programs: a fused reduction's tiles, or copy programs that forward chunks), \
         but GPU {device} would run {programs} of them and holds {resident}: launch fewer (NUM_SMS, copy-programs) \
         or fewer ranks per GPU"
    )]
    NotCoResident {
        kernel: String,
        device: usize,
        programs: u32,
        resident: u32,
    },
    #[error("kernel '{kernel}': {reason}")]
    NotAlone {
        kernel: String,
        reason: &'static str,
    },
    #[error(
        "kernel '{kernel}': argument '{name}' is {value}, which is not a multiple of {by}: the kernel was compiled assuming it is (specialised as Triton's JIT does); compile it without that assumption, or pass an aligned value"
    )]
    NotDivisible {
        kernel: String,
        name: String,
        value: i64,
        by: u32,
    },
    #[error(
        "kernel '{kernel}': the tensor descriptor given for '{name}' cannot be read by a bulk copy: {what}"
    )]
    Descriptor {
        kernel: String,
        name: String,
        what: String,
    },
    #[error(transparent)]
    IndexOutOfBuffer(Box<IndexOutOfBuffer>),
    #[error("the manifest's plan is for {plan} ranks, the node has {node}")]
    WorldSize { plan: i64, node: usize },
    #[error("rank {rank} does not exist: the node has {world_size} ranks")]
    NoSuchRank { rank: usize, world_size: usize },
    #[error("rank {rank} runs in another process: this one drives ranks {local:?}")]
    NotLocal {
        rank: usize,
        local: std::ops::Range<usize>,
    },
    #[error("rank {rank} could not join its peers: {message}")]
    Rendezvous { rank: usize, message: String },
    #[error(
        "an earlier launch on rank {rank} failed ({reason}); its peers may still wait for it, so this node \
         launches nothing more: open a new one"
    )]
    Failed { rank: usize, reason: String },
    #[error(
        "a write of {bytes} bytes at offset {offset} runs past a symmetric buffer of {buffer} bytes"
    )]
    WritePastBuffer {
        offset: usize,
        bytes: usize,
        buffer: usize,
    },
    #[error("the plan's buffer @{0} has no symmetric buffer bound to it")]
    UnboundBuffer(String),
    #[error(
        "the plan's buffer @{name} ({shape} {element}) takes {needed} bytes, but the symmetric buffer bound to it holds {bound}"
    )]
    BufferTooSmall {
        name: String,
        shape: String,
        element: String,
        needed: usize,
        bound: usize,
    },
    #[error(transparent)]
    ArgNotBuffer(Box<ArgNotBuffer>),
    #[error(transparent)]
    ScalarArg(Box<ScalarArgMismatch>),
    #[error(
        "rank {rank} timed out waiting for chunk {chunk} of epoch {epoch}: its flag never reached the epoch's value \
         (the transfer or the tiles that set it did not happen or did not finish)"
    )]
    WaitTimedOut { rank: i32, chunk: i32, epoch: i32 },
    #[error(
        "rank {rank} timed out after {seconds:.1} s waiting for {awaited} in epoch {epoch} \
         (a peer that died, hung or never launched)"
    )]
    PeerTimedOut {
        rank: usize,
        awaited: String,
        epoch: u32,
        seconds: f64,
    },
    #[error(
        "the last launch recorded no timeline: call Node::record_timeline(true) before launching to time it"
    )]
    NoTimeline,
    #[error("kernel '{kernel}' cannot be launched: {reason}")]
    NotLaunchable { kernel: String, reason: String },
    #[error("'{kernel}' cannot be captured in a CUDA graph now: {reason}")]
    Capture {
        kernel: String,
        reason: &'static str,
    },
    #[error(
        "rank {rank} did not finish epoch {epoch} within {seconds} s; the GPU may still be busy"
    )]
    Hung {
        rank: usize,
        epoch: u32,
        seconds: f64,
    },
}

// The three largest errors are boxed, so that `Result<_, RuntimeError>`
// stays small.
/// A value the plan bounds lies outside its buffer on some program of a launch.
#[derive(Debug, thiserror::Error)]
#[error(
    "kernel '{kernel}' on rank {rank}: on program {program:?}, {what} in @{buffer} is {}: the grid or the arguments (head counts, lengths, strides) do not match the plan's buffer",
    out_of_bounds(*value, *lowest, *highest)
)]
pub struct IndexOutOfBuffer {
    pub kernel: String,
    pub rank: usize,
    pub buffer: String,
    pub what: String,
    pub program: [i64; 3],
    pub value: Option<i64>,
    pub lowest: i64,
    pub highest: i64,
}

/// A pointer argument is not the address of the buffer the plan binds to it.
#[derive(Debug, thiserror::Error)]
#[error(
    "argument {index} ('{param}') of '{kernel}' on rank {rank} is {given:#x}, but the plan binds it to @{buffer}, which lies at {expected:#x} on that rank: pass the bound buffer's address"
)]
pub struct ArgNotBuffer {
    pub kernel: String,
    pub rank: usize,
    pub index: usize,
    pub param: String,
    pub buffer: String,
    pub given: u64,
    pub expected: u64,
}

/// A scalar argument the plan fixes (a bound buffer's stride or extent) has another value.
#[derive(Debug, thiserror::Error)]
#[error(
    "argument {index} ('{param}') of '{kernel}' on rank {rank} is {given}, but the kernel takes the {role} of plan buffer @{buffer} along dimension {dim} from it, which the plan makes {}{expected}: compile for the shape you launch",
    role.qualifier()
)]
pub struct ScalarArgMismatch {
    pub kernel: String,
    pub rank: usize,
    pub index: usize,
    pub param: String,
    pub buffer: String,
    pub dim: usize,
    pub role: synco_manifest::ScalarRole,
    pub given: i64,
    pub expected: i64,
}

pub type Result<T> = std::result::Result<T, RuntimeError>;

/// What an [`IndexOutOfBuffer`] value is against its bounds.
fn out_of_bounds(value: Option<i64>, lowest: i64, highest: i64) -> String {
    match value {
        None => "not computable (an overflow or a division by zero)".into(),
        Some(v) if v > highest => format!("{v}, past {highest}"),
        Some(v) => format!("{v}, below {lowest}"),
    }
}
