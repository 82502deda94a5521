//! Which collective moves or reduces each buffer of an expanded plan, and
//! how: gathered outputs, reductions (their kind, staged or not) and the
//! staging buffers of staged reductions.

use super::{Plan, Transfer, fail, internal};
use synco_chunk::{PassFailed, attrs};
use synco_ir::{self as ir, Op};

/// Buffers that kernel tiles produce and non-reducing transfers send to
/// other ranks (an all-gather of a kernel's output).
pub fn gathered_outputs(plan: &Plan) -> Vec<String> {
    let produced: Vec<String> = plan
        .produces()
        .into_iter()
        .filter_map(|p| p.buffer())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for t in plan.transfers() {
        if let Some(name) = plain_send_source(t)
            && produced.contains(&name)
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// The buffer that transfer `t` reads when it sends data unchanged to
/// another rank (a gather's chunk; not a reduction's, nor a copy within a
/// rank), or `None`.
pub fn plain_send_source(t: Transfer) -> Option<String> {
    if t.is_local() || t.reduces() {
        return None;
    }
    t.src_buffer()
}

/// The dimension `d` along which every transfer of `transfers` writes into
/// the block (`shape[d] / W` wide) of the rank it reads from: where a
/// gathered buffer keeps each source rank's block.
pub(super) fn source_block_dim(
    plan: &Plan,
    transfers: &[Transfer],
    shape: &[i64],
) -> Option<usize> {
    block_dim(plan, transfers, shape, |t, r| {
        Some((t.src_rank_on(r)?, t.dst_offsets_on(r)?))
    })
}

/// The dimension `d` along which every transfer of `transfers` reads the
/// block (`shape[d] / W` wide) of the rank it writes to: where a buffer
/// that an all-to-all re-shards keeps each destination's block.
pub fn destination_block_dim(plan: &Plan, transfers: &[Transfer], shape: &[i64]) -> Option<usize> {
    block_dim(plan, transfers, shape, |t, r| {
        Some((t.dst_rank_on(r)?, t.src_offsets_on(r)?))
    })
}

/// The dimension `d` along which, for every transfer as executed on every
/// rank, the offsets `rank_and_offsets` gives lie in that rank's block.
fn block_dim(
    plan: &Plan,
    transfers: &[Transfer],
    shape: &[i64],
    rank_and_offsets: impl Fn(&Transfer, i64) -> Option<(i64, Vec<i64>)>,
) -> Option<usize> {
    let placed: Vec<(i64, Vec<i64>)> = transfers
        .iter()
        .flat_map(|t| (0..plan.world_size).map(move |r| (t, r)))
        .map(|(t, r)| rank_and_offsets(t, r))
        .collect::<Option<_>>()?;
    (0..shape.len()).find(|d| {
        let block = shape[*d] / plan.world_size;
        block > 0
            && placed
                .iter()
                .all(|(rank, offsets)| offsets.get(*d).is_some_and(|o| o / block == *rank))
    })
}

/// The transfers that read `name` (an all-to-all's source), the rank's own
/// block's local copy included.
pub fn transfers_from(plan: &Plan, name: &str) -> Vec<Transfer> {
    plan.transfers()
        .into_iter()
        .filter(|t| {
            t.src_buffer().as_deref() == Some(name) && t.dst_buffer().as_deref() != Some(name)
        })
        .collect()
}

/// The staging buffer of reduced `buffer`: its name ([`staging_name`]) and
/// shape (`buffer`'s, with `rows` along `dim`), for `pass` to declare; an
/// error at `at` if the plan already has a buffer of that name.
pub fn staging_decl(
    plan: &Plan,
    buffer: &str,
    dim: usize,
    rows: i64,
    at: Op,
    pass: &str,
) -> Result<(String, Vec<i64>, String), PassFailed> {
    let name = staging_name(buffer);
    if plan.buffer(&name).is_some() {
        return Err(fail(
            at,
            format!(
                "{pass}: the staging buffer @{name} would clash with the plan's buffer of that name"
            ),
        ));
    }
    let Some(partial) = plan.buffer(buffer) else {
        return Err(internal(at, "a reduced buffer that is not in the plan"));
    };
    let mut shape = partial.shape.clone();
    let Some(along) = shape.get_mut(dim) else {
        return Err(internal(at, "a reduced buffer without that dimension"));
    };
    *along = rows;
    // What the buffer type's verifier requires, refused here rather than
    // when the type is built.
    let bytes = partial.element_bytes().unwrap_or(1);
    if shape
        .iter()
        .try_fold(bytes, |n, d| n.checked_mul(*d))
        .is_none()
    {
        let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
        return Err(fail(
            at,
            format!(
                "{pass}: the staging buffer @{name} would hold {} elements of {}: more bytes than a 64-bit size counts",
                dims.join("x"),
                partial.element
            ),
        ));
    }
    Ok((name, shape, partial.element.clone()))
}

/// The buffer where the copy engine lands the peers' partials of a
/// reduce-scatter of `buffer` (declared by `chunk-expand-collectives`).
pub fn staging_name(buffer: &str) -> String {
    format!("{buffer}_staging")
}

/// Where rank `rank`'s staging buffer holds source `source`'s partial, in
/// blocks: the `W - 1` peers after `rank`, in rank-rotated order.
pub fn staging_slot(source: i64, rank: i64, world_size: i64) -> i64 {
    (source - rank - 1).rem_euclid(world_size)
}

/// Plan attribute (array of buffer names): reductions of these buffers are
/// staged (see [`staged`]) although their transfers say `ldst`: the SM copy
/// programs of `chunk-fuse-reductions{mode=stage}` move their partials.
pub const STAGED_ATTR: &str = "chunk.staged";

/// Whether `buffer`'s partials travel through their owners' staging buffer:
/// tiles store and count them locally, then the copy engine or SM copy
/// programs move each finished chunk (the flag layout is then the copy
/// engine's, see `chunk-fuse-reductions`).
pub fn staged(plan: &Plan, buffer: &str) -> bool {
    reduced_by_copy_engine(plan, buffer) || staged_on_sms(plan).iter().any(|n| n == buffer)
}

/// Whether the plan's reductions are staged and moved by the kernel's SM
/// copy programs (`chunk-fuse-reductions{mode=stage}` marked it).
pub fn stages_on_sms(plan: &Plan) -> bool {
    !staged_on_sms(plan).is_empty()
}

/// The buffers [`STAGED_ATTR`] names.
fn staged_on_sms(plan: &Plan) -> Vec<String> {
    ir::attr(plan.op, STAGED_ATTR)
        .and_then(ir::array_value)
        .unwrap_or_default()
        .into_iter()
        .filter_map(ir::str_value)
        .collect()
}

/// Whether the copy engine moves `buffer`'s partials between ranks (the
/// reducing transfers that cross ranks have backend `copy_engine`).
pub fn reduced_by_copy_engine(plan: &Plan, buffer: &str) -> bool {
    plan.reductions_of(buffer)
        .into_iter()
        .any(|t| !t.is_local() && t.backend() == Some(attrs::Backend::CopyEngine))
}

/// The collective that reduces a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReductionKind {
    ReduceScatter,
    /// A one-shot all-reduce (every rank reduces every rank's partial).
    AllReduce,
    /// A two-shot all-reduce (reduce-scatter, then all-gather).
    AllReduceTwoShot,
}

/// The transfers of the plan's two-shot all-reduces' gathering phase.
pub fn two_shot_gathers(plan: &Plan) -> impl Iterator<Item = Transfer> {
    plan.transfers().into_iter().filter(|t| {
        t.collective()
            == Some((
                attrs::CollectiveKind::AllReduce,
                Some(attrs::CollectivePhase::AllGather),
            ))
    })
}

/// What a reducing transfer reduces for: `None` if it records no
/// collective that reduces.
pub fn reduction_kind_of(t: Transfer) -> Option<ReductionKind> {
    use attrs::{CollectiveKind, CollectivePhase};
    match t.collective()? {
        (CollectiveKind::ReduceScatter, None) => Some(ReductionKind::ReduceScatter),
        (CollectiveKind::AllReduce, None) => Some(ReductionKind::AllReduce),
        (CollectiveKind::AllReduce, Some(CollectivePhase::ReduceScatter)) => {
            Some(ReductionKind::AllReduceTwoShot)
        }
        _ => None,
    }
}

/// What reduces `buffer`, from the collective its first reducing transfer
/// records (the plan verifier checks that a group's transfers agree).
pub fn reduction_kind(plan: &Plan, buffer: &str) -> Option<ReductionKind> {
    reduction_kind_of(*plan.reductions_of(buffer).first()?)
}

/// Buffers that reducing transfers read: the partials of a reduce-scatter
/// or all-reduce.
pub fn reduced_buffers(plan: &Plan) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in plan.transfers().into_iter().filter(|t| t.reduces()) {
        if let Some(name) = t.src_buffer()
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// The order in which the peers' blocks of a gathered buffer arrive at a
/// rank (what consumers walk them in, after the rank's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockOrder {
    /// Rank `r + 1`'s block first, then `r + 2`'s, ... (direct, and the
    /// `algorithm(ring)` template, whose ranks receive from `r + 1`).
    Forward,
    /// Rank `r - 1`'s block first, then `r - 2`'s, ... (a ring written out
    /// the other way, `r -> r + 1`, forwarding each block one hop per step).
    Backward,
}

/// The order of the peers' blocks (of `block_rows` rows along `dim`) of
/// buffer `name` in the transfers into it: the first peer block rank 0
/// receives (lowest `order`) is rank `W - 1`'s for a ring `r -> r + 1`,
/// rank 1's for direct transfers and the template's ring. (With 2 ranks
/// both orders are the same.)
pub fn block_order(plan: &Plan, name: &str, dim: usize, block_rows: i64) -> BlockOrder {
    let w = plan.world_size;
    if w <= 2 || block_rows <= 0 {
        return BlockOrder::Forward;
    }
    let first = plan
        .transfers_into(name)
        .into_iter()
        .filter(|t| !t.is_local() && t.dst_rank_on(0) == Some(0))
        .filter_map(|t| Some((t.order(), t.dst_offsets_on(0)?.get(dim)? / block_rows)))
        .min();
    match first {
        Some((_, owner)) if owner == w - 1 => BlockOrder::Backward,
        _ => BlockOrder::Forward,
    }
}
