//! Where a fused kernel's flags and counters live: one range per buffer
//! whose chunks something waits for, in one flag array.

use super::{
    Consume, Plan, Produce, ReductionKind, collectives::source_block_dim, fail, gathered_outputs,
    reduced_buffers, reduction_kind, region_parts, staged,
};
use serde::{Deserialize, Serialize};
use synco_chunk::PassFailed;

/// What a range of flags counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// A consumed buffer's chunks: a flag per chunk, set to the epoch when
    /// the chunk has arrived.
    Arrival,
    /// A reduced buffer's chunks (see `chunk-fuse-reductions`): on the
    /// chunk's owner, a counter of peer tiles whose partial is ready; on
    /// every other rank, a counter of the owner's tiles that consumed this
    /// rank's partial.
    Reduction,
    /// An output that kernel tiles produce and an all-gather sends to every
    /// peer (see `chunk-fuse-gathers`): per chunk, a counter of the rank's
    /// tiles that stored it (chunk `c` of rank `o`'s block, global chunk
    /// `g = o * chunks_per_rank + c`, is flag `base + g`). Nothing waits
    /// for its arrival on the peers but the end of their launch, which the
    /// runtime's streams order.
    Output,
}

/// Which of a buffer's chunks (along its flags' dimension, in row order)
/// each rank holds before any transfer: its block's, or, gathered with
/// `blocks(zigzag)`, its two half-blocks'. Found from the transfers: the
/// chunks a rank holds are those no transfer from another rank writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owners {
    /// Rank `o` holds chunks `o * n .. (o + 1) * n` (`n` chunks per rank).
    #[default]
    Contiguous,
    /// Rank `o` holds half-blocks `o` and `2W - 1 - o` of `n / 2` chunks.
    Zigzag,
    /// Neither: the transfers leave some rank without a chunk, or write
    /// one it holds.
    Irregular,
}

impl Owners {
    fn is_contiguous(&self) -> bool {
        *self == Owners::Contiguous
    }

    /// The rank holding chunk `index` of `chunks_per_rank * world_size`
    /// (none for [`Owners::Irregular`]).
    pub fn owner(self, index: i64, chunks_per_rank: i64, world_size: i64) -> Option<i64> {
        match self {
            Owners::Contiguous => Some(index / chunks_per_rank.max(1)),
            Owners::Zigzag => {
                let half = index / (chunks_per_rank / 2).max(1);
                Some(if half < world_size {
                    half
                } else {
                    2 * world_size - 1 - half
                })
            }
            Owners::Irregular => None,
        }
    }
}

/// What a chunk's extent along dimension `dim` of a buffer of `rank`
/// dimensions counts, in messages: `rows` along the first, `columns` along
/// the last, else positions along the dimension (a `[heads, tokens,
/// head_dim]` buffer's tokens).
pub fn extent_word(dim: usize, rank: usize) -> String {
    match dim {
        0 => "rows".into(),
        d if d + 1 == rank => "columns".into(),
        d => format!("positions along dimension {d}"),
    }
}

/// Where a buffer's chunk flags live in the kernel's flag array.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagRange {
    pub kind: FlagKind,
    /// Flags per chunk: 1, or 2 for an all-reduce (one-shot: arrivals, then
    /// acknowledgements; two-shot: the reduce-scatter's counters, then the
    /// gathered rows'), each a range of `W * chunks_per_rank`; `3 + W` for
    /// a reduce-scatter moved by the copy engine, `6 + W` for a two-shot
    /// all-reduce moved by it (see `chunk-fuse-reductions`); 1 for a
    /// gathered output ([`FlagKind::Output`]).
    pub counters_per_chunk: i64,
    pub buffer: String,
    /// The dimension chunks split.
    pub dim: usize,
    pub rows_per_chunk: i64,
    pub chunks_per_rank: i64,
    /// Index of the buffer's first chunk flag.
    pub base: i64,
    /// The dimension whose blocks the ranks own: `dim`, or another one for
    /// an all-gather whose chunks cut a different dimension (`split`).
    pub rank_dim: usize,
    /// Each rank's block along `rank_dim`.
    pub rank_block: i64,
    /// Which chunks each rank holds (an arrival range's; contiguous for
    /// the others and for chunks that cut another dimension than the
    /// ranks' blocks).
    #[serde(default, skip_serializing_if = "Owners::is_contiguous")]
    pub owners: Owners,
    /// Of a gathered output that the destinations' copy programs pull
    /// (`chunk-fuse-gathers`, on `ldst` or `tma`): the tiles that count a
    /// chunk done, which each copy waits for on the source rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals_per_chunk: Option<i64>,
    /// Of an arrival range whose chunks also cut another dimension than
    /// `dim` (a re-sharding all-to-all's `split(dim)`: a chunk per head of
    /// each source rank's tokens): that cut. Each chunk along `dim` is then
    /// `cut.count` flags, one per part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

/// The parts a flag range's chunks cut another dimension into: `count`
/// parts of `width` along `dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    pub dim: usize,
    pub width: i64,
    pub count: i64,
}

/// The most flags a fused kernel's flag array holds, the copy programs'
/// counters included (`chunk-lower-transfers`): the kernel indexes it with
/// `i32` offsets.
pub const MAX_FLAGS: i64 = i32::MAX as i64;

impl FlagRange {
    /// Its flags (bounded: [`flag_layout`] checked that the range ends
    /// within [`MAX_FLAGS`]).
    pub fn count(&self, world_size: i64) -> i64 {
        self.chunks_per_rank * world_size * self.counters_per_chunk * self.parts()
    }

    /// Flags per chunk along `dim`: the parts of its [`Cut`], or 1.
    pub fn parts(&self) -> i64 {
        self.cut.map_or(1, |cut| cut.count)
    }

    /// The flag of the chunk whose box starts at `offsets` (chunks of rank
    /// `o` are flags `o * chunks_per_rank ..`, in order along `dim`; with a
    /// [`Cut`], each of those is its parts' flags, in order).
    pub fn flag_at(&self, offsets: &[i64]) -> Option<i64> {
        let along = *offsets.get(self.dim)?;
        let chunk = if self.rank_dim == self.dim {
            along / self.rows_per_chunk
        } else {
            let owner = offsets.get(self.rank_dim)? / self.rank_block;
            owner * self.chunks_per_rank + along / self.rows_per_chunk
        };
        let Some(cut) = self.cut else {
            return Some(self.base + chunk);
        };
        let part = offsets.get(cut.dim)? / cut.width;
        Some(self.base + chunk * cut.count + part)
    }
}

/// The flag layout of a plan whose collectives were expanded (see
/// [`lay_out_flags`]): the one the first pass that needed it recorded on
/// the plan ([`super::records::FLAG_LAYOUT_ATTR`]), or, for the first,
/// laid out now and recorded. Passes that change what it is computed
/// from forget it (`chunk-select-chunk-size`, `chunk-expand-collectives`)
/// or lay it out again ([`relayout_flags`]).
pub fn flag_layout(plan: &Plan) -> Result<Vec<FlagRange>, PassFailed> {
    if let Some(layout) = super::records::recorded_flag_layout(plan)? {
        check_recorded_layout(plan, &layout)?;
        return Ok(layout);
    }
    relayout_flags(plan)
}

/// A layout read back from the plan (an input may carry any): every range
/// names a buffer once, along its dimensions, in positive steps, and ends
/// within [`MAX_FLAGS`]; no two ranges share a flag.
fn check_recorded_layout(plan: &Plan, layout: &[FlagRange]) -> Result<(), PassFailed> {
    let wrong = |what: String| fail(plan.op, format!("the recorded chunk.flag_layout {what}"));
    let mut spans = Vec::with_capacity(layout.len());
    for range in layout {
        let rank = plan.buffer(&range.buffer).map(|b| b.shape.len());
        let Some(rank) = rank else {
            return Err(wrong(format!(
                "names @{}, which the plan does not declare",
                range.buffer
            )));
        };
        let steps = [
            range.counters_per_chunk,
            range.rows_per_chunk,
            range.chunks_per_rank,
            range.rank_block,
        ];
        let cut_fits = range
            .cut
            .is_none_or(|c| c.width > 0 && c.count > 0 && c.dim < rank && c.dim != range.dim);
        if steps.iter().any(|n| *n <= 0) || range.dim >= rank || range.rank_dim >= rank || !cut_fits
        {
            return Err(wrong(format!(
                "gives @{} a range that is not a layout of its {rank}-D chunks: {range:?}",
                range.buffer
            )));
        }
        if layout.iter().filter(|r| r.buffer == range.buffer).count() > 1 {
            return Err(wrong(format!(
                "lays out the flags of @{} twice",
                range.buffer
            )));
        }
        spans.push((range.base, range_end(plan, range)?, &range.buffer));
    }
    spans.sort();
    for pair in spans.windows(2) {
        let [(first, end, a), (second, _, b)] = pair else {
            continue;
        };
        if second < end {
            return Err(wrong(format!(
                "gives @{a} flags {first}..{end} and @{b} flags from {second}: two chunks would share a flag"
            )));
        }
    }
    Ok(())
}

/// Lays the plan's flags out again and records the layout (a pass changed
/// the counters a buffer needs: `chunk-fuse-reductions` staging it).
pub fn relayout_flags(plan: &Plan) -> Result<Vec<FlagRange>, PassFailed> {
    let layout = lay_out_flags(plan)?;
    super::records::record_flag_layout(plan, &layout)?;
    Ok(layout)
}

/// One flag per chunk of every consumed buffer, buffers in the order of
/// their `chunk.consume` ops, chunks in row order; then the counters of
/// every reduced buffer that kernel tiles produce (in `chunk.produce`
/// order); then those of every produced buffer that an all-gather sends
/// ([`FlagKind::Output`]).
fn lay_out_flags(plan: &Plan) -> Result<Vec<FlagRange>, PassFailed> {
    let mut layout: Vec<FlagRange> = Vec::new();
    for consume in plan.consumes() {
        if !laid_out(&layout, consume.buffer()) {
            layout.push(arrival_range(plan, consume)?);
        }
    }
    let reduced = reduced_buffers(plan);
    for produce in plan.produces() {
        let name = produce.buffer().unwrap_or_default();
        if reduced.contains(&name) && !laid_out(&layout, Some(name)) {
            layout.push(reduction_range(plan, produce)?);
        }
    }
    let outputs = gathered_outputs(plan);
    for produce in plan.produces() {
        let name = produce.buffer().unwrap_or_default();
        if outputs.contains(&name) && !laid_out(&layout, Some(name)) {
            layout.push(output_range(plan, produce)?);
        }
    }
    let mut base = 0;
    for range in &mut layout {
        range.base = base;
        base = range_end(plan, range)?;
    }
    Ok(layout)
}

/// Where `range` ends (`base + count`), or an error at the op whose tiles
/// use its flags if that is beyond [`MAX_FLAGS`] (or 64 bits).
fn range_end(plan: &Plan, range: &FlagRange) -> Result<i64, PassFailed> {
    let end = range
        .chunks_per_rank
        .checked_mul(plan.world_size)
        .and_then(|chunks| chunks.checked_mul(range.counters_per_chunk))
        .and_then(|flags| flags.checked_mul(range.parts()))
        .and_then(|count| range.base.checked_add(count))
        .filter(|end| range.base >= 0 && *end <= MAX_FLAGS);
    end.ok_or_else(|| {
        let at = match range.kind {
            FlagKind::Arrival => plan.consumer_of(&range.buffer).map(|c| c.0),
            FlagKind::Reduction | FlagKind::Output => plan.producer_of(&range.buffer).map(|p| p.0),
        };
        fail(
            at.unwrap_or(plan.op),
            format!(
                "the flags of @{}, {} chunks per rank x {} ranks x {} flags each from flag {}, end beyond the {MAX_FLAGS} flags that the fused kernel's 32-bit flag indices reach",
                range.buffer,
                range.chunks_per_rank,
                plan.world_size,
                range.counters_per_chunk,
                range.base
            ),
        )
    })
}

fn laid_out(layout: &[FlagRange], buffer: Option<String>) -> bool {
    layout.iter().any(|r| Some(&r.buffer) == buffer.as_ref())
}

/// The arrival flags of the buffer `consume` reads (base 0).
fn arrival_range(plan: &Plan, consume: Consume) -> Result<FlagRange, PassFailed> {
    let name = consume.buffer().unwrap_or_default();
    let dim = consume.dim();
    let transfers = plan.transfers_into(&name);
    let Some(first) = transfers.first() else {
        return Err(fail(
            consume,
            format!(
                "@{name} is consumed but no chunk.transfer writes it; run chunk-expand-collectives first"
            ),
        ));
    };
    let Some(buffer) = plan.buffer(&name) else {
        return Err(fail(consume, format!("no buffer @{name}")));
    };
    let sizes = first.sizes().unwrap_or_default();
    let rows_per_chunk = sizes.get(dim).copied().unwrap_or(0);
    // Ranks own blocks of `dim`, unless the consumer reads every rank's
    // block (`source`): then the blocks lie along the dimension where each
    // chunk lands in its source rank's block (another one for an
    // all-gather's split).
    let rank_dim = if consume.reads_per_source() {
        source_block_dim(plan, &transfers, &buffer.shape).ok_or_else(|| {
            fail(
                consume,
                format!("the chunks of @{name} do not land in their source rank's block of any one dimension; it cannot be read per source"),
            )
        })?
    } else {
        dim
    };
    let block = if rank_dim == dim {
        buffer.shape[dim] / plan.world_size
    } else {
        buffer.shape[dim]
    };
    let rank_block = buffer.shape[rank_dim] / plan.world_size;
    // A tile waits for the one chunk holding its block of `dim`: the chunk
    // must hold everything else the tile reads, all of the other dimensions
    // (and all of the rank's block along `rank_dim`).
    let partial = (0..buffer.shape.len()).find(|d| {
        let full = if *d == rank_dim {
            rank_block
        } else {
            buffer.shape[*d]
        };
        *d != dim && sizes.get(*d) != Some(&full)
    });
    // Chunks that cut a rank's block along another dimension than `dim`
    // (an all-gather's split) are read per source; chunks that land in
    // their source's block along `dim` and cut the last dimension too (a
    // re-shard's split(dim)) are waited for per part.
    let per_source = !consume.reads_per_source()
        && source_block_dim(plan, &transfers, &buffer.shape).is_some_and(|b| b != dim);
    let cut = match partial {
        Some(d) if !consume.reads_per_source() && !per_source && d + 1 == buffer.shape.len() => {
            column_cut(&transfers, &buffer.shape, plan.world_size, (dim, d))
        }
        _ => None,
    };
    if let (Some(d), None) = (partial, cut) {
        return Err(fail(
            consume,
            if per_source {
                format!(
                    "@{name}'s chunks cut dimension {dim} of every rank's block (split): tiles read every rank's block, so they must wait per source: add source(\"<the kernel's loop over ranks>\")"
                )
            } else {
                format!(
                    "chunks of @{name} cut dimension {d} as well as {dim}: a tile would read several chunks but wait for one; consume it along the dimension the chunks cut"
                )
            },
        ));
    }
    if rows_per_chunk <= 0 || block % rows_per_chunk != 0 {
        return Err(fail(
            *first,
            format!("chunks of @{name} do not split its per-rank blocks evenly"),
        ));
    }
    let chunks_per_rank = block / rows_per_chunk;
    let owners = if rank_dim == dim {
        owners_of(plan, &transfers, dim, rows_per_chunk, chunks_per_rank)
    } else {
        Owners::Contiguous
    };
    Ok(FlagRange {
        kind: FlagKind::Arrival,
        counters_per_chunk: 1,
        buffer: name,
        dim,
        rows_per_chunk,
        chunks_per_rank,
        base: 0,
        rank_dim,
        rank_block,
        owners,
        arrivals_per_chunk: None,
        cut,
    })
}

/// The cut of dimension `d` (not `dim`, along which ranks own blocks) that
/// the chunks of a consumed buffer make, if every transfer into it covers
/// all of the other dimensions and `d` in equal parts that start at a
/// multiple of their width (a re-shard's `split(dim)`: a chunk per head);
/// the tiles then wait for the parts of `d` they read.
fn column_cut(
    transfers: &[super::Transfer],
    shape: &[i64],
    world_size: i64,
    (dim, d): (usize, usize),
) -> Option<Cut> {
    let width = transfers.first()?.sizes()?.get(d).copied()?;
    let extent = *shape.get(d)?;
    if width <= 0 || extent % width != 0 {
        return None;
    }
    let whole = |t: &super::Transfer| {
        t.sizes().is_some_and(|sizes| {
            (0..shape.len()).all(|e| e == dim || e == d || sizes.get(e) == shape.get(e))
                && sizes.get(d) == Some(&width)
        })
    };
    let aligned = |t: &super::Transfer| {
        (0..world_size).all(|on| {
            t.dst_offsets_on(on)
                .and_then(|at| at.get(d).copied())
                .is_some_and(|x| x % width == 0)
        })
    };
    transfers
        .iter()
        .all(|t| whole(t) && aligned(t))
        .then_some(Cut {
            dim: d,
            width,
            count: extent / width,
        })
}

/// Which chunks each rank holds, from what `transfers` (all into one
/// buffer, chunked along `dim`) write on every rank.
fn owners_of(
    plan: &Plan,
    transfers: &[super::Transfer],
    dim: usize,
    rows_per_chunk: i64,
    chunks_per_rank: i64,
) -> Owners {
    let w = plan.world_size;
    let all = chunks_per_rank.saturating_mul(w);
    let Ok(count) = usize::try_from(all.saturating_mul(w)) else {
        return Owners::Irregular;
    };
    // written[d * all + c]: a transfer from another rank writes chunk c on d.
    let mut written = vec![false; count];
    for t in transfers.iter().filter(|t| !t.is_local()) {
        for on in 0..w {
            let (Some(d), Some(at)) = (t.dst_rank_on(on), t.dst_offsets_on(on)) else {
                return Owners::Irregular;
            };
            let c = at.get(dim).copied().unwrap_or(-1) / rows_per_chunk.max(1);
            if !(0..w).contains(&d) || !(0..all).contains(&c) {
                return Owners::Irregular;
            }
            written[(d * all + c) as usize] = true;
        }
    }
    let matches = |owners: Owners| {
        (0..w).all(|d| {
            (0..all).all(|c| {
                let held = owners.owner(c, chunks_per_rank, w) == Some(d);
                written[(d * all + c) as usize] != held
            })
        })
    };
    [Owners::Contiguous, Owners::Zigzag]
        .into_iter()
        .find(|o| (*o != Owners::Zigzag || chunks_per_rank % 2 == 0) && matches(*o))
        .unwrap_or(Owners::Irregular)
}

/// The counters of the reduced buffer `produce` writes (base 0).
fn reduction_range(plan: &Plan, produce: Produce) -> Result<FlagRange, PassFailed> {
    let name = produce.buffer().unwrap_or_default();
    let dim = produce.dim();
    let Some(buffer) = plan.buffer(&name) else {
        return Err(fail(produce, format!("no buffer @{name}")));
    };
    let rows_per_chunk = plan
        .reductions_of(&name)
        .first()
        .and_then(|t| t.src())
        .and_then(region_parts)
        .and_then(|(_, _, sizes)| sizes.get(dim).copied())
        .unwrap_or(0);
    let block = buffer.shape.get(dim).copied().unwrap_or(0) / plan.world_size;
    if rows_per_chunk <= 0 || block % rows_per_chunk != 0 {
        return Err(fail(
            produce,
            format!("chunks of @{name} do not split its per-rank blocks evenly"),
        ));
    }
    let kind = reduction_kind(plan, &name);
    let counters_per_chunk = match kind {
        // Produced, consumed and copied counters per chunk, and an arrival
        // flag per chunk and source rank; a two-shot all-reduce's reduced,
        // sent and gathered too.
        _ if staged(plan, &name) => {
            let gather = if kind == Some(ReductionKind::AllReduceTwoShot) {
                3
            } else {
                0
            };
            3 + plan.world_size + gather
        }
        // A one-shot all-reduce's partials counter and the peers'
        // acknowledgements.
        Some(ReductionKind::AllReduce) => 2,
        // A two-shot all-reduce on SMs: those, the peers' sums (its
        // `gathered` counter) and the owner's tiles done with their sums
        // (`finished`, the last of which waits for the peers' sums).
        Some(ReductionKind::AllReduceTwoShot) => 3,
        _ => 1,
    };
    Ok(FlagRange {
        kind: FlagKind::Reduction,
        counters_per_chunk,
        buffer: name,
        dim,
        rows_per_chunk,
        chunks_per_rank: block / rows_per_chunk,
        base: 0,
        rank_dim: dim,
        rank_block: block,
        owners: Owners::Contiguous,
        arrivals_per_chunk: None,
        cut: None,
    })
}

/// The counters of the gathered output `produce` writes (base 0).
fn output_range(plan: &Plan, produce: Produce) -> Result<FlagRange, PassFailed> {
    let name = produce.buffer().unwrap_or_default();
    let dim = produce.dim();
    let Some(buffer) = plan.buffer(&name) else {
        return Err(fail(produce, format!("no buffer @{name}")));
    };
    // An all-gather lands each rank's block in place; an all-to-all
    // (re-shard) sends block d to rank d, from the producing rank.
    let gathered = plan.transfers_into(&name);
    let (transfers, rank_dim) = if gathered.is_empty() {
        let sent = super::transfers_from(plan, &name);
        let dim = super::destination_block_dim(plan, &sent, &buffer.shape);
        (sent, dim)
    } else {
        let dim = source_block_dim(plan, &gathered, &buffer.shape);
        (gathered, dim)
    };
    let Some(rank_dim) = rank_dim else {
        return Err(fail(
            produce,
            format!(
                "the chunks of @{name} do not land in (or leave from) one rank's block of any one dimension"
            ),
        ));
    };
    let rank_block = buffer.shape[rank_dim] / plan.world_size;
    let extent = if dim == rank_dim {
        rank_block
    } else {
        buffer.shape.get(dim).copied().unwrap_or(0)
    };
    let rows_per_chunk = transfers
        .first()
        .and_then(|t| t.sizes())
        .and_then(|sizes| sizes.get(dim).copied())
        .unwrap_or(0);
    if rows_per_chunk <= 0 || extent % rows_per_chunk != 0 {
        return Err(fail(
            produce,
            format!(
                "the chunks of @{name} do not cut dimension {dim}, along which its tiles are produced, into equal parts of each rank's block"
            ),
        ));
    }
    Ok(FlagRange {
        kind: FlagKind::Output,
        counters_per_chunk: 1,
        buffer: name,
        dim,
        rows_per_chunk,
        chunks_per_rank: extent / rows_per_chunk,
        base: 0,
        rank_dim,
        rank_block,
        owners: Owners::Contiguous,
        arrivals_per_chunk: None,
        cut: None,
    })
}
