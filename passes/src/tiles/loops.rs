//! The kernel loops that walk a consumer's blocks (an attention kernel's
//! loop over the keys and values): found by name or from the addresses,
//! checked to step by the tile, and named in messages.

use super::rows::{descriptor_block, descriptor_rows_at, offset_terms, rows_walked_by};
use super::{
    CHUNK_LOOP_ATTR, PRESENT_LOOP_ATTR, constant_products, depends_on_program_id, loads_of,
};
use crate::plan::fail;
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value};

/// A kernel loop that walks a consumed buffer's blocks (`loop(...)`): an
/// `scf.for` from 0 (or a multiple of the tile) in steps of the tile whose
/// iteration at `v` reads `[v, v + tile)` (`splat(v) + make_range(tile)`
/// in the address, `v * x` added to `make_range(tile) * x`, or a tensor
/// descriptor's block of `tile` rows at offset `v`).
#[derive(Clone, Copy)]
pub struct TileLoop {
    pub op: Op,
    pub iv: Value,
}

impl TileLoop {
    /// The loop variable's name, as Triton keeps it in the locations; none
    /// where Triton gave it the name of a value the loop carries (as it
    /// does in the loops of the helpers it inlines).
    pub fn name(self) -> Option<String> {
        let name = synco_ir::loc::value_variable_name(self.iv)?;
        let body = ir::block_arg_owner(self.iv)?;
        let carried = ir::block_args(body)
            .into_iter()
            .skip(1)
            .any(|arg| synco_ir::loc::value_variable_name(arg).as_deref() == Some(name.as_str()));
        (!carried).then_some(name)
    }

    /// What attributes and `loop(...)` call it: its variable's name, else
    /// the source line of the loop (`flash_attn_blocks.py:28`).
    pub fn key(self) -> String {
        self.name()
            .or_else(|| synco_ir::loc::source_line(ir::value_loc(self.iv)))
            .unwrap_or_else(|| "the kernel's loop".to_string())
    }

    /// How messages name it: "the loop over 'start_n'", or "the loop at
    /// flash_attn_blocks.py:28".
    pub fn subject(self) -> String {
        loops_doing(1, self, "", "").trim_end().to_string()
    }

    /// How messages name its variable: "'start_n'", or "the loop's
    /// variable".
    pub fn variable(self) -> String {
        match self.name() {
            Some(name) => format!("'{name}'"),
            None => "the loop's variable".to_string(),
        }
    }

    /// Its upper bound (operand 1 of the `scf.for`).
    pub fn upper_bound(self) -> Value {
        ir::operands(self.op)[1]
    }
}

/// How a remark names the `count` loops like `first` that walk a buffer
/// (one, or the stages of a causal kernel), with the verb `singular` or
/// `plural` in agreement: "the loop over 'v' reads", "the 2 loops over 'v'
/// read", "the loop at attn.py:28 reads".
pub fn loops_doing(count: usize, first: TileLoop, singular: &str, plural: &str) -> String {
    let place = match first.name() {
        Some(name) => format!("over '{name}'"),
        None => format!("at {}", first.key()),
    };
    match count {
        1 => format!("the loop {place} {singular}"),
        n => format!("the {n} loops {place} {plural}"),
    }
}

/// The kernel loops that walk `consume`'s blocks of argument `arg`, if
/// loops walk its tiles: the loops `loop("name")` names (a helper Triton
/// inlined twice, as a causal kernel's two stages, names two), or, for a
/// consume with no `index`, `source` or `loop`, the `scf.for` loops whose
/// variable the loads' addresses add to a `tt.make_range` of `tile`, one
/// per load, when no program-id-derived value multiplied by `tile` tiles
/// them (or whose variable is the offset of a tensor descriptor's block of
/// `tile` rows). Each loop must step by the tile from 0 or from a multiple
/// of it.
/// Empty when no loop walks the tiles. Errors are reported at `consume`.
pub fn find_tile_loops(
    kernel: Op,
    arg: usize,
    tile: i64,
    consume: crate::plan::TileMap,
) -> Result<Vec<TileLoop>, PassFailed> {
    let kernel_name = ir::str_attr(kernel, "sym_name").unwrap_or_default();
    let found = match consume.loop_var() {
        Some(name) => named_loops(kernel, &name).ok_or_else(|| {
            fail(
                consume,
                format!("kernel @{kernel_name} has no loop over a variable named '{name}'"),
            )
        })?,
        None if consume.index().is_some() || consume.source().is_some() => return Ok(Vec::new()),
        None => {
            if tiled_by_program(kernel, arg, tile) {
                return Ok(Vec::new());
            }
            // (A present path's loops repeat the split loop's reads.)
            let loads: Vec<Op> = loads_of(kernel, arg)
                .into_iter()
                .filter(|load| !in_present_loop(*load))
                .collect();
            let mut loops: Vec<TileLoop> = Vec::new();
            for load in &loads {
                match offset_loops(std::slice::from_ref(load), tile)[..] {
                    [] => {}
                    [only] => {
                        if !loops.iter().any(|l| ir::same_op(l.op, only.op)) {
                            loops.push(only);
                        }
                    }
                    ref several => {
                        return Err(fail(
                            consume,
                            format!(
                                "the tile loop of kernel @{kernel_name} is ambiguous: {} loops add their variable to a range of {tile} in one address of argument {arg}; name it with loop(\"...\")",
                                several.len()
                            ),
                        ));
                    }
                }
            }
            loops
        }
    };
    for tile_loop in &found {
        check_tile_loop_bounds(*tile_loop, tile, consume)?;
    }
    Ok(found)
}

/// Whether `op` is inside a loop of a split loop's present path.
fn in_present_loop(op: Op) -> bool {
    ir::ancestors(op).any(|p| ir::attr(p, PRESENT_LOOP_ATTR).is_some())
}

/// Whether the loads of argument `arg` multiply a program-id-derived value
/// by `tile` (a GEMM's row tile): then no loop walks its tiles. A
/// program's tile that only bounds a loop, as a causal band's start, does
/// not count.
pub fn tiled_by_program(kernel: Op, arg: usize, tile: i64) -> bool {
    loads_of(kernel, arg).iter().any(|load| {
        let slice = slice_to_loop_values(ir::operands(*load)[0]);
        constant_products(&slice)
            .into_iter()
            .any(|(x, c, _)| c == tile && depends_on_program_id(x))
    })
}

/// What `address` is computed from, back to the loops' variables (and
/// the offsets a loop carries in step with its variable, which
/// `chunk-bind-kernel` makes the variable): not where the loops start.
fn slice_to_loop_values(address: Value) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    let mut stack = vec![address];
    while let Some(v) = stack.pop() {
        if seen.iter().any(|s| ir::same_value(*s, v)) {
            continue;
        }
        seen.push(v);
        if let Some(op) = ir::defining_op(v) {
            stack.extend(ir::operands(op));
            continue;
        }
        let Some(index) = ir::block_arg_number(v) else {
            continue;
        };
        let owner = ir::block_arg_owner(v).and_then(ir::block_parent_op);
        let Some(for_op) = owner.filter(|op| ir::op_name(*op) == "scf.for") else {
            continue;
        };
        if index > 0 && !crate::kernel_loops::is_in_step_offset(v) {
            // An iteration value: what it starts from.
            stack.extend(ir::operands(for_op).get(2 + index).copied());
        }
    }
    seen
}

/// The variable of the kernel's loop over `name` (a consumer's
/// `source("...")`), if there is one.
pub fn loop_variable_named(kernel: Op, name: &str) -> Option<Value> {
    ir::find_all(kernel, "scf.for").into_iter().find_map(|op| {
        let iv = loop_variable(op)?;
        (synco_ir::loc::value_variable_name(iv).as_deref() == Some(name)).then_some(iv)
    })
}

/// The loops over a variable named `name`: once `chunk-reorder-tiles` has
/// split them, the clipped ones only (the loop over chunks around each
/// may carry the name too). `None` if there are none.
fn named_loops(kernel: Op, name: &str) -> Option<Vec<TileLoop>> {
    let named: Vec<TileLoop> = ir::find_all(kernel, "scf.for")
        .into_iter()
        .filter(|op| ir::attr(*op, PRESENT_LOOP_ATTR).is_none())
        .filter_map(|op| {
            let found = TileLoop {
                op,
                iv: loop_variable(op)?,
            };
            (found.name().as_deref() == Some(name)).then_some(found)
        })
        .collect();
    let split: Vec<TileLoop> = named
        .iter()
        .copied()
        .filter(|l| ir::attr(l.op, CHUNK_LOOP_ATTR).is_some())
        .collect();
    match (split.is_empty(), named.is_empty()) {
        (false, _) => Some(split),
        (true, false) => Some(named),
        (true, true) => None,
    }
}

/// Refuses a tile loop that does not step by the tile from 0 or from a
/// multiple of it (its iterations would straddle chunks).
fn check_tile_loop_bounds(
    found: TileLoop,
    tile: i64,
    consume: crate::plan::TileMap,
) -> Result<(), PassFailed> {
    // (A loop `chunk-reorder-tiles` clipped to a chunk was checked before.)
    if ir::attr(found.op, CHUNK_LOOP_ATTR).is_some() {
        return Ok(());
    }
    let operands = ir::operands(found.op);
    let (lower, step) = (operands[0], ir::constant_int(operands[2]));
    let aligned =
        ir::constant_int(lower) == Some(0) || crate::kernel_loops::is_multiple_of(lower, tile);
    if !aligned || step != Some(tile) {
        let show = |b: Option<i64>| b.map_or("a runtime value".to_string(), |v| v.to_string());
        let start = match ir::constant_int(lower) {
            Some(v) => format!("a start of {v}"),
            None => format!(
                "a start not known to be a multiple of {tile}, which tl.multiple_of can state,"
            ),
        };
        return Err(fail(
            consume,
            format!(
                "{} must start at 0 or at a multiple of the tile ({tile}) and step by the tile to walk the blocks of tile({tile}) (found {start} and a step of {})",
                found.subject(),
                show(step)
            ),
        ));
    }
    Ok(())
}

/// The induction variable of `scf.for` `op`.
fn loop_variable(op: Op) -> Option<Value> {
    let body = *ir::blocks(*ir::regions(op).first()?).first()?;
    ir::block_args(body).first().copied()
}

/// The `scf.for` loops whose induction variable the addresses of
/// `accesses` add to a `tt.make_range` of `tile` (`splat(v) + [0, tile)`),
/// or that a tensor descriptor reads a block of `tile` rows at
/// (`desc.load([v, ...])`), each once.
fn offset_loops(accesses: &[Op], tile: i64) -> Vec<TileLoop> {
    let mut found: Vec<TileLoop> = Vec::new();
    for access in accesses {
        if let Some((offsets, _)) = descriptor_block(*access) {
            for iv in offsets.into_iter().flat_map(offset_terms) {
                let Some(op) = ir::block_arg_owner(iv).and_then(ir::block_parent_op) else {
                    continue;
                };
                let is_iv = ir::op_name(op) == "scf.for" && ir::block_arg_number(iv) == Some(0);
                let walks = descriptor_rows_at(*access, iv)
                    .iter()
                    .any(|(n, _, _)| *n == tile);
                if is_iv && walks && !found.iter().any(|l| ir::same_op(l.op, op)) {
                    found.push(TileLoop { op, iv });
                }
            }
            continue;
        }
        let slice = ir::backward_slice(ir::operands(*access)[0]);
        for v in &slice {
            let Some(op) = ir::block_arg_owner(*v).and_then(ir::block_parent_op) else {
                continue;
            };
            let is_iv = ir::op_name(op) == "scf.for" && ir::block_arg_number(*v) == Some(0);
            if !is_iv || found.iter().any(|l| ir::same_op(l.op, op)) {
                continue;
            }
            if rows_walked_by(*v, &slice).iter().any(|(n, _)| *n == tile) {
                found.push(TileLoop { op, iv: *v });
            }
        }
    }
    found
}
