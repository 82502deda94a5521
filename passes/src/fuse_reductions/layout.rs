//! The refusals of `chunk-fuse-reductions` that come before any code is
//! built: which reducing transfers fuse at all ([`check_fusable`]: the
//! collective and backend), and whether their regions are the chunks the
//! fused code reduces ([`check_layout`]).

use crate::plan::{
    Plan, ReductionKind, Transfer, fail, internal, reduction_kind, reduction_kind_of, region_parts,
    two_shot_gathers,
};
use synco_chunk::{PassFailed, attrs};

/// Reduce-scatter and all-reduce on the SM backends (`ldst`, `tma`), or a reduce-scatter (or two-shot all-reduce) moved by the copy
/// engine.
pub(super) fn check_fusable(t: Transfer) -> Result<(), PassFailed> {
    let Some(kind) = reduction_kind_of(t) else {
        return Err(fail(
            t,
            "chunk-fuse-reductions: this reducing transfer belongs to no reduce_scatter or all_reduce (the `collective(...)` that chunk-expand-collectives gives their transfers): write the collective and let chunk-expand-collectives expand it",
        ));
    };
    let backend = t.backend();
    let local = t.is_local();
    // A reduce-scatter, alone or as a two-shot all-reduce's first phase.
    let scatters = matches!(
        kind,
        ReductionKind::ReduceScatter | ReductionKind::AllReduceTwoShot
    );
    if backend == Some(attrs::Backend::CopyEngine) && !local && scatters {
        return Ok(());
    }
    if !t.copied_by_sms() && !local {
        return Err(fail(
            t,
            format!(
                "chunk-fuse-reductions: a reduction fuses into its GEMM with backend(ldst) (SM loads and stores move the partials), or a reduce-scatter or two-shot all-reduce with backend(copy_engine); backend '{}' is not implemented for this one",
                backend.map_or("?", |b| b.keyword())
            ),
        ));
    }
    Ok(())
}

/// Refuses reducing transfers that the fused code would not reduce as
/// written: it sums, in chunks of the first reducing transfer's rows,
/// a reduce-scatter's and a two-shot all-reduce's rows of rank `o`'s block
/// of `@P` on rank `o` (into `@C`'s rows from 0, or into the same rows of a
/// `@C` as large as `@P`), and a one-shot all-reduce's every row into the
/// same rows of `@C` on every rank; a two-shot all-reduce then gathers each
/// owner's rows into the same rows of every peer's `@C`. So on every rank
/// each transfer must move one such chunk of whole rows. The plan verifier
/// already checked that each row of `@C` gets exactly one partial from
/// every rank; a plan written out by hand can still put them elsewhere
/// (a rotated owner, say), which this refuses.
pub(super) fn check_layout(plan: &Plan, reducing: &[Transfer]) -> Result<(), PassFailed> {
    let gathers = two_shot_gathers(plan);
    // (partials, output, sizes) of each partial buffer's first reducing
    // transfer: its sizes are the chunk (as in `flag_layout`).
    let mut firsts: Vec<(String, String, Vec<i64>)> = Vec::new();
    for r in reducing {
        let (Some((p, _, sizes)), Some(c)) = (r.src().and_then(region_parts), r.dst_buffer())
        else {
            continue;
        };
        if !firsts.iter().any(|(q, _, _)| *q == p) {
            firsts.push((p, c, sizes));
        }
    }
    for t in reducing.iter().copied().chain(gathers) {
        let gathered = !t.reduces();
        let (Some((src_name, _, sizes)), Some(dst_name)) =
            (t.src().and_then(region_parts), t.dst_buffer())
        else {
            return Err(internal(t, "cannot read the transfer's regions"));
        };
        // A two-shot all-reduce's gathering transfers move @C itself; its
        // partials are the reducing transfers' source.
        let partials = if gathered {
            firsts
                .iter()
                .find(|(_, c, _)| *c == dst_name)
                .map(|(p, _, _)| p.clone())
                .unwrap_or_default()
        } else {
            src_name.clone()
        };
        let Some(produce) = plan.producer_of(&partials) else {
            return Err(fail(
                t,
                format!(
                    "chunk-fuse-reductions: no chunk.produce says which tiles write @{partials}, the partials this transfer reduces"
                ),
            ));
        };
        let dim = produce.dim();
        let (Some(p_buf), Some(c_buf)) = (plan.buffer(&partials), plan.buffer(&dst_name)) else {
            return Err(internal(t, "the transfer's buffers are not in the plan"));
        };
        let block = p_buf.shape.get(dim).copied().unwrap_or(0) / plan.world_size;
        let chunk = firsts
            .iter()
            .find(|(p, _, _)| *p == partials)
            .and_then(|(_, _, sizes)| sizes.get(dim).copied())
            .unwrap_or(0);
        let kind = reduction_kind(plan, &partials);
        let one_shot = kind == Some(ReductionKind::AllReduce);
        let into_block = c_buf.shape.get(dim) == Some(&block);
        let whole_rows = (0..sizes.len()).all(|k| k == dim || sizes.get(k) == c_buf.shape.get(k));
        let rows = sizes.get(dim).copied().unwrap_or(0);
        for r in 0..plan.world_size {
            let (Some(from), Some(to), Some(src_at), Some(dst_at)) = (
                t.src_rank_on(r),
                t.dst_rank_on(r),
                t.src_offsets_on(r),
                t.dst_offsets_on(r),
            ) else {
                return Err(internal(t, "cannot evaluate the transfer on every rank"));
            };
            // Whose block of rows this is: the receiver's sum, or the
            // sender's gathered sums.
            let owner = if gathered { from } else { to };
            let start = src_at.get(dim).copied().unwrap_or(0);
            let in_owners_block =
                one_shot || (start >= owner * block && start < (owner + 1) * block);
            let mut expected = src_at.clone();
            if let Some(row) = expected.get_mut(dim)
                && into_block
                && !gathered
            {
                *row -= owner * block;
            }
            if rows == chunk
                && chunk > 0
                && start % chunk == 0
                && whole_rows
                && in_owners_block
                && dst_at == expected
            {
                continue;
            }
            let what = if gathered {
                "gathers each owner's sums into the same rows of every peer's"
            } else if one_shot {
                "sums every row into the same rows of every rank's"
            } else if into_block {
                "sums rank o's own block of the partials into the rows from 0 of rank o's"
            } else {
                "sums rank o's own block of the partials into the same rows of rank o's"
            };
            return Err(fail(
                t,
                format!(
                    "chunk-fuse-reductions: on rank {r}, this transfer moves {rows} rows of @{src_name} at {src_at:?} on rank {from} into @{dst_name} at {dst_at:?} on rank {to}, but the fused code {what} @{dst_name}, {chunk} whole rows at a time: write the collective and let chunk-expand-collectives expand it"
                ),
            ));
        }
    }
    Ok(())
}
