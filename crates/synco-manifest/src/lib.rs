//! The launch manifest: a JSON file written next to a cubin by
//! `synco compile`, read by the runtime. It says everything needed to launch
//! the kernel with no Python and no MLIR at run time.
//!
//! ```json
//! {
//!   "format": "synco-launch-manifest", "version": 1,
//!   "kernel": "matmul_kernel", "cubin": "matmul_kernel.cubin",
//!   "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
//!   "num_warps": 8, "num_ctas": 1, "shared_mem_bytes": 32768,
//!   "params": [
//!     {"name": "a_ptr", "type": "*bf16", "role": "user"}, ...,
//!     {"name": "global_scratch", "type": "*i8", "role": "global_scratch"},
//!     {"name": "profile_scratch", "type": "*i8", "role": "profile_scratch"}
//!   ],
//!   "global_scratch": {"size": 0, "align": 1},
//!   "profile_scratch": {"size": 0, "align": 1},
//!   "triton_version": "3.6.0"
//! }
//! ```
//!
//! Kernel parameters follow Triton 3.6's ABI: the kernel's own arguments in
//! order, then two pointers Triton appends (global scratch, profile
//! scratch). A scratch pointer may be null when its size is 0.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod params;

pub use params::{Param, ParamRole, ScalarType, triton_type_name};

pub const FORMAT: &str = "synco-launch-manifest";
pub const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub backend: String,
    pub arch: u32,
    pub warp_size: u32,
}

impl Default for Target {
    fn default() -> Self {
        Self {
            backend: "cuda".into(),
            arch: 90,
            warp_size: 32,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scratch {
    pub size: u64,
    pub align: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchManifest {
    pub format: String,
    pub version: u32,
    pub kernel: String,
    /// The cubin, relative to the manifest's directory.
    pub cubin: PathBuf,
    pub target: Target,
    pub num_warps: u32,
    pub num_ctas: u32,
    pub shared_mem_bytes: u32,
    pub params: Vec<Param>,
    pub global_scratch: Scratch,
    pub profile_scratch: Scratch,
    pub triton_version: String,
    /// For fused kernels: the plan's buffers, chunk flags and host transfer
    /// schedule (written by `chunk-lower-transfers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused: Option<FusedPlan>,
}

/// A buffer of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanBuffer {
    pub name: String,
    /// The kernel argument it binds, if any.
    pub arg: Option<usize>,
    pub shape: Vec<i64>,
    pub element: String,
    pub element_bytes: Option<i64>,
    /// Scratch of the fused operation (the copy engine's staging buffer of
    /// a reduction): the runtime allocates it with the kernel.
    #[serde(default)]
    pub staging: bool,
    /// The kernel's trace records (`chunk-trace-tiles`; also `staging`):
    /// read back with the runtime's `Node::read_trace`.
    #[serde(default)]
    pub trace: bool,
}

impl PlanBuffer {
    /// Bytes the buffer takes (0 for an element type of unknown size); a
    /// loaded manifest's buffers have a size (see [`LaunchManifest::load`]).
    pub fn bytes(&self) -> i64 {
        self.checked_bytes().unwrap_or(0)
    }

    /// Bytes the buffer takes, or `None` if a dimension is negative or the
    /// size does not fit in an `i64`.
    pub fn checked_bytes(&self) -> Option<i64> {
        self.shape
            .iter()
            .chain([&self.element_bytes.unwrap_or(0)])
            .try_fold(
                1i64,
                |bytes, &n| if n < 0 { None } else { bytes.checked_mul(n) },
            )
    }
}

/// What a buffer's chunk flags count (see `synco-passes`' flag layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    /// A consumed buffer: a flag per chunk, set to the epoch on arrival.
    #[default]
    Arrival,
    /// A reduced partial: a counter per chunk that tiles bump.
    Reduction,
    /// An output the tiles produce and the copy engine sends to every peer:
    /// a counter per chunk that tiles bump (the copies set no flag).
    Output,
}

/// How a consumed or reduced buffer is chunked, and where its flags are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkLayout {
    pub buffer: String,
    #[serde(default)]
    pub kind: ChunkKind,
    pub dim: usize,
    pub rows_per_chunk: i64,
    pub chunks_per_rank: i64,
    pub flag_base: i64,
}

/// One copy the host drives on its side stream: `rows` rows of `row_elems`
/// elements, from `src_buffer` on `src_rank` to `dst_buffer` on
/// `dst_rank` (offsets and pitches in elements), then `flag` (if any) of
/// `dst_rank` is set to the epoch. A copy `before_kernel` (within one rank:
/// the driver may run it on SMs, which the kernel's waiting tiles would
/// hold) runs on the compute stream right before the kernel instead, and
/// sets no flag. A side-stream copy without a flag is one no tile waits
/// for: a later flagged copy in the same list to the same rank implies it
/// (`chunk-insert-waits`: the gathered operators' A rows, followed by B's
/// chunks), as the runtime sets no flag before every copy ahead of it in
/// the list has landed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Copy {
    pub name: Option<String>,
    pub order: i64,
    pub src_rank: i64,
    pub dst_rank: i64,
    pub src_buffer: String,
    pub dst_buffer: String,
    pub src_offset: i64,
    pub dst_offset: i64,
    pub rows: i64,
    pub row_elems: i64,
    pub src_pitch: i64,
    pub dst_pitch: i64,
    pub flag: Option<i64>,
    #[serde(default)]
    pub before_kernel: bool,
}

/// One copy the side stream makes once kernel tiles have finished a chunk
/// (a reduce-scatter or two-shot all-reduce moved by the copy engine): after
/// `produced.0 >= epoch * produced.1` (this rank's tiles of the chunk are
/// done) and, if given, `consumed.0 >= (epoch - 1) * consumed.1` (the
/// destination read the previous epoch's), `bytes` from `src_buffer` at
/// `src_offset` here to `dst_buffer` at `dst_offset` on rank `owner`; then,
/// if given, the epoch into flag `arrived` on `owner` and flag `copied`
/// here. A copy without `copied` leaves it to the runtime to keep the
/// kernel's next launch from overwriting the chunk before it was read
/// ([`FusedPlan::copies_ordered_by_streams`]); one without `arrived` is
/// waited for by no kernel, only by the end of `owner`'s launch, which the
/// runtime orders after this rank's copies
/// ([`FusedPlan::sources_ordered_by_streams`]). Offsets in bytes. With
/// `rows`, the copy is 2D: `rows.count` rows
/// of `bytes` each (a column chunk of a row-major output, see
/// `chunk-fuse-gathers`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReductionCopy {
    pub src_buffer: String,
    pub dst_buffer: String,
    pub owner: i64,
    pub src_offset: i64,
    pub dst_offset: i64,
    pub bytes: i64,
    pub produced: (i64, i64),
    #[serde(default)]
    pub consumed: Option<(i64, i64)>,
    #[serde(default)]
    pub arrived: Option<i64>,
    #[serde(default)]
    pub copied: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<CopyRows>,
}

/// The rows of a 2D [`ReductionCopy`]: `count` rows, `src_pitch` and
/// `dst_pitch` bytes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyRows {
    pub count: i64,
    pub src_pitch: i64,
    pub dst_pitch: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusedPlan {
    pub plan: String,
    pub world_size: i64,
    pub num_flags: i64,
    /// Programs the runtime adds in front of the kernel's 1D grid to copy
    /// `ldst` chunks (0 when the copy engine moves everything).
    #[serde(default)]
    pub copy_programs: u32,
    /// The copy programs are an extra plane of a 2D grid
    /// (`program_id(2) = 0`, in front of the kernel's plane) instead of
    /// programs in front of a 1D grid.
    #[serde(default)]
    pub copy_plane: bool,
    /// A persistent kernel's tile loop strides by this many programs (a
    /// constant such as Triton's `NUM_SMS`): launched with any other count
    /// on axis 0 (copy programs aside), it would skip tiles or run some
    /// twice, so the runtime refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_programs: Option<u32>,
    /// Every program of a launch (copy programs included, and those of the
    /// other ranks sharing the GPU) must be resident at once: a persistent
    /// kernel whose programs wait for other programs' tiles (a fused
    /// reduction). The runtime refuses a launch the GPU cannot hold.
    #[serde(default)]
    pub co_resident: bool,
    pub buffers: Vec<PlanBuffer>,
    pub chunks: Vec<ChunkLayout>,
    /// `copies[r]`: what rank `r` drives, in schedule order.
    pub copies: Vec<Vec<Copy>>,
    /// `completion[r]`: `(flag, count)` pairs rank `r`'s launch waits for
    /// after its kernel (flag >= epoch * count): rows other ranks' copy
    /// programs write into this rank's buffers (a two-shot all-reduce
    /// staged on SMs; manifests compiled before the kernels of a two-shot
    /// on SM stores waited for the pushed sums themselves list those too).
    /// Empty for other plans (what the copy engine writes into a rank ends
    /// its launch through the streams:
    /// [`FusedPlan::sources_ordered_by_streams`]).
    #[serde(default)]
    pub completion: Vec<Vec<(i64, i64)>>,
    /// `reduction_copies[r]`: chunks of a partial that rank `r`'s side
    /// stream copies to their owner as the kernel finishes them (a
    /// reduce-scatter moved by the copy engine), in order.
    #[serde(default)]
    pub reduction_copies: Vec<Vec<ReductionCopy>>,
    /// Kernel scalar arguments whose values the plan fixes (strides of
    /// bound buffers, as the kernel's address arithmetic uses them): the
    /// runtime refuses a launch that passes another value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scalar_args: Vec<ScalarArg>,
}

/// A kernel argument the plan fixes (`value`; see [`ScalarRole`]): the
/// kernel steps dimension `dim` of plan buffer `buffer` by argument `arg`
/// (its row-major stride, in elements), takes that dimension's extent from
/// it (the number of tiles along it, a tensor descriptor's shape), or
/// bounds what it addresses along it (a mask). Launched with another
/// value, the kernel would address elements the plan does not put there,
/// or outside the buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScalarArg {
    pub arg: usize,
    pub value: i64,
    pub buffer: String,
    pub dim: usize,
    #[serde(default)]
    pub role: ScalarRole,
}

/// What a [`ScalarArg`] is to its buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarRole {
    /// The row-major stride along `dim`: exactly `value`.
    #[default]
    Stride,
    /// The extent along `dim` the kernel's tiles walk: exactly `value` (a
    /// tile map's dimension, a tensor descriptor's shape).
    Extent,
    /// A bound on what the kernel addresses along `dim` (a mask, a tile
    /// count of an access the plan has no tile map for): at most `value`,
    /// the buffer's extent (the rest may be written by transfers).
    MaxExtent,
}

impl ScalarRole {
    /// Whether `given` is what this role allows for `value`.
    pub fn allows(self, given: i64, value: i64) -> bool {
        match self {
            ScalarRole::MaxExtent => given <= value,
            _ => given == value,
        }
    }
}

impl std::fmt::Display for ScalarRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ScalarRole::Stride => "stride",
            ScalarRole::Extent => "extent",
            ScalarRole::MaxExtent => "bound",
        })
    }
}

impl FusedPlan {
    /// The copies, reduction copies and completion waits name ranks and
    /// flags of this plan (the runtime indexes its GPUs and writes the flag
    /// array with them), 2D reduction copies' rows do not overlap, the
    /// buffers' sizes fit an `i64`, and every copy's bytes lie inside the
    /// plan buffers it names (the runtime copies at the offsets given).
    fn check_schedule(&self, path: &Path) -> Result<(), ManifestError> {
        let ranks = 0..self.world_size;
        let rank = |copy: String, r: i64| {
            if ranks.contains(&r) {
                Ok(())
            } else {
                Err(ManifestError::CopyRank {
                    path: path.into(),
                    copy,
                    rank: r,
                    world_size: self.world_size,
                })
            }
        };
        let flag = |what: String, flag: i64| {
            if (0..self.num_flags).contains(&flag) {
                Ok(())
            } else {
                Err(ManifestError::FlagIndex {
                    path: path.into(),
                    what,
                    flag,
                    num_flags: self.num_flags,
                })
            }
        };
        for buffer in &self.buffers {
            buffer
                .checked_bytes()
                .ok_or_else(|| ManifestError::BufferSize {
                    path: path.into(),
                    buffer: buffer.name.clone(),
                    shape: buffer.shape.clone(),
                })?;
        }
        // A copy's bytes lie inside its buffers (the runtime checks that
        // every bound buffer holds its plan buffer's bytes). `unit`: what
        // the start, pitch and width count, the buffer's elements (a
        // gather's copies) or bytes (reduction copies).
        enum Unit {
            Elements,
            Bytes,
        }
        let inside =
            |what: &str, buffer: &str, unit: Unit, [start, rows, pitch, width]: [i64; 4]| {
                let Some(plan_buffer) = self.buffers.iter().find(|b| b.name == buffer) else {
                    return Err(ManifestError::CopyBuffer {
                        path: path.into(),
                        what: what.into(),
                        buffer: buffer.into(),
                    });
                };
                let size = plan_buffer.checked_bytes().unwrap_or(0);
                let scale = match unit {
                    Unit::Elements => plan_buffer.element_bytes.unwrap_or(0) as i128,
                    Unit::Bytes => 1,
                };
                let [start, pitch, width] = [start, pitch, width].map(|v| v as i128 * scale);
                let rows = rows as i128;
                let end = start + (rows - 1) * pitch + width;
                if plan_buffer.element_bytes.is_none()
                    || start < 0
                    || rows < 1
                    || width < 1
                    || (rows > 1 && pitch < width)
                    || end > size as i128
                {
                    return Err(ManifestError::CopyOutOfBounds {
                        path: path.into(),
                        what: what.into(),
                        buffer: buffer.into(),
                        size,
                        span: format!(
                            "{rows} rows of {width} bytes, {pitch} bytes apart, from byte {start}"
                        ),
                    });
                }
                Ok(())
            };
        for (driver, list) in self.copies.iter().enumerate() {
            for copy in list {
                let name = copy.name.clone().unwrap_or_default();
                for r in [driver as i64, copy.src_rank, copy.dst_rank] {
                    rank(name.clone(), r)?;
                }
                if let Some(f) = copy.flag {
                    flag(format!("copy '{name}'"), f)?;
                }
                let what = format!("copy '{name}'");
                for (buffer, offset, pitch) in [
                    (&copy.src_buffer, copy.src_offset, copy.src_pitch),
                    (&copy.dst_buffer, copy.dst_offset, copy.dst_pitch),
                ] {
                    inside(
                        &what,
                        buffer,
                        Unit::Elements,
                        [offset, copy.rows, pitch, copy.row_elems],
                    )?;
                }
            }
        }
        for (source, list) in self.reduction_copies.iter().enumerate() {
            for (i, copy) in list.iter().enumerate() {
                let what = format!("reduction copy {i} of rank {source}");
                for r in [source as i64, copy.owner] {
                    rank(what.clone(), r)?;
                }
                let flags = [
                    Some(copy.produced.0),
                    copy.consumed.map(|c| c.0),
                    copy.arrived,
                    copy.copied,
                ];
                for f in flags.into_iter().flatten() {
                    flag(what.clone(), f)?;
                }
                if let Some(rows) = copy.rows
                    && (rows.count < 1
                        || rows.src_pitch < copy.bytes
                        || rows.dst_pitch < copy.bytes)
                {
                    return Err(ManifestError::CopyRows {
                        path: path.into(),
                        what,
                        count: rows.count,
                        bytes: copy.bytes,
                        src_pitch: rows.src_pitch,
                        dst_pitch: rows.dst_pitch,
                    });
                }
                let (count, pitches) = match copy.rows {
                    Some(r) => (r.count, [r.src_pitch, r.dst_pitch]),
                    None => (1, [copy.bytes; 2]),
                };
                for ((buffer, offset), pitch) in [
                    (&copy.src_buffer, copy.src_offset),
                    (&copy.dst_buffer, copy.dst_offset),
                ]
                .into_iter()
                .zip(pitches)
                {
                    inside(
                        &what,
                        buffer,
                        Unit::Bytes,
                        [offset, count, pitch, copy.bytes],
                    )?;
                }
            }
        }
        for (rank, waits) in self.completion.iter().enumerate() {
            for &(f, _) in waits {
                flag(format!("the completion of rank {rank}"), f)?;
            }
        }
        Ok(())
    }

    /// Whether the kernel's tiles wait for other ranks' tiles (a fused
    /// reduction: counters per chunk), not only for copies.
    pub fn waits_for_tiles(&self) -> bool {
        self.chunks.iter().any(|c| c.kind == ChunkKind::Reduction)
    }

    /// Whether the kernel itself reads or writes peers' heaps: copy
    /// programs (the `ldst` backend) that pull or push chunks, or tiles
    /// that push partials to their owners, bump peers' counters or read
    /// peers' partials (a fused reduction whose partials the copy engine
    /// does not move). The runtime then starts each rank's kernel after
    /// every peer's start and ends every peer's launch after it (see the
    /// runtime's `sync.rs`).
    pub fn kernel_reaches_peers(&self) -> bool {
        let world = self.world_size.max(0);
        let by_copy_engine = |chunk: &ChunkLayout| {
            let flags = chunk.flag_base
                ..chunk
                    .flag_base
                    .saturating_add(chunk.chunks_per_rank.saturating_mul(world));
            self.reduction_copies
                .iter()
                .flatten()
                .any(|copy| flags.contains(&copy.produced.0))
        };
        self.copy_programs > 0
            || self
                .chunks
                .iter()
                .any(|c| c.kind == ChunkKind::Reduction && !by_copy_engine(c))
    }

    /// Whether some reduction copy sets no `copied` flag: the kernel's
    /// tiles then overwrite that chunk in the next launch without waiting
    /// for the copy engine, and the runtime must start the next launch's
    /// kernel only once this launch's copies are done (a copy-engine
    /// reduction, a gathered output of `chunk-fuse-gathers`; the SM-staged
    /// mode's copy programs set theirs).
    pub fn copies_ordered_by_streams(&self) -> bool {
        self.reduction_copies
            .iter()
            .flatten()
            .any(|c| c.copied.is_none())
    }

    /// The ranks whose reduction copies into `rank` set no `arrived` flag
    /// (a gathered output's chunks, a copy-engine all-reduce's sums): no
    /// kernel waits for them, and `rank`'s launch ends only once each of
    /// those ranks' side streams has made its copies. Ascending.
    pub fn sources_ordered_by_streams(&self, rank: usize) -> Vec<usize> {
        self.reduction_copies
            .iter()
            .enumerate()
            .filter(|(_, copies)| {
                copies
                    .iter()
                    .any(|c| c.owner == rank as i64 && c.arrived.is_none())
            })
            .map(|(source, _)| source)
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read manifest {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a launch manifest: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{path}: expected format '{FORMAT}' version {VERSION}, found '{format}' version {version}"
    )]
    Format {
        path: PathBuf,
        format: String,
        version: u32,
    },
    #[error("{path}: {what}")]
    Launch { path: PathBuf, what: String },
    #[error("parameter '{param}' has type '{ty}', which the runtime cannot pass")]
    UnsupportedType { param: String, ty: String },
    #[error("{path}: copy '{copy}' names rank {rank}, outside the plan's {world_size} ranks")]
    CopyRank {
        path: PathBuf,
        copy: String,
        rank: i64,
        world_size: i64,
    },
    #[error(
        "{path}: plan buffer @{buffer} of shape {shape:?} has a negative dimension or more bytes than an i64 counts"
    )]
    BufferSize {
        path: PathBuf,
        buffer: String,
        shape: Vec<i64>,
    },
    #[error("{path}: {what} names @{buffer}, which is not a buffer of the plan")]
    CopyBuffer {
        path: PathBuf,
        what: String,
        buffer: String,
    },
    #[error(
        "{path}: {what} reaches outside @{buffer} ({size} bytes, or its element size is unknown): {span}"
    )]
    CopyOutOfBounds {
        path: PathBuf,
        what: String,
        buffer: String,
        size: i64,
        /// The rows it copies, in words.
        span: String,
    },
    #[error("{path}: {what} names flag {flag}, outside the kernel's {num_flags} flags")]
    FlagIndex {
        path: PathBuf,
        what: String,
        flag: i64,
        num_flags: i64,
    },
    #[error(
        "{path}: {what} copies {count} rows of {bytes} bytes with pitches {src_pitch} / {dst_pitch}: rows would overlap"
    )]
    CopyRows {
        path: PathBuf,
        what: String,
        count: i64,
        bytes: i64,
        src_pitch: i64,
        dst_pitch: i64,
    },
}

impl LaunchManifest {
    /// Reads and checks a manifest.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.into(),
            source,
        })?;
        let manifest: Self =
            serde_json::from_str(&text).map_err(|source| ManifestError::Parse {
                path: path.into(),
                source,
            })?;
        manifest.check(path)?;
        Ok(manifest)
    }

    /// What [`LaunchManifest::load`] checks once it has parsed the file at
    /// `path` (named in the errors): what [`LaunchManifest::check_written`]
    /// does, and that the runtime can pass every parameter's type.
    pub fn check(&self, path: &Path) -> Result<(), ManifestError> {
        self.check_written(path)?;
        for param in &self.params {
            param.size_bytes()?;
        }
        Ok(())
    }

    /// What the compiler checks before it writes a manifest: the format
    /// and version, the launch shape, and the schedule's ranks, flags and
    /// copies. Not the parameters' types: emitting a kernel never depends
    /// on what the runtime can launch.
    pub fn check_written(&self, path: &Path) -> Result<(), ManifestError> {
        if self.format != FORMAT || self.version != VERSION {
            return Err(ManifestError::Format {
                path: path.into(),
                format: self.format.clone(),
                version: self.version,
            });
        }
        self.check_launch(path)?;
        if let Some(fused) = &self.fused {
            fused.check_schedule(path)?;
        }
        Ok(())
    }

    /// The launch shape the runtime can start: one CTA per program (it
    /// launches no thread-block clusters) of 1 to 32 warps, a power of two.
    fn check_launch(&self, path: &Path) -> Result<(), ManifestError> {
        let what = if self.num_ctas != 1 {
            format!(
                "the kernel was compiled for {} CTAs per program (num_ctas); the runtime \
                 launches one, without thread-block clusters",
                self.num_ctas
            )
        } else if !(self.num_warps.is_power_of_two() && self.num_warps <= 32) {
            format!(
                "num_warps {}: a program runs 1, 2, 4, 8, 16 or 32 warps",
                self.num_warps
            )
        } else {
            return Ok(());
        };
        Err(ManifestError::Launch {
            path: path.into(),
            what,
        })
    }

    /// The cubin's path, resolved against the manifest's directory.
    pub fn cubin_path(&self, manifest_path: &Path) -> PathBuf {
        manifest_path
            .parent()
            .unwrap_or(Path::new("."))
            .join(&self.cubin)
    }

    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LaunchManifest {
        LaunchManifest {
            format: FORMAT.into(),
            version: VERSION,
            kernel: "k".into(),
            cubin: "k.cubin".into(),
            target: Target::default(),
            num_warps: 4,
            num_ctas: 1,
            shared_mem_bytes: 1024,
            params: vec![
                Param {
                    name: "a".into(),
                    ty: "*bf16".into(),
                    role: ParamRole::User,
                },
                Param {
                    name: "n".into(),
                    ty: "i32".into(),
                    role: ParamRole::User,
                },
                Param {
                    name: "global_scratch".into(),
                    ty: "*i8".into(),
                    role: ParamRole::GlobalScratch,
                },
            ],
            global_scratch: Scratch { size: 0, align: 1 },
            profile_scratch: Scratch { size: 0, align: 1 },
            triton_version: "3.6.0".into(),
            fused: None,
        }
    }

    /// Copy programs, and reduction chunks whose partials no copy-engine
    /// copy moves, reach into peers' heaps; a copy-engine gather or
    /// reduction does not (checked against the PTX of the 80 one-GPU bench
    /// variants: those that read `synco_heap_bases` are exactly these).
    #[test]
    fn tells_kernels_that_reach_into_peers() {
        let plan = |copy_programs: u32, reduction: bool, copied_by_engine: bool| -> FusedPlan {
            let chunk = format!(
                r#"{{"buffer": "P", "kind": "{}", "dim": 0, "rows_per_chunk": 64,
                    "chunks_per_rank": 2, "flag_base": 4}}"#,
                if reduction { "reduction" } else { "arrival" }
            );
            // Flags 4..8 are the chunk's counters (2 chunks x 2 ranks).
            let copy = r#"{"src_buffer": "P", "dst_buffer": "S", "owner": 1, "src_offset": 0,
                           "dst_offset": 0, "bytes": 64, "produced": [6, 1]}"#;
            let copies = if copied_by_engine { format!("[[{copy}], []]") } else { "[[], []]".into() };
            serde_json::from_str(&format!(
                r#"{{"plan": "p", "world_size": 2, "num_flags": 8, "copy_programs": {copy_programs},
                    "buffers": [], "chunks": [{chunk}], "copies": [[], []],
                    "reduction_copies": {copies}}}"#
            ))
            .expect("a fused plan")
        };
        assert!(!plan(0, false, false).kernel_reaches_peers()); // copy-engine gather
        assert!(plan(16, false, false).kernel_reaches_peers()); // ldst gather
        assert!(plan(0, true, false).kernel_reaches_peers()); // tiles push partials
        assert!(!plan(0, true, true).kernel_reaches_peers()); // copy-engine reduction
        assert!(plan(2, true, true).kernel_reaches_peers()); // staged on SMs
    }

    #[test]
    fn round_trips_through_json_and_resolves_the_cubin() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.json");
        std::fs::write(&path, sample().to_json()).unwrap();
        let loaded = LaunchManifest::load(&path).unwrap();
        assert_eq!(loaded, sample());
        assert_eq!(loaded.cubin_path(&path), dir.join("k.cubin"));
        assert!(sample().to_json().contains(r#""role": "global_scratch""#));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_other_formats_and_unknown_types() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.json");
        let mut m = sample();
        m.version = 99;
        std::fs::write(&path, m.to_json()).unwrap();
        assert!(matches!(
            LaunchManifest::load(&path),
            Err(ManifestError::Format { .. })
        ));
        let mut m = sample();
        m.params[1].ty = "tensor".into();
        std::fs::write(&path, m.to_json()).unwrap();
        let err = LaunchManifest::load(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "parameter 'n' has type 'tensor', which the runtime cannot pass"
        );
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            LaunchManifest::load(&path),
            Err(ManifestError::Parse { .. })
        ));
        for (ctas, warps, says) in [(2, 4, "compiled for 2 CTAs"), (1, 6, "num_warps 6")] {
            let mut m = sample();
            m.num_ctas = ctas;
            m.num_warps = warps;
            std::fs::write(&path, m.to_json()).unwrap();
            let err = LaunchManifest::load(&path).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_copies_outside_the_plans_ranks() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-ranks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.json");
        let copy: Copy = serde_json::from_str(
            r#"{"name": "A_p1_c0", "order": 1, "src_rank": 2, "dst_rank": 0, "src_buffer": "A",
                "dst_buffer": "A", "src_offset": 0, "dst_offset": 0, "rows": 1, "row_elems": 8,
                "src_pitch": 8, "dst_pitch": 8, "flag": 2}"#,
        )
        .unwrap();
        let mut m = sample();
        m.fused = Some(
            serde_json::from_str(
                r#"{"plan": "p", "world_size": 2, "num_flags": 4, "buffers": [], "chunks": [], "copies": []}"#,
            )
            .unwrap(),
        );
        m.fused.as_mut().unwrap().copies = vec![vec![copy], vec![]];
        std::fs::write(&path, m.to_json()).unwrap();
        let err = LaunchManifest::load(&path).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("copy 'A_p1_c0' names rank 2, outside the plan's 2 ranks"),
            "{err}"
        );
        // A rank inside the plan, a flag outside the kernel's.
        let fused = m.fused.as_mut().unwrap();
        fused.copies[0][0].src_rank = 1;
        fused.copies[0][0].flag = Some(9);
        std::fs::write(&path, m.to_json()).unwrap();
        let err = LaunchManifest::load(&path).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("copy 'A_p1_c0' names flag 9, outside the kernel's 4 flags"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_reduction_copies_outside_the_plan() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-rc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.json");
        const C: &str =
            r#"{"name": "C", "arg": 2, "shape": [4, 256], "element": "bf16", "element_bytes": 2}"#;
        let load = |copy: &str, completion: &str| {
            let mut m = sample();
            m.fused = Some(
                serde_json::from_str(&format!(
                    r#"{{"plan": "p", "world_size": 2, "num_flags": 8, "buffers": [{C}], "chunks": [], "copies": [],
                        "reduction_copies": [[{copy}], []], "completion": {completion}}}"#
                ))
                .unwrap(),
            );
            std::fs::write(&path, m.to_json()).unwrap();
            LaunchManifest::load(&path)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let copy = |owner: i64, arrived: i64, rows: &str| {
            format!(
                r#"{{"src_buffer": "C", "dst_buffer": "C", "owner": {owner}, "src_offset": 0, "dst_offset": 0,
                    "bytes": 256, "produced": [0, 4], "arrived": {arrived}, "copied": 6{rows}}}"#
            )
        };
        let rows = r#", "rows": {"count": 4, "src_pitch": 512, "dst_pitch": 512}"#;
        assert_eq!(load(&copy(1, 4, rows), "[[[4, 1]], [[5, 1]]]"), Ok(()));
        // @C holds 4 x 256 bf16 (2048 bytes): a fifth row would leave it.
        let err = load(&copy(1, 4, &rows.replace("4,", "5,")), "[]").unwrap_err();
        assert!(
            err.ends_with(
                "reduction copy 0 of rank 0 reaches outside @C (2048 bytes, or its element size is unknown): \
                 5 rows of 256 bytes, 512 bytes apart, from byte 0"
            ),
            "{err}"
        );
        let err = load(
            &copy(1, 4, "").replace(r#""dst_buffer": "C""#, r#""dst_buffer": "D""#),
            "[]",
        )
        .unwrap_err();
        assert!(
            err.ends_with("reduction copy 0 of rank 0 names @D, which is not a buffer of the plan"),
            "{err}"
        );
        // An older manifest's 1D copy has no rows.
        assert_eq!(load(&copy(1, 4, ""), "[]"), Ok(()));
        let err = load(&copy(2, 4, ""), "[]").unwrap_err();
        assert!(
            err.ends_with(
                "copy 'reduction copy 0 of rank 0' names rank 2, outside the plan's 2 ranks"
            ),
            "{err}"
        );
        let err = load(&copy(1, 8, ""), "[]").unwrap_err();
        assert!(
            err.ends_with("reduction copy 0 of rank 0 names flag 8, outside the kernel's 8 flags"),
            "{err}"
        );
        let err = load(&copy(1, 4, ""), "[[[9, 1]], []]").unwrap_err();
        assert!(
            err.ends_with("the completion of rank 0 names flag 9, outside the kernel's 8 flags"),
            "{err}"
        );
        // A copy that sets `copied` leaves the epochs to the kernel's flags;
        // one without leaves them to the runtime's streams.
        let plan = |copy: &str| -> FusedPlan {
            serde_json::from_str(&format!(
                r#"{{"plan": "p", "world_size": 2, "num_flags": 8, "buffers": [], "chunks": [], "copies": [],
                    "reduction_copies": [[{copy}], []]}}"#
            ))
            .unwrap()
        };
        assert!(!plan(&copy(1, 4, "")).copies_ordered_by_streams());
        assert!(
            plan(&copy(1, 4, "").replace(r#""copied": 6"#, r#""copied": null"#))
                .copies_ordered_by_streams()
        );
        // Copies without an arrival flag end their owner's launch through
        // the streams: rank 1 waits for ranks 0 and 2, rank 2 for nobody.
        let unflagged =
            |owner: i64| copy(owner, 4, "").replace(r#""arrived": 4"#, r#""arrived": null"#);
        let three: FusedPlan = serde_json::from_str(&format!(
            r#"{{"plan": "p", "world_size": 3, "num_flags": 8, "buffers": [], "chunks": [], "copies": [],
                "reduction_copies": [[{}, {}], [], [{}]]}}"#,
            unflagged(1),
            copy(2, 4, ""),
            unflagged(1)
        ))
        .unwrap();
        assert_eq!(three.sources_ordered_by_streams(1), vec![0, 2]);
        assert!(three.sources_ordered_by_streams(2).is_empty());
        assert!(three.sources_ordered_by_streams(0).is_empty());
        assert_eq!(load(&unflagged(1), "[]"), Ok(()));
        let overlapping = r#", "rows": {"count": 4, "src_pitch": 128, "dst_pitch": 512}"#;
        let err = load(&copy(1, 4, overlapping), "[]").unwrap_err();
        assert!(
            err.ends_with("copies 4 rows of 256 bytes with pitches 128 / 512: rows would overlap"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn copies_of_older_manifests_run_on_the_copy_stream() {
        let copy: Copy = serde_json::from_str(
            r#"{"name": "A_p1_c0", "order": 1, "src_rank": 1, "dst_rank": 0, "src_buffer": "A",
                "dst_buffer": "A", "src_offset": 0, "dst_offset": 0, "rows": 1, "row_elems": 8,
                "src_pitch": 8, "dst_pitch": 8, "flag": 2}"#,
        )
        .unwrap();
        assert!(!copy.before_kernel);
        assert_eq!(copy.flag, Some(2));
    }

    #[test]
    fn parameter_sizes() {
        let p = |ty: &str| Param {
            name: "p".into(),
            ty: ty.into(),
            role: ParamRole::User,
        };
        assert_eq!(p("*fp32").size_bytes().unwrap(), 8);
        assert_eq!(p("i32").size_bytes().unwrap(), 4);
        assert_eq!(p("i64").size_bytes().unwrap(), 8);
        assert_eq!(p("bf16").size_bytes().unwrap(), 2);
        assert_eq!(p("fp16").size_bytes().unwrap(), 2);
        assert_eq!(p("i1").size_bytes().unwrap(), 1);
        assert_eq!(p("f32").scalar_type().unwrap(), Some(ScalarType::F32));
        assert_eq!(p("*f32").scalar_type().unwrap(), None);
        assert!(p("tensor").size_bytes().is_err());
        assert_eq!(triton_type_name("f32"), "fp32");
        assert_eq!(triton_type_name("*f16"), "*fp16");
        assert_eq!(triton_type_name("*bf16"), "*bf16");
        assert_eq!(triton_type_name("i1"), "i1");
    }
}
