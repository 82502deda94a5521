//! The fused plan a launch manifest carries (`LaunchManifest::fused`): the
//! plan's buffers, how its chunks and flags are laid out, the copy-engine
//! schedule, the side stream's reduction copies, the launch's completion
//! waits and the scalar arguments the plan fixes; and what the runtime
//! derives from them.

use crate::ManifestError;
use serde::{Deserialize, Serialize};
use std::path::Path;

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
    /// A ring's gathered buffer kept in slots (`slots(2)`): each rank
    /// holds this many rows of dimension 0 (its own block and two slots)
    /// instead of `shape[0]`, the rows the kernel's addresses and the
    /// plan count in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_rows: Option<i64>,
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
        let rows = self.held_rows.or(self.shape.first().copied());
        rows.iter()
            .chain(self.shape.iter().skip(1))
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
    /// The flag of `src_rank` that must reach the epoch before the copy
    /// starts: the arrival flag of the rows it reads there, which an
    /// earlier copy brought (a ring forwards each chunk once it arrived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_flag: Option<i64>,
    /// Of a kernel that runs once per ring step ([`FusedPlan::ring_steps`]):
    /// the step whose launch makes the copy. It brings the block of the
    /// next step, so its flag is set to the epoch of the next launch (this
    /// launch's epoch + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// A kernel that runs once per ring step (a buffer kept in ring slots,
/// `slots(2)`): a call of the operation is `steps` launches, epochs in a
/// row (launch `s` of a call has `(epoch - 1) mod steps == s`), each
/// making the copies of its step; each program keeps `state_bytes` between
/// the launches, in a buffer the runtime passes as `synco_step_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingSteps {
    pub steps: u32,
    pub state_bytes: u64,
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
    /// The copy programs forward chunks that other ranks' copy programs
    /// bring (a ring on `ldst`): they wait for those programs, so ranks
    /// sharing a GPU must have their programs resident at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy_programs_forward: bool,
    /// The kernel runs once per ring step (see [`RingSteps`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_steps: Option<RingSteps>,
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
    /// Values the kernel computes from its program ids and arguments that
    /// must stay within a plan buffer on every program of a launch (a
    /// head's first element, the last row a loop reads): the runtime
    /// evaluates them over the launch's grid and arguments and refuses one
    /// that would go past it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index_bounds: Vec<crate::IndexBound>,
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
    /// A factor of an offset into the buffer that must select whole
    /// slices along `dim` (an attention's `off_h * stride_kh` in a
    /// [heads, tokens, head_dim] K): a multiple of `value`, the stride of
    /// `dim`, zero or more (a batch-1 launch's `stride_kz` is any multiple).
    Multiple,
}

impl ScalarRole {
    /// Whether `given` is what this role allows for `value`.
    pub fn allows(self, given: i64, value: i64) -> bool {
        match self {
            ScalarRole::MaxExtent => given <= value,
            ScalarRole::Multiple => given >= 0 && value > 0 && given % value == 0,
            ScalarRole::Stride | ScalarRole::Extent => given == value,
        }
    }

    /// How a message says what this role allows for a value: "at most ",
    /// "a multiple of " or nothing (exactly).
    pub fn qualifier(self) -> &'static str {
        match self {
            ScalarRole::MaxExtent => "at most ",
            ScalarRole::Multiple => "a multiple of ",
            ScalarRole::Stride | ScalarRole::Extent => "",
        }
    }
}

impl std::fmt::Display for ScalarRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ScalarRole::Stride => "stride",
            ScalarRole::Extent => "extent",
            ScalarRole::MaxExtent => "bound",
            ScalarRole::Multiple => "offset factor",
        })
    }
}

impl FusedPlan {
    /// The copies, reduction copies and completion waits name ranks and
    /// flags of this plan (the runtime indexes its GPUs and writes the flag
    /// array with them), 2D reduction copies' rows do not overlap, the
    /// buffers' sizes fit an `i64`, and every copy's bytes lie inside the
    /// plan buffers it names (the runtime copies at the offsets given).
    pub(crate) fn check_schedule(&self, path: &Path) -> Result<(), ManifestError> {
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

    /// Whether the kernel's programs wait for other ranks' programs (a
    /// fused reduction: counters per chunk; copy programs that forward
    /// chunks), not only for copies.
    pub fn waits_for_tiles(&self) -> bool {
        self.copy_programs_forward || self.chunks.iter().any(|c| c.kind == ChunkKind::Reduction)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Copy programs, and reduction chunks whose partials no copy-engine
    /// copy moves, reach into peers' heaps; a copy-engine gather or
    /// reduction does not (checked against the PTX of the 80 one-GPU bench
    /// variants: those that read `synco_heap_bases` are exactly these).
    #[test]
    fn a_buffer_kept_in_ring_slots_takes_the_rows_it_holds() {
        let mut buffer = PlanBuffer {
            name: "K".into(),
            arg: Some(1),
            shape: vec![2048, 128],
            element: "bf16".into(),
            element_bytes: Some(2),
            staging: false,
            trace: false,
            held_rows: None,
        };
        assert_eq!(buffer.bytes(), 2048 * 128 * 2);
        buffer.held_rows = Some(1536);
        assert_eq!(buffer.bytes(), 1536 * 128 * 2);
        buffer.held_rows = Some(-1);
        assert_eq!(buffer.checked_bytes(), None);
    }

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
            let copies = if copied_by_engine {
                format!("[[{copy}], []]")
            } else {
                "[[], []]".into()
            };
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
}
