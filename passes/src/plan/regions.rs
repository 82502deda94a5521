//! Transfers' regions and rank maps, read through the dialect's C API and
//! evaluated with its own arithmetic (the plan verifier's).

use melior::ir::AffineMap;
use synco_chunk::attrs;
use synco_ir::{self as ir, Op};

/// The raw `attr` as a melior attribute, for the dialect's readers.
fn as_attribute<'c>(attr: ir::Attr) -> melior::ir::Attribute<'c> {
    // SAFETY: attributes handed to the passes belong to the live module's
    // context, which outlives the pass that reads them.
    unsafe { melior::ir::Attribute::from_raw(attr) }
}

/// `attr` as a `#chunk.region`, if it is one.
fn region_of<'c>(attr: ir::Attr) -> Option<attrs::Region<'c>> {
    attrs::Region::from_attribute(as_attribute(attr))
}

/// `(buffer, offsets map, sizes)` of a `#chunk.region` attribute.
pub fn region_parts<'c>(attr: ir::Attr) -> Option<(String, AffineMap<'c>, Vec<i64>)> {
    let region = region_of(attr)?;
    Some((region.buffer(), region.offsets(), region.sizes()))
}

/// A `#chunk.region`'s offsets on `rank`, by the dialect's own evaluator
/// (the one the plan verifier checks bounds with).
pub fn region_offsets(attr: ir::Attr, rank: i64) -> Option<Vec<i64>> {
    region_of(attr)?.offsets_on(rank)
}

/// A transfer's rank map (`key`: `src_rank` or `dst_rank`; read through
/// [`super::Transfer`]).
pub(super) fn rank_map<'c>(t: Op, key: &str) -> Option<AffineMap<'c>> {
    attrs::affine_map_of(as_attribute(ir::attr(t, key)?))
}

/// A transfer's rank map (`key`) evaluated on rank `r`, by the dialect's
/// own evaluator.
pub(super) fn rank_at(t: Op, key: &str, r: i64) -> Option<i64> {
    attrs::evaluate_on_rank(rank_map(t, key)?, r)?
        .first()
        .copied()
}
