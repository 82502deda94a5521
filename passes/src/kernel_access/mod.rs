//! Whether a plan describes how its kernel accesses each bound buffer: the
//! check `chunk-bind-kernel` makes before any pass fuses anything, on the
//! kernel's own address arithmetic.
//!
//! For every `chunk.consume` (`chunk.produce`) of a buffer bound to
//! argument `i`, the kernel must load (store) argument `i`, and every such
//! access must compute its tile along the tile map's `dim` from the tile
//! index (the one `index("...")` names, or the one found), as `index *
//! tile + [0, tile)`: a tile whose rows a wait does not cover would read
//! rows before they arrive, or leave rows unwritten. A buffer that
//! transfers from other ranks write and the kernel accesses must have a
//! `chunk.consume` or a `chunk.produce` (its tiles would read it with no
//! wait, or race the copies), and a buffer has one consume at most.
//!
//! What the address arithmetic shows, per access ([`TileAccess`]): the
//! constant the tile index is multiplied by, the length of the
//! `tt.make_range` added to it, and the buffer dimension it walks, where the
//! strides tell ([`axes`]; a `tt.descriptor_load`'s offsets are its
//! dimensions in order). What the arithmetic does not show (a stride the
//! kernel computes) is not refused.
//!
//! Strides and extents: [`layout`] ([`fixed_args`]).

mod axes;
mod layout;
mod walked_count;

pub use layout::fixed_args;

use crate::plan::{Plan, TileMap, fail};
use crate::tiles::{Access, constant_products, find_tile_index, loads_of, stores_of};
use axes::buffer_dim;
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value};

/// What one access's address arithmetic says about a tile index `t`.
#[derive(Debug, Default, PartialEq, Eq)]
struct TileAccess {
    /// Whether `t` takes part in the address at all.
    uses_index: bool,
    /// The constants `t` is multiplied by in the address.
    scales: Vec<i64>,
    /// The lengths of the `tt.make_range`s added to `t * scale`.
    extents: Vec<i64>,
    /// The buffer dimension `t` walks, where the address shows it.
    dim: Option<usize>,
}

/// A tile map's tile index in the kernel, as the check found it.
pub struct TileIndex {
    pub tiles: TileMap,
    pub index: Value,
}

/// Refuses a plan that does not describe how `kernel` accesses its bound
/// buffers (see the module docs); else gives each tile map's tile index.
pub fn check_plan_fits_kernel(
    plan: &Plan,
    kernel: Op,
    pass: &str,
) -> Result<Vec<TileIndex>, PassFailed> {
    for buffer in plan.buffers.iter().filter(|b| b.arg.is_some()) {
        let consumers = plan.consumers_of(&buffer.name);
        if let [_, second, ..] = consumers[..] {
            return Err(fail(
                second,
                format!(
                    "{pass}: a second chunk.consume of @{}: its tiles wait as the first one says; give each buffer one",
                    buffer.name
                ),
            ));
        }
        let arg = buffer.arg.unwrap_or_default();
        let remote = plan
            .transfers_into(&buffer.name)
            .into_iter()
            .any(|t| !t.is_local());
        let produced = plan.producer_of(&buffer.name).is_some();
        if consumers.is_empty() && !produced && remote {
            let name = &buffer.name;
            if !loads_of(kernel, arg).is_empty() {
                return Err(fail(
                    buffer.op,
                    format!(
                        "{pass}: transfers write @{name} and the kernel loads it (argument {arg}), but no chunk.consume says which tiles wait for which rows: without it, tiles would read rows before they arrive; add `chunk.consume @{name} dim(d) tile(n)`"
                    ),
                ));
            }
            if !stores_of(kernel, arg).is_empty() {
                return Err(fail(
                    buffer.op,
                    format!(
                        "{pass}: transfers write @{name} and the kernel stores to it (argument {arg}) while they do, and no chunk.produce says which tiles write which rows: the copies and the stores would race; bind @{name} to the argument the kernel reads it from"
                    ),
                ));
            }
        }
    }
    let mut indices = Vec::new();
    for (tiles, access) in tile_maps(plan) {
        if let Some(index) = check_tile_map(plan, kernel, tiles, access, pass)? {
            indices.push(TileIndex { tiles, index });
        }
    }
    Ok(indices)
}

/// The plan's tile maps, each with how its tiles touch the buffer:
/// consumes load it, produces store it.
fn tile_maps(plan: &Plan) -> Vec<(TileMap, Access)> {
    let consumed = plan
        .consumes()
        .into_iter()
        .map(|c| (TileMap::from(c), Access::Load));
    let produced = plan
        .produces()
        .into_iter()
        .map(|p| (TileMap::from(p), Access::Store));
    consumed.chain(produced).collect()
}

/// Checks one tile map against every access of its buffer's argument; its
/// tile index, where it has a tile and a bound buffer.
fn check_tile_map(
    plan: &Plan,
    kernel: Op,
    tiles: TileMap,
    access: Access,
    pass: &str,
) -> Result<Option<Value>, PassFailed> {
    let name = tiles.buffer().unwrap_or_default();
    let Some(buffer) = plan.buffer(&name) else {
        return Ok(None); // The plan verifier names a missing buffer.
    };
    let Some(arg) = buffer.arg else {
        return Ok(None); // The fused code declares it (an output the kernel never sees).
    };
    let (verb, other) = match access {
        Access::Load => ("consumes", "only stores to"),
        Access::Store => ("produces", "only loads from"),
    };
    let accesses = match access {
        Access::Load => loads_of(kernel, arg),
        Access::Store => stores_of(kernel, arg),
    };
    if accesses.is_empty() {
        let any = !loads_of(kernel, arg).is_empty() || !stores_of(kernel, arg).is_empty();
        return Err(fail(
            tiles,
            format!(
                "{pass}: the plan {verb} @{name} in tiles, but the kernel {} argument {arg}",
                if any { other } else { "never accesses" }
            ),
        ));
    }
    let Some(tile) = tiles.tile() else {
        return Ok(None);
    };
    let index_name = tiles.index();
    let t = find_tile_index(kernel, arg, access, tile, index_name.as_deref(), tiles)?;
    let dim = tiles.dim();
    let what = match &index_name {
        Some(n) => format!("index(\"{n}\")"),
        None => "its tile index".to_string(),
    };
    for op in accesses {
        let seen = tile_access(op, t, buffer.shape.len());
        let problem = if !seen.uses_index {
            Some(format!("does not use {what}"))
        } else if !seen.scales.is_empty() && !seen.scales.contains(&tile) {
            Some(format!(
                "multiplies {what} by {} (rows per tile), not by tile({tile})",
                join(&seen.scales)
            ))
        } else if !seen.extents.is_empty() && !seen.extents.contains(&tile) {
            Some(format!(
                "covers {} rows from {what} * {tile}, not tile({tile})",
                join(&seen.extents)
            ))
        } else {
            seen.dim
                .filter(|d| *d != dim)
                .map(|d| format!("walks dimension {d} of @{name} with {what}, not dim({dim})"))
        };
        if let Some(problem) = problem {
            synco_chunk::Diagnostic::error(
                crate::plan::loc(tiles),
                format!(
                    "{pass}: the plan says tiles of @{name} are {tile} wide along dim({dim}) at {what}, but this {} of argument {arg} {problem}",
                    ir::op_name(op)
                ),
            )
            .note(crate::plan::loc(op), "the kernel's access")
            .emit();
            return Err(PassFailed);
        }
    }
    Ok(Some(t))
}

fn join(values: &[i64]) -> String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// What access `op`'s address says about tile index `t` (in a buffer of
/// `rank` dimensions).
fn tile_access(op: Op, t: Value, rank: usize) -> TileAccess {
    let operands = ir::operands(op);
    if ir::op_name(op).starts_with("tt.descriptor_") {
        return descriptor_access(op, &operands, t);
    }
    let Some(ptr) = operands.first().copied() else {
        return TileAccess::default();
    };
    let slice = ir::backward_slice(ptr);
    let mut seen = TileAccess {
        uses_index: in_slice(&slice, t),
        ..TileAccess::default()
    };
    for (x, scale, scaled) in constant_products(&slice) {
        if !ir::same_value(x, t) {
            continue;
        }
        seen.scales.push(scale);
        for (extent, axis) in ranges_added_to(scaled, &slice) {
            seen.extents.push(extent);
            if seen.dim.is_none() {
                seen.dim = axis.and_then(|a| buffer_dim(a, &slice, rank));
            }
        }
    }
    seen
}

/// A `tt.descriptor_load`/`_store`: offsets follow the descriptor (and, for
/// a store, the value) in dimension order; the block shape is the tile.
fn descriptor_access(op: Op, operands: &[Value], t: Value) -> TileAccess {
    let first_offset = if ir::op_name(op) == "tt.descriptor_store" {
        2
    } else {
        1
    };
    let offsets = operands.get(first_offset..).unwrap_or_default();
    let dims: Vec<usize> = (0..offsets.len())
        .filter(|i| in_slice(&ir::backward_slice(offsets[*i]), t))
        .collect();
    let block = ir::tensor_shape(ir::type_of(if ir::op_name(op) == "tt.descriptor_store" {
        operands[1]
    } else {
        ir::result(op, 0)
    }))
    .unwrap_or_default();
    TileAccess {
        uses_index: !dims.is_empty(),
        scales: Vec::new(),
        extents: dims.iter().filter_map(|d| block.get(*d).copied()).collect(),
        dim: match dims[..] {
            [d] => Some(d),
            _ => None,
        },
    }
}

/// For `scaled` (`t * scale`): each `tt.make_range` of length `n` added to
/// its splat inside `slice`, with the tensor axis the sum is expanded to
/// (`tt.expand_dims`), if it is.
fn ranges_added_to(scaled: Value, slice: &[Value]) -> Vec<(i64, Option<usize>)> {
    let mut out = Vec::new();
    for (splat, _) in ir::uses(scaled) {
        if ir::op_name(splat) != "tt.splat" {
            continue;
        }
        for (add, _) in ir::uses(ir::result(splat, 0)) {
            if ir::op_name(add) != "arith.addi" || !in_slice(slice, ir::result(add, 0)) {
                continue;
            }
            let Some(extent) = ir::operands(add).into_iter().find_map(range_length) else {
                continue;
            };
            out.push((extent, expanded_axis(ir::result(add, 0), slice)));
        }
    }
    out
}

/// Whether `v` is one of `slice`'s values (an access's address slice).
fn in_slice(slice: &[Value], v: Value) -> bool {
    slice.iter().any(|s| ir::same_value(*s, v))
}

/// The length of the `tt.make_range` defining `v`.
fn range_length(v: Value) -> Option<i64> {
    let op = ir::defining_op(v).filter(|o| ir::op_name(*o) == "tt.make_range")?;
    Some(ir::int_attr(op, "end")? - ir::int_attr(op, "start")?)
}

/// The tensor axis that 1-D offsets `v` become, following elementwise ops
/// to a `tt.expand_dims` inside `slice`: the axis of the expanded shape
/// that is not the inserted 1. `Some(0)` for offsets used as they are.
fn expanded_axis(v: Value, slice: &[Value]) -> Option<usize> {
    let mut frontier = vec![v];
    let mut steps = 0;
    while let Some(v) = frontier.pop() {
        steps += 1;
        if steps > 64 {
            return None;
        }
        for (user, _) in ir::uses(v) {
            let Some(out) = ir::results(user)
                .first()
                .copied()
                .filter(|r| in_slice(slice, *r))
            else {
                continue;
            };
            if ir::op_name(user) == "tt.expand_dims" {
                let inserted = ir::int_attr(user, "axis")? as usize;
                return Some(usize::from(inserted == 0));
            }
            if ir::tensor_shape(ir::type_of(out)).is_some_and(|s| s.len() == 1) {
                frontier.push(out);
            }
        }
    }
    Some(0)
}
