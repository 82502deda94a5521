//! What the tile passes share: finding a kernel's loads of a buffer and the
//! tile index those loads are computed from ([`loops`]: the kernel loops
//! that walk a consumer's blocks instead; [`rows`]: which rows an index
//! walks in an address).

mod descriptor_store;
mod loops;
mod rows;

pub use loops::{TileLoop, find_tile_loops, loop_variable_named, loops_doing, tiled_by_program};
pub use rows::{
    buffer_dim_of, descriptor_block, descriptor_dim_of, descriptor_rows_at, in_slice,
    ranges_added_to, rows_shifted, rows_walked_by,
};

use crate::plan::{AsOp, TileMap, fail};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value, loc::op_variable_name};

/// Discardable attribute marking the op that computes the (reordered) tile
/// index of a buffer; its value is the buffer's name.
pub const TILE_INDEX_ATTR: &str = "chunk.tile_index";

/// Discardable attribute marking the op that computes the (rotated) rank
/// whose block an iteration of a `source(...)` loop reads; its value is the
/// loop variable's name.
pub const SOURCE_INDEX_ATTR: &str = "chunk.source_index";

/// Discardable attribute marking the op that computes the (rotated) chunk
/// an iteration of a split tile loop reads (`loop(...)` consumes, see
/// `chunk-reorder-tiles`); its value is the loop variable's name.
pub const CHUNK_INDEX_ATTR: &str = "chunk.chunk_index";

/// Discardable attribute marking the kernel's tile loop once
/// `chunk-reorder-tiles` has clipped it to one chunk; its value is the loop
/// variable's name.
pub const CHUNK_LOOP_ATTR: &str = "chunk.chunk_loop";
/// Marks the `scf.if` between a split tile loop (`then`, where a chunk
/// is missing) and its present path (`else`: the loop's iterations
/// without waits, for a program that finds every chunk present), built by
/// `chunk-reorder-tiles`; its condition comes from `chunk-insert-waits`.
/// The value is the tile loop's variable.
pub const PRESENT_PATH_ATTR: &str = "chunk.present_path";
/// Marks the loops of a present path (the value: the tile loop's
/// variable): neither split nor waited on.
pub const PRESENT_LOOP_ATTR: &str = "chunk.present_loop";

/// Triton's marker on a loop nest (a persistent kernel's tile loop) that it
/// flattens into one loop before software pipelining.
pub const FLATTEN_ATTR: &str = "tt.flatten";

/// The kernel's argument `index` (entry block argument).
pub fn kernel_arg(kernel: Op, index: usize) -> Option<Value> {
    let entry = ir::blocks(*ir::regions(kernel).first()?).first().copied()?;
    ir::block_args(entry).get(index).copied()
}

/// How tiles touch a buffer: consumers load it, producers store it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Load,
    Store,
}

impl Access {
    fn matches(self, op_name: &str) -> bool {
        match self {
            Access::Load => matches!(op_name, "tt.load" | "tt.descriptor_load"),
            Access::Store => matches!(op_name, "tt.store" | "tt.descriptor_store"),
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Access::Load => "loads from",
            Access::Store => "stores to",
        }
    }
}

/// Loads in `kernel` whose address depends on kernel argument `arg`.
pub fn loads_of(kernel: Op, arg: usize) -> Vec<Op> {
    accesses_of(kernel, arg, Access::Load)
}

/// Stores in `kernel` whose address depends on kernel argument `arg`.
pub fn stores_of(kernel: Op, arg: usize) -> Vec<Op> {
    accesses_of(kernel, arg, Access::Store)
}

fn accesses_of(kernel: Op, arg: usize, access: Access) -> Vec<Op> {
    let Some(arg_value) = kernel_arg(kernel, arg) else {
        return Vec::new();
    };
    ir::walk(kernel)
        .into_iter()
        .filter(|op| access.matches(&ir::op_name(*op)))
        .filter(|op| {
            ir::operands(*op).into_iter().take(1).any(|v| {
                ir::backward_slice(v)
                    .iter()
                    .any(|s| ir::same_value(*s, arg_value))
            })
        })
        .collect()
}

/// The height, in row tiles, of the swizzle group that tile index `t`
/// comes from: the constant that clamps it in Triton's GROUP_M swizzle
/// (`group_size_m = min(num_pid_m - first_pid_m, GROUP_M)`, an
/// `arith.minsi` with a constant operand in `t`'s backward slice). `None`
/// for a kernel without such a swizzle.
pub fn swizzle_group(t: Value) -> Option<i64> {
    ir::backward_slice(t)
        .into_iter()
        .filter_map(ir::defining_op)
        .filter(|op| ir::op_name(*op) == "arith.minsi")
        .find_map(|op| ir::operands(op).into_iter().find_map(ir::constant_int))
}

/// The tallest swizzle group in `kernel`: the constants of its
/// `arith.minsi` ops whose other operand depends on the program id (Triton's
/// GROUP_M clamp). A whole-kernel view of [`swizzle_group`], for passes that
/// run before the tile index is known.
pub fn kernel_swizzle_group(kernel: Op) -> Option<i64> {
    ir::find_all(kernel, "arith.minsi")
        .into_iter()
        .filter_map(|op| {
            let operands = ir::operands(op);
            let group = operands.iter().copied().find_map(ir::constant_int)?;
            operands
                .iter()
                .any(|v| ir::constant_int(*v).is_none() && depends_on_program_id(*v))
                .then_some(group)
        })
        .max()
}

/// The constant step of the persistent tile loop that tile index `t` comes
/// from: an `scf.for` whose induction variable `t` depends on and whose
/// lower bound depends on the program id (`for tile in range(pid, tiles,
/// NUM_SMS)`). Such a kernel covers every tile only when launched with
/// exactly that many programs. `None` for a grid of programs, or a loop
/// that strides by a value the launch decides (`num_programs`).
pub fn persistent_stride(t: Value) -> Option<i64> {
    ir::backward_slice(t).into_iter().find_map(|v| {
        if ir::block_arg_number(v) != Some(0) {
            return None;
        }
        let tile_loop = ir::block_parent_op(ir::block_arg_owner(v)?)?;
        if ir::op_name(tile_loop) != "scf.for" {
            return None;
        }
        // scf.for operands: lower bound, upper bound, step, initial values.
        let bounds = ir::operands(tile_loop);
        if !depends_on_program_id(*bounds.first()?) {
            return None;
        }
        ir::constant_int(*bounds.get(2)?)
    })
}

/// The scalars that the addresses of `accesses` multiply by the constant
/// `tile` (`arith.muli x, tile`), each once: the candidates for a tile
/// index along a dimension with `tile`-wide blocks. A tensor-descriptor
/// access's address is its descriptor and its offsets.
pub fn scaled_by_tile(accesses: &[Op], tile: i64) -> Vec<Value> {
    let mut scaled: Vec<Value> = Vec::new();
    for access in accesses {
        let offsets = descriptor_block(*access).map(|(offsets, _)| offsets);
        let address: Vec<Value> = ir::operands(*access)
            .into_iter()
            .take(1)
            .chain(offsets.into_iter().flatten())
            .flat_map(ir::backward_slice)
            .collect();
        for (x, c, _) in constant_products(&address) {
            if c == tile && !scaled.iter().any(|s| ir::same_value(*s, x)) {
                scaled.push(x);
            }
        }
    }
    scaled
}

/// The scalar products by a constant among `values`: `(x, c, x * c)` for
/// each `arith.muli` of a scalar `x` and an `arith.constant` `c` (either
/// operand order).
pub fn constant_products(values: &[Value]) -> Vec<(Value, i64, Value)> {
    let mut out = Vec::new();
    for v in values {
        let Some(op) = ir::defining_op(*v) else {
            continue;
        };
        if ir::op_name(op) != "arith.muli" || ir::is_ranked_tensor(ir::type_of(*v)) {
            continue;
        }
        let ops = ir::operands(op);
        for (x, c) in [(ops[0], ops[1]), (ops[1], ops[0])] {
            if let Some(c) = ir::constant_int(c) {
                out.push((x, c, *v));
            }
        }
    }
    out
}

/// Whether `value` is computed from a `tt.get_program_id`.
pub fn depends_on_program_id(value: Value) -> bool {
    ir::backward_slice(value)
        .iter()
        .filter_map(|v| ir::defining_op(*v))
        .any(|op| ir::op_name(op) == "tt.get_program_id")
}

/// The scalar tile index `t` that the loads (or stores) of argument `arg`
/// compute their rows from (`t * tile`), or, with `name`, the value Triton
/// named so. Errors are reported at `at` (the plan's consume/produce op).
pub fn find_tile_index(
    kernel: Op,
    arg: usize,
    access: Access,
    tile: i64,
    name: Option<&str>,
    at: impl AsOp,
) -> Result<Value, PassFailed> {
    let consume = at.op();
    let kernel_name = ir::str_attr(kernel, "sym_name").unwrap_or_default();
    if let Some(name) = name {
        let named: Vec<Op> = ir::walk(kernel)
            .into_iter()
            .filter(|op| op_variable_name(*op).as_deref() == Some(name))
            .filter(|op| {
                ir::results(*op).len() == 1
                    && ir::is_integer_type(ir::type_of(ir::result(*op, 0)), 32)
            })
            .collect();
        // An assignment's expression carries the name on every op; the
        // value is the one no other op of the same name consumes.
        let last = named.iter().copied().find(|op| {
            ir::uses(ir::result(*op, 0))
                .iter()
                .all(|(user, _)| !named.iter().any(|n| ir::same_op(*n, *user)))
        });
        return last.map(|op| ir::result(op, 0)).ok_or_else(|| {
            fail(
                consume,
                format!("kernel @{kernel_name} has no scalar i32 value named '{name}' (Triton keeps Python names in locations)"),
            )
        });
    }
    let loads = accesses_of(kernel, arg, access);
    let verb = access.verb();
    if loads.is_empty() {
        return Err(fail(
            consume,
            format!("kernel @{kernel_name} never {verb} argument {arg}"),
        ));
    }
    let mut candidates: Vec<Value> = scaled_by_tile(&loads, tile)
        .into_iter()
        .filter(|x| depends_on_program_id(*x))
        .collect();
    if candidates.len() > 1 {
        candidates = on_walked_offsets(&loads, consume, candidates);
    }
    match candidates.len() {
        1 => Ok(candidates[0]),
        0 if loads.iter().any(|op| descriptor_in_loop(*op)) => Err(fail(
            consume,
            format!(
                "kernel @{kernel_name} reads argument {arg} through a tensor descriptor at offsets a loop walks, but no loop walks it in blocks of tile({tile}): a loop split by chunk must read a block of {tile} rows at its own variable (`desc.load([v, ...])`, or at an offset it carries from its start in step with it)"
            ),
        )),
        0 => Err(fail(
            consume,
            format!(
                "cannot find the tile index of kernel @{kernel_name}: no program-id-derived value is multiplied by the tile size {tile} in the addresses of argument {arg}; name it with index(\"...\")"
            ),
        )),
        n => Err(fail(
            consume,
            format!(
                "the tile index of kernel @{kernel_name} is ambiguous: {n} program-id-derived values are multiplied by {tile} in the addresses of argument {arg}; name it with index(\"...\")"
            ),
        )),
    }
}

/// Of several candidates for a tile index, those that the tensor-descriptor
/// accesses among `accesses` use in the offset of the dimension the tile
/// map `at` walks (a descriptor's offsets are the last dimensions of the
/// plan's buffer, in order: `desc.store([start_m * 128, off_h * 128])`
/// walks rows at `start_m`). Unchanged where no access is a descriptor's
/// or the walked dimension is not one of its offsets.
fn on_walked_offsets(accesses: &[Op], at: Op, candidates: Vec<Value>) -> Vec<Value> {
    let walked = TileMap(at).dim();
    let Some(rank) = ir::parent_op(at)
        .and_then(crate::plan::Plan::read)
        .zip(TileMap(at).buffer())
        .map(|(plan, buffer)| plan.rank_of(&buffer))
    else {
        return candidates;
    };
    let walked_offsets: Vec<Value> = accesses
        .iter()
        .filter_map(|access| {
            let (offsets, _) = descriptor_block(*access)?;
            offsets
                .get(descriptor_dim_of(walked, offsets.len(), rank)?)
                .copied()
        })
        .flat_map(ir::backward_slice)
        .collect();
    let narrowed: Vec<Value> = candidates
        .iter()
        .copied()
        .filter(|x| walked_offsets.iter().any(|v| ir::same_value(*v, *x)))
        .collect();
    if narrowed.is_empty() {
        candidates
    } else {
        narrowed
    }
}

/// Whether `op` is a tensor-descriptor access whose offsets depend on the
/// variable or an iteration value of an enclosing `scf.for` (the loop
/// walks its blocks).
fn descriptor_in_loop(op: Op) -> bool {
    let Some((offsets, _)) = descriptor_block(op) else {
        return false;
    };
    offsets.into_iter().any(|offset| {
        ir::backward_slice(offset).into_iter().any(|v| {
            ir::block_arg_owner(v)
                .and_then(ir::block_parent_op)
                .is_some_and(|l| ir::op_name(l) == "scf.for" && ir::is_ancestor(l, op))
        })
    })
}

/// The kernel's one store of argument `arg` (the plan's `@name`), which
/// must come after `index` (the op computing the tile index) in its block or
/// inside an op that does: a producer's store, for `pass` to rewrite. A
/// store through a tensor descriptor (one the kernel makes, or a host
/// descriptor) is rewritten in place as the same store through pointers,
/// which is returned.
/// Errors are reported at `at` (the plan's `chunk.produce`).
pub fn tile_store(
    kernel: Op,
    arg: usize,
    name: &str,
    index: Op,
    at: impl AsOp,
    pass: &str,
) -> Result<Op, PassFailed> {
    let stores = stores_of(kernel, arg);
    let [store] = stores[..] else {
        return Err(fail(
            at,
            format!(
                "{pass}: the kernel must store @{name} once per tile; it has {} stores of it",
                stores.len()
            ),
        ));
    };
    let inside = ir::block_of(index)
        .and_then(|block| ir::ancestor_in_block(store, block))
        .is_some_and(|a| ir::is_before_in_block(index, a));
    if !inside {
        return Err(fail(
            store,
            format!(
                "this store of @{name} is not inside the tile whose index was found; {pass} cannot rewrite it"
            ),
        ));
    }
    descriptor_store::as_pointer_store(kernel, store, name, pass)
}
