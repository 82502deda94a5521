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
mod columns;
mod index_expr;
mod layout;
mod leading_offset;
mod merged_rows;
mod walked_count;

pub use columns::columns_read;
pub use layout::fixed_args;

use crate::plan::{Plan, TileMap, fail};
use crate::tiles::{
    Access, TileLoop, buffer_dim_of, constant_products, descriptor_block, descriptor_rows_at,
    find_tile_index, find_tile_loops, in_slice, loads_of, ranges_added_to, rows_shifted,
    rows_walked_by, stores_of,
};
use axes::{BufferDims, buffer_dim};
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
    /// Whether something else is added to the rows `t * scale + [0, n)`
    /// along their axis.
    shifted: bool,
}

/// A tile map's tile index in the kernel, as the check found it: a value
/// the addresses multiply by the tile, or the variable of the (first)
/// kernel loop that walks the blocks (`walk`: each loop that does).
pub struct TileIndex {
    pub tiles: TileMap,
    pub index: Value,
    pub walk: Vec<TileLoop>,
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
        if let Some((index, walk)) = check_tile_map(plan, kernel, tiles, access, pass)? {
            indices.push(TileIndex { tiles, index, walk });
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
/// tile index (and the loop that walks its blocks, if one does), where it
/// has a tile and a bound buffer.
fn check_tile_map(
    plan: &Plan,
    kernel: Op,
    tiles: TileMap,
    access: Access,
    pass: &str,
) -> Result<Option<(Value, Vec<TileLoop>)>, PassFailed> {
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
    if access == Access::Load {
        let loops = find_tile_loops(kernel, arg, tile, tiles)?;
        if let Some(first) = loops.first() {
            check_tile_loops(tiles, &name, arg, &buffer.shape, &loops, &accesses, pass)?;
            return Ok(Some((first.iv, loops)));
        }
    }
    let index_name = tiles.index();
    let t = find_tile_index(kernel, arg, access, tile, index_name.as_deref(), tiles)?;
    let dim = tiles.dim();
    let what = match &index_name {
        Some(n) => format!("index(\"{n}\")"),
        None => "its tile index".to_string(),
    };
    let per_source = tiles
        .source()
        .and_then(|name| crate::tiles::loop_variable_named(kernel, &name));
    for op in accesses {
        let dims = BufferDims {
            rank: buffer.shape.len(),
            tiled: Some(dim),
        };
        let seen = tile_access(op, t, dims, per_source);
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
        } else if seen.shifted {
            Some(format!(
                "adds another offset to the rows {what} * {tile} + [0, {tile}): they are not the rows of the tile's chunk"
            ))
        } else {
            seen.dim
                .filter(|d| *d != dim)
                .map(|d| format!("walks dimension {d} of @{name} with {what}, not dim({dim})"))
        };
        if let Some(problem) = problem {
            return Err(refuse_access(
                tiles,
                op,
                format!(
                    "{pass}: the plan says tiles of @{name} are {tile} wide along dim({dim}) at {what}, but this {} of argument {arg} {problem}",
                    ir::op_name(op)
                ),
            ));
        }
    }
    Ok(Some((t, Vec::new())))
}

/// Checks that every access of a buffer whose tiles kernel loops walk
/// (`loop(...)`, or found) is inside one of those loops and reads `[v, v +
/// tile)` of the tile map's `dim` at the loop's value `v`, and that no
/// address in those loops depends on a value the loop carries (an offset
/// advanced each iteration would read the wrong rows once the loop walks
/// the chunks out of order).
fn check_tile_loops(
    tiles: TileMap,
    name: &str,
    arg: usize,
    shape: &[i64],
    loops: &[TileLoop],
    accesses: &[Op],
    pass: &str,
) -> Result<(), PassFailed> {
    let dim = tiles.dim();
    let tile = tiles.tile().unwrap_or(1);
    for tile_loop in loops {
        if let Some(access) = carried_address(*tile_loop) {
            return Err(refuse_access(
                tiles,
                access,
                format!(
                    "{pass}: {} walks @{name}'s chunks in the order they arrive, but the address of this {} depends on a value the loop carries from one iteration to the next: out of order, it would read the wrong rows (compute it from {})",
                    tile_loop.subject(),
                    ir::op_name(access),
                    tile_loop.variable()
                ),
            ));
        }
    }
    for &op in accesses {
        let slice = ir::backward_slice(ir::operands(op)[0]);
        let inside = loops.iter().find(|l| ir::is_ancestor(l.op, op));
        let Some(&first) = inside.or(loops.first()) else {
            return Ok(());
        };
        let (subject, var) = (first.subject(), first.variable());
        let problem = if inside.is_none() {
            Some(format!("is outside {subject}"))
        } else if descriptor_block(op).is_some() {
            descriptor_loop_problem(op, first.iv, &var, tiles, shape)
        } else {
            pointer_loop_problem(op, first.iv, &slice, &var, tiles, name, shape.len())
        };
        if let Some(problem) = problem {
            return Err(refuse_access(
                tiles,
                op,
                format!(
                    "{pass}: the plan says {subject} walks @{name} in blocks of {tile} along dim({dim}), but this {} of argument {arg} {problem}",
                    ir::op_name(op)
                ),
            ));
        }
    }
    Ok(())
}

/// What is wrong with a pointer access in a tile loop over `iv` (named
/// `var` in messages), if anything: it must add `iv` to a range of
/// tile(n) rows of the tile map's dim, with nothing else added to them.
fn pointer_loop_problem(
    op: Op,
    iv: Value,
    slice: &[Value],
    var: &str,
    tiles: TileMap,
    name: &str,
    rank: usize,
) -> Option<String> {
    let (dim, tile) = (tiles.dim(), tiles.tile().unwrap_or(1));
    let ranges = rows_walked_by(iv, slice);
    if ranges.is_empty() {
        Some(format!("does not add {var} to a range of rows"))
    } else if !ranges.iter().any(|(n, _)| *n == tile) {
        let lengths: Vec<i64> = ranges.iter().map(|(n, _)| *n).collect();
        Some(format!(
            "covers {} rows from {var}, not tile({tile})",
            join(&lengths)
        ))
    } else if rows_shifted(iv, ir::operands(op)[0], slice, None) {
        Some(format!(
            "adds another offset to the rows it reads from {var}: they are not the rows whose chunk it waits for"
        ))
    } else {
        ranges
            .iter()
            .filter_map(|(_, axis)| {
                let dims = BufferDims {
                    rank,
                    tiled: Some(dim),
                };
                axis.and_then(|a| buffer_dim(a, slice, dims))
            })
            .find(|d| *d != dim)
            .map(|d| format!("walks dimension {d} of @{name} with {var}, not dim({dim})"))
    }
}

/// What is wrong with a tensor-descriptor access in a tile loop over `iv`
/// (named `var` in messages), if anything: its offset along the tile
/// map's dim must be `iv` itself, or `iv` plus whole heads of a
/// descriptor over several of the buffer's dimensions ([`merged_rows`]),
/// and its block tile(n) rows tall there (the descriptor's dimensions are
/// the buffer's last ones).
fn descriptor_loop_problem(
    op: Op,
    iv: Value,
    var: &str,
    tiles: TileMap,
    shape: &[i64],
) -> Option<String> {
    let (dim, tile) = (tiles.dim(), tiles.tile().unwrap_or(1));
    let (offsets, _) = descriptor_block(op)?;
    let at = descriptor_rows_at(op, iv);
    let computed = (0..offsets.len()).any(|d| {
        in_slice(&ir::backward_slice(offsets[d]), iv) && !at.iter().any(|(_, e, _)| *e == d)
    });
    if !tile_access(op, iv, BufferDims::UNKNOWN, None).uses_index {
        return Some(format!("does not read at an offset from {var}"));
    }
    if computed || at.is_empty() {
        return Some(format!(
            "reads at an offset computed from {var}, not at {var} itself: the rows are not those whose chunk it waits for"
        ));
    }
    if let Some((n, _, _)) = at.iter().find(|(n, _, _)| *n != tile) {
        return Some(format!(
            "reads blocks of {n} rows at {var}, not tile({tile})"
        ));
    }
    // A descriptor of the last two dimensions made at an offset into the
    // buffer (one head's [tokens, head_dim]) is checked where the layout
    // is ([`leading_offset`]: the offset must be whole heads); others not.
    let dims = BufferDims {
        rank: shape.len(),
        tiled: Some(dim),
    };
    let checked = offsets.len() == 2
        && leading_offset::sliced_dim(dims).is_some()
        && leading_offset::descriptor_made_at_offsets(op);
    if offsets.len() < shape.len() && merged_rows::made_at_offset(op) && !checked {
        return Some(format!(
            "goes through a {}-D descriptor made at an offset into the {}-D buffer: that the offset selects whole rows of the leading dimensions is checked only for a descriptor of the last two dimensions made at the buffer's argument plus offsets; make the descriptor at the buffer's start, over all its rows, and add the first row to the offset it reads at",
            offsets.len(),
            shape.len()
        ));
    }
    for &(_, d, base) in &at {
        let walked = buffer_dim_of(d, offsets.len(), shape.len());
        if walked != Some(dim) {
            let of_buffer = match walked {
                Some(w) if offsets.len() != shape.len() => {
                    format!(" (dimension {w} of the buffer)")
                }
                _ => String::new(),
            };
            return Some(format!(
                "walks dimension {d} of the descriptor{of_buffer} with {var}, not dim({dim})"
            ));
        }
        let rows = shape.get(dim).copied().unwrap_or_default();
        let merged = d == 0 && offsets.len() < shape.len();
        if base.is_some_and(|b| !merged || merged_rows::whole_rows(b, rows).is_none()) {
            return Some(if merged {
                format!(
                    "reads at {var} plus an offset that is not a whole number of the buffer's {rows} rows along dim({dim}) (a multiple of a constant or of an argument the plan can fix): the rows are not those whose chunk it waits for"
                )
            } else {
                format!(
                    "reads at an offset computed from {var}, not at {var} itself: the rows are not those whose chunk it waits for"
                )
            });
        }
    }
    None
}

/// The first load or store in `tile_loop` whose address depends on one of
/// the loop's iteration values.
fn carried_address(tile_loop: TileLoop) -> Option<Op> {
    let body = ir::block_arg_owner(tile_loop.iv)?;
    let carried = |v: &Value| {
        ir::block_arg_owner(*v).is_some_and(|b| ir::same_block(b, body))
            && ir::block_arg_number(*v).is_some_and(|n| n > 0)
    };
    ir::walk(tile_loop.op).into_iter().find(|op| {
        let operands = ir::operands(*op);
        let address: &[Value] = match ir::op_name(*op).as_str() {
            "tt.load" | "tt.store" => &operands[..1],
            "tt.descriptor_load" => &operands[1..],
            "tt.descriptor_store" => operands.get(2..).unwrap_or_default(),
            _ => return false,
        };
        address
            .iter()
            .any(|a| ir::backward_slice(*a).iter().any(carried))
    })
}

/// The error `message` at the plan's op `at` (a tile map, a buffer), with
/// a note at the kernel's access `op` it is about.
fn refuse_access(at: impl crate::plan::AsOp, op: Op, message: String) -> PassFailed {
    synco_chunk::Diagnostic::error(crate::plan::loc(at), message)
        .note(crate::plan::loc(op), "the kernel's access")
        .emit();
    PassFailed
}

fn join(values: &[i64]) -> String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}

/// What access `op`'s address says about tile index `t` (in a buffer of
/// `rank` dimensions; `per_source`: the variable of the consumer's loop
/// over source ranks, whose blocks may offset the rows).
fn tile_access(op: Op, t: Value, dims: BufferDims, per_source: Option<Value>) -> TileAccess {
    if descriptor_block(op).is_some() {
        return descriptor_access(op, t, dims.rank);
    }
    let Some(ptr) = ir::operands(op).first().copied() else {
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
        seen.shifted |= rows_shifted(scaled, ptr, &slice, per_source);
        for (extent, axis) in ranges_added_to(scaled, &slice) {
            seen.extents.push(extent);
            if seen.dim.is_none() {
                seen.dim = axis.and_then(|a| buffer_dim(a, &slice, dims));
            }
        }
    }
    seen
}

/// Whether descriptor offset `v` is `t` or `t` times a constant (through
/// integer casts), with nothing added.
fn scales_only(v: Value, t: Value) -> bool {
    let mut v = v;
    loop {
        if ir::same_value(v, t) {
            return true;
        }
        let Some(op) = ir::defining_op(v) else {
            return false;
        };
        let operands = ir::operands(op);
        match ir::op_name(op).as_str() {
            "arith.extsi" | "arith.extui" | "arith.trunci" => v = operands[0],
            "arith.muli" => {
                return match operands[..] {
                    [a, c] | [c, a] if ir::constant_int(c).is_some() => scales_only(a, t),
                    _ => false,
                };
            }
            _ => return false,
        }
    }
}

/// A `tt.descriptor_load`/`_store`: offsets follow the descriptor (and, for
/// a store, the value) in dimension order, the descriptor's dimensions the
/// last of the buffer's `rank`; the block shape is the tile.
fn descriptor_access(op: Op, t: Value, rank: usize) -> TileAccess {
    let (offsets, block) = descriptor_block(op).unwrap_or_default();
    let dims: Vec<usize> = (0..offsets.len())
        .filter(|i| in_slice(&ir::backward_slice(offsets[*i]), t))
        .collect();
    TileAccess {
        uses_index: !dims.is_empty(),
        scales: Vec::new(),
        extents: dims.iter().filter_map(|d| block.get(*d).copied()).collect(),
        dim: match dims[..] {
            [d] => buffer_dim_of(d, offsets.len(), rank),
            _ => None,
        },
        shifted: dims.iter().any(|d| !scales_only(offsets[*d], t)),
    }
}
