//! What the tile passes share: finding a kernel's loads of a buffer and the
//! tile index those loads are computed from.

use crate::plan::{AsOp, fail};
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
/// index along a dimension with `tile`-wide blocks.
pub fn scaled_by_tile(accesses: &[Op], tile: i64) -> Vec<Value> {
    let mut scaled: Vec<Value> = Vec::new();
    for access in accesses {
        for (x, c, _) in constant_products(&ir::backward_slice(ir::operands(*access)[0])) {
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
    let candidates: Vec<Value> = scaled_by_tile(&loads, tile)
        .into_iter()
        .filter(|x| depends_on_program_id(*x))
        .collect();
    match candidates.len() {
        1 => Ok(candidates[0]),
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

/// A kernel loop that walks a consumed buffer's blocks (`loop(...)`): an
/// `scf.for` from 0 in steps of the tile whose iteration at `v` reads
/// `[v, v + tile)` (`splat(v) + make_range(tile)` in the address).
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
/// them. Each loop must step by the tile from 0 or from a multiple of it.
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
            let loads = loads_of(kernel, arg);
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

/// Whether the loads of argument `arg` multiply a program-id-derived value
/// by `tile` (a GEMM's row tile): then no loop walks its tiles. A
/// program's tile that only bounds a loop, as a causal band's start, does
/// not count.
pub fn tiled_by_program(kernel: Op, arg: usize, tile: i64) -> bool {
    loads_of(kernel, arg).iter().any(|load| {
        let slice = ir::backward_slice_to_loop_variables(ir::operands(*load)[0]);
        constant_products(&slice)
            .into_iter()
            .any(|(x, c, _)| c == tile && depends_on_program_id(x))
    })
}

/// The loops over a variable named `name`: once `chunk-reorder-tiles` has
/// split them, the clipped ones only (the loop over chunks around each
/// may carry the name too). `None` if there are none.
fn named_loops(kernel: Op, name: &str) -> Option<Vec<TileLoop>> {
    let named: Vec<TileLoop> = ir::find_all(kernel, "scf.for")
        .into_iter()
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
/// each once.
fn offset_loops(accesses: &[Op], tile: i64) -> Vec<TileLoop> {
    let mut found: Vec<TileLoop> = Vec::new();
    for access in accesses {
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

/// The kernel's one store of argument `arg` (the plan's `@name`), which
/// must come after `index` (the op computing the tile index) in its block or
/// inside an op that does: a producer's store, for `pass` to rewrite.
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
    Ok(store)
}

/// For `scaled` (`t * scale`): each `tt.make_range` of length `n` added to
/// its splat inside `slice`, with the tensor axis the sum is expanded to
/// (`tt.expand_dims`), if it is.
pub fn ranges_added_to(scaled: Value, slice: &[Value]) -> Vec<(i64, Option<usize>)> {
    let mut out = Vec::new();
    let uses = with_extensions(scaled, slice)
        .into_iter()
        .flat_map(ir::uses);
    for (splat, _) in uses {
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
pub fn in_slice(slice: &[Value], v: Value) -> bool {
    slice.iter().any(|s| ir::same_value(*s, v))
}

/// The rows a loop's variable `v` walks in an address `slice`: each range
/// added to it ([`ranges_added_to`]: `splat(v) + [0, n)`), and each range
/// scaled alike ([`ranges_scaled_alike`]: `p + splat(v * x)` where `p`'s
/// offsets are `[0, n) * x`), with the tensor axis of the range.
pub fn rows_walked_by(v: Value, slice: &[Value]) -> Vec<(i64, Option<usize>)> {
    let mut rows = ranges_added_to(v, slice);
    rows.extend(ranges_scaled_alike(v, slice));
    rows
}

/// For a loop variable `v` that an address adds as `v * x` (a pointer
/// moved by `start_n * stride_kn`, the style of FlashAttention's Triton
/// kernels) to offsets that multiply a `tt.make_range` of `n` by the same
/// `x` (`offs_n[:, None] * stride_kn`): each such `(n, axis)`. Such an
/// address reads rows `[v, v + n)` along the range's axis, as `(v + [0,
/// n)) * x` would.
fn ranges_scaled_alike(v: Value, slice: &[Value]) -> Vec<(i64, Option<usize>)> {
    let mut out = Vec::new();
    for value in with_extensions(v, slice) {
        for (product, _) in ir::uses(value) {
            let Some(result) = ir::results(product).first().copied() else {
                continue;
            };
            if ir::op_name(product) != "arith.muli"
                || !in_slice(slice, result)
                || ir::is_ranked_tensor(ir::type_of(result))
            {
                continue;
            }
            let operands = ir::operands(product);
            let x = if ir::same_value(operands[0], value) {
                operands[1]
            } else {
                operands[0]
            };
            for range in slice.iter().copied().filter(|r| range_length(*r).is_some()) {
                if range_scaled_by(range, x, slice) {
                    let n = range_length(range).unwrap_or_default();
                    out.push((n, expanded_axis(range, slice)));
                }
            }
        }
    }
    out
}

/// Whether `range` (a `tt.make_range`), expanded or broadcast, is
/// multiplied by a splat of `x` (the same value, or the same constant)
/// inside `slice`.
fn range_scaled_by(range: Value, x: Value, slice: &[Value]) -> bool {
    let same = |y: Value| {
        let y = splatted(y);
        ir::same_value(unextended(y), unextended(x))
            || ir::constant_int(y).is_some_and(|c| Some(c) == ir::constant_int(x))
    };
    let mut frontier = vec![range];
    let mut steps = 0;
    while let Some(v) = frontier.pop() {
        steps += 1;
        if steps > 64 {
            return false;
        }
        for (user, _) in ir::uses(v) {
            let Some(out) = ir::results(user)
                .first()
                .copied()
                .filter(|r| in_slice(slice, *r))
            else {
                continue;
            };
            match ir::op_name(user).as_str() {
                "arith.muli" => {
                    let operands = ir::operands(user);
                    let other = if ir::same_value(operands[0], v) {
                        operands[1]
                    } else {
                        operands[0]
                    };
                    if same(other) {
                        return true;
                    }
                }
                "tt.expand_dims" | "tt.broadcast" | "arith.extsi" | "arith.extui" => {
                    frontier.push(out);
                }
                _ => {}
            }
        }
    }
    false
}

/// The scalar a splat (or a broadcast of one, or a constant splat) holds,
/// else `v`.
fn splatted(v: Value) -> Value {
    let mut v = v;
    while let Some(op) = ir::defining_op(v)
        .filter(|op| matches!(ir::op_name(*op).as_str(), "tt.splat" | "tt.broadcast"))
    {
        v = ir::operands(op)[0];
    }
    v
}

/// `v` without its integer extensions.
fn unextended(v: Value) -> Value {
    let mut v = v;
    while let Some(op) = ir::defining_op(v)
        .filter(|op| matches!(ir::op_name(*op).as_str(), "arith.extsi" | "arith.extui"))
    {
        v = ir::operands(op)[0];
    }
    v
}

/// `v` and its integer extensions inside `slice` (an i32 loop variable
/// widened for i64 offsets).
fn with_extensions(v: Value, slice: &[Value]) -> Vec<Value> {
    let widened = ir::uses(v).into_iter().filter_map(|(user, _)| {
        let extends = matches!(ir::op_name(user).as_str(), "arith.extsi" | "arith.extui");
        let out = ir::results(user).first().copied()?;
        (extends && in_slice(slice, out)).then_some(out)
    });
    std::iter::once(v).chain(widened).collect()
}

/// The length of the `tt.make_range` defining `v` (or its extension).
fn range_length(v: Value) -> Option<i64> {
    let op = ir::defining_op(v)?;
    match ir::op_name(op).as_str() {
        "arith.extsi" | "arith.extui" => range_length(ir::operands(op)[0]),
        "tt.make_range" => Some(ir::int_attr(op, "end")? - ir::int_attr(op, "start")?),
        _ => None,
    }
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
