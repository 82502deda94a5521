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
//! strides tell (the axis without a stride multiply is the buffer's last
//! dimension; a `tt.descriptor_load`'s offsets are its dimensions in order).
//! What the arithmetic does not show (runtime strides on every axis) is
//! not refused.
//!
//! Strides and extents ([`fixed_args`]): where a 2-D access multiplies the
//! offsets of one axis by a scalar and leaves the other's unscaled, the
//! scaled axis is the bound buffer's first dimension and the scalar its row
//! stride; a `tt.make_tensor_descriptor` names a buffer's shape and
//! strides; a tile index computed from `cdiv(x, tile)` counts the tiles of
//! `x` rows; a mask `offsets < x`, or a loop from 0 to `x` that steps an
//! access's pointers along a dimension, bounds it by `x`. A constant must
//! be what the plan buffer's row-major layout
//! says (else the plan is refused here); a kernel argument becomes a
//! [`ScalarArg`] that the runtime checks at launch (a plan buffer of 8192x1
//! bound to a kernel launched with a row stride of 4096 would read far past
//! it, and one of 4096 rows bound to a kernel launched with M = 8192 too).

use crate::plan::{BufferDecl, Plan, TileMap, fail};
use crate::tiles::kernel_arg;
use crate::tiles::{
    Access, constant_products, depends_on_program_id, find_tile_index, loads_of, stores_of,
};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value};
use synco_manifest::{ScalarArg, ScalarRole};

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

/// Refuses a plan that does not describe how `kernel` accesses its bound
/// buffers (see the module docs).
pub fn check_plan_fits_kernel(plan: &Plan, kernel: Op, pass: &str) -> Result<(), PassFailed> {
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
    let consumed = plan
        .consumes()
        .into_iter()
        .map(|c| (TileMap::from(c), Access::Load));
    let produced = plan
        .produces()
        .into_iter()
        .map(|p| (TileMap::from(p), Access::Store));
    for (tiles, access) in consumed.chain(produced) {
        check_tile_map(plan, kernel, tiles, access, pass)?;
    }
    Ok(())
}

/// The kernel arguments that the plan's bound buffers fix (see the module
/// docs): from every load and store of a bound buffer, its row stride, a
/// tensor descriptor's shape and strides, and upper bounds on its extents
/// (masks, tile counts); from every tile map, the exact extent of the
/// dimension its tiles walk, where the kernel counts them as
/// `cdiv(x, tile)`. A located error where a constant differs from the
/// plan's, or one argument would need two values.
pub fn fixed_args(plan: &Plan, kernel: Op, pass: &str) -> Result<Vec<ScalarArg>, PassFailed> {
    let mut fixed = FixedArgs {
        kernel,
        pass,
        found: Vec::new(),
    };
    fix_access_layouts(&mut fixed, plan, kernel)?;
    fix_tile_map_extents(&mut fixed, plan, kernel)?;
    Ok(fixed.found)
}

/// What each access of a bound buffer fixes: row strides, descriptor
/// layouts, and bounds on extents.
fn fix_access_layouts(fixed: &mut FixedArgs, plan: &Plan, kernel: Op) -> Result<(), PassFailed> {
    for buffer in plan.buffers.iter() {
        let Some(arg) = buffer.arg else {
            continue;
        };
        for op in [loads_of(kernel, arg), stores_of(kernel, arg)].concat() {
            if let (Some(stride), &[_, columns]) = (row_stride(op), &buffer.shape[..]) {
                fixed.require(buffer, op, stride, ScalarRole::Stride, 0, columns)?;
            }
            let rank = buffer.shape.len();
            let bounds = [
                mask_extents(op, rank),
                tile_extents(op, rank),
                loop_extents(op, rank),
            ];
            for (dim, value) in bounds.concat() {
                fixed.require(
                    buffer,
                    op,
                    value,
                    ScalarRole::MaxExtent,
                    dim,
                    buffer.shape[dim],
                )?;
            }
            for (dim, role, value) in descriptor_layout(op, buffer.shape.len()) {
                let expected = match role {
                    ScalarRole::Extent | ScalarRole::MaxExtent => buffer.shape[dim],
                    // (A suffix of a shape whose product fits an i64.)
                    ScalarRole::Stride => buffer.shape[dim + 1..].iter().product(),
                };
                fixed.require(buffer, op, value, role, dim, expected)?;
            }
        }
    }
    Ok(())
}

/// The exact extent of the dimension each tile map's tiles walk, where the
/// kernel counts them as `cdiv(x, tile)`.
fn fix_tile_map_extents(fixed: &mut FixedArgs, plan: &Plan, kernel: Op) -> Result<(), PassFailed> {
    let consumed = plan
        .consumes()
        .into_iter()
        .map(|c| (TileMap::from(c), Access::Load));
    let produced = plan
        .produces()
        .into_iter()
        .map(|p| (TileMap::from(p), Access::Store));
    for (tiles, access) in consumed.chain(produced) {
        // Tiles that read one block per source rank (`source`) count the
        // rows of one source, not the buffer's.
        let (Some(name), Some(tile), None) = (tiles.buffer(), tiles.tile(), tiles.source()) else {
            continue;
        };
        let Some(buffer) = plan.buffer(&name) else {
            continue;
        };
        let Some(arg) = buffer.arg else {
            continue;
        };
        let t = find_tile_index(kernel, arg, access, tile, tiles.index().as_deref(), tiles)?;
        if let Some((extent, count)) = tile_count_extent(t, tile) {
            let dim = tiles.dim();
            fixed.require(
                buffer,
                count,
                extent,
                ScalarRole::Extent,
                dim,
                buffer.shape[dim],
            )?;
        }
    }
    Ok(())
}

/// The arguments found so far, and how to say that one does not fit.
struct FixedArgs<'a> {
    kernel: Op,
    pass: &'a str,
    found: Vec<ScalarArg>,
}

impl FixedArgs<'_> {
    /// `value`, which `at` uses as the `role` of `buffer`'s dimension `dim`,
    /// must be `expected`: checked now for a constant, recorded for a
    /// kernel argument, left alone if computed.
    fn require(
        &mut self,
        buffer: &BufferDecl,
        at: Op,
        value: KernelValue,
        role: ScalarRole,
        dim: usize,
        expected: i64,
    ) -> Result<(), PassFailed> {
        let shape: Vec<String> = buffer.shape.iter().map(i64::to_string).collect();
        let wrong = |what: String| {
            fail(
                buffer.op,
                format!(
                    "{}: @{} is {} (row-major), so its {role} along dimension {dim} is {expected}, but the kernel's {} takes it from {what}",
                    self.pass,
                    buffer.name,
                    shape.join("x"),
                    ir::op_name(at)
                ),
            )
        };
        let value = match value {
            KernelValue::Constant(c) => Err(c),
            KernelValue::Scalar(v) => {
                let v = root(v);
                ir::constant_int(v).map_or(Ok(v), Err)
            }
        };
        let value = match value {
            Err(constant) if constant != expected => return Err(wrong(constant.to_string())),
            Err(_) => return Ok(()),
            Ok(value) => value,
        };
        let Some(index) = (0..)
            .map_while(|i| kernel_arg(self.kernel, i))
            .position(|a| ir::same_value(a, value))
        else {
            return Ok(()); // Computed: not what the arithmetic shows.
        };
        let exact = |r: ScalarRole| r != ScalarRole::MaxExtent;
        let clashes = |f: &ScalarArg| {
            f.arg == index
                && match (exact(f.role), exact(role)) {
                    (true, true) => f.value != expected,
                    (true, false) => f.value > expected,
                    (false, true) => expected > f.value,
                    (false, false) => false,
                }
        };
        if let Some(other) = self.found.iter().find(|f| clashes(f)) {
            return Err(wrong(format!(
                "argument {index}, which is also the {} of @{} along dimension {} ({})",
                other.role, other.buffer, other.dim, other.value
            )));
        }
        let required = ScalarArg {
            arg: index,
            value: expected,
            buffer: buffer.name.clone(),
            dim,
            role,
        };
        if !self.found.contains(&required) {
            self.found.push(required);
        }
        Ok(())
    }
}

/// `v` without the integer casts around it.
fn root(mut v: Value) -> Value {
    while let Some(op) = ir::defining_op(v).filter(|op| {
        matches!(
            ir::op_name(*op).as_str(),
            "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.index_cast"
        )
    }) {
        v = ir::operands(op)[0];
    }
    v
}

/// The extents a masked access bounds its offsets by: `(dim, x)` for each
/// `offsets < x` in its mask (`arith.cmpi slt` or `ult` of expanded offsets
/// and a splat scalar), with the buffer dimension the offsets walk (see
/// [`buffer_dim`]).
fn mask_extents(op: Op, rank: usize) -> Vec<(usize, KernelValue)> {
    let operands = ir::operands(op);
    let mask = match ir::op_name(op).as_str() {
        "tt.load" => operands.get(1),
        "tt.store" => operands.get(2),
        _ => None,
    };
    let (Some(mask), Some(ptr)) = (mask.copied(), operands.first().copied()) else {
        return Vec::new();
    };
    let address = ir::backward_slice(ptr);
    let unbroadcast = |v: Value| {
        ir::defining_op(v)
            .filter(|o| ir::op_name(*o) == "tt.broadcast")
            .map_or(v, |o| ir::operands(o)[0])
    };
    let mut extents = Vec::new();
    for compare in ir::backward_slice(mask)
        .into_iter()
        .filter_map(ir::defining_op)
    {
        // 2: slt, 6: ult (arith::CmpIPredicate).
        if ir::op_name(compare) != "arith.cmpi"
            || !matches!(ir::int_attr(compare, "predicate"), Some(2 | 6))
        {
            continue;
        }
        let sides = ir::operands(compare);
        let Some(bound) = splatted_scalar(unbroadcast(sides[1])) else {
            continue;
        };
        let offsets = unbroadcast(sides[0]);
        let axis = match ir::defining_op(offsets).filter(|o| ir::op_name(*o) == "tt.expand_dims") {
            Some(expand) => ir::int_attr(expand, "axis").map(|inserted| usize::from(inserted == 0)),
            None if rank == 1 => Some(0),
            None => None,
        };
        if let Some(dim) = axis.and_then(|a| buffer_dim(a, &address, rank)) {
            extents.push((dim, KernelValue::Scalar(bound)));
        }
    }
    extents
}

/// The extents a pointer access's tiles count: `(dim, x)` for each
/// program-id-derived index `t` its address multiplies by a constant `c`
/// (and adds a range to, along buffer dimension `dim`), where the kernel
/// counts those tiles as `cdiv(x, c)`. Not where `x` also scales the
/// address (`src * M + rows`: the dimension holds several blocks of `x`).
fn tile_extents(op: Op, rank: usize) -> Vec<(usize, KernelValue)> {
    let Some(ptr) = ir::operands(op).first().copied() else {
        return Vec::new();
    };
    if ir::op_name(op).starts_with("tt.descriptor_") {
        return Vec::new();
    }
    let slice = ir::backward_slice(ptr);
    let scales_address = |x: Value| {
        slice.iter().filter_map(|v| ir::defining_op(*v)).any(|o| {
            ir::op_name(o) == "arith.muli"
                && ir::operands(o).iter().any(|v| ir::same_value(root(*v), x))
        })
    };
    let mut extents = Vec::new();
    for (t, scale, scaled) in constant_products(&slice) {
        if !depends_on_program_id(t) {
            continue;
        }
        let Some((KernelValue::Scalar(x), _)) = tile_count_extent(t, scale) else {
            continue;
        };
        if scales_address(root(x)) {
            continue;
        }
        for (_, axis) in ranges_added_to(scaled, &slice) {
            if let Some(dim) = axis.and_then(|a| buffer_dim(a, &slice, rank)) {
                extents.push((dim, KernelValue::Scalar(x)));
            }
        }
    }
    extents
}

/// The extent a loop's pointer steps walk, for a 2-D access whose pointer
/// is an `scf.for` iteration argument advanced each iteration by `c`
/// elements (the last dimension) or by `c` times a scalar (the first, a row
/// stride), in a loop from 0 to `x` in steps of `c`, or `cdiv(x, c)` times:
/// `(dim, x)`. (The K loop of a GEMM: A's columns, B's rows.)
fn loop_extents(op: Op, rank: usize) -> Vec<(usize, KernelValue)> {
    let walked = || -> Option<(usize, KernelValue)> {
        let ptr = *ir::operands(op).first()?;
        let body = ir::block_arg_owner(ptr)?;
        let index = ir::block_arg_number(ptr)?.checked_sub(1)?;
        let for_op = ir::block_parent_op(body).filter(|o| ir::op_name(*o) == "scf.for")?;
        let step_op = ir::ops_in(body)
            .last()
            .copied()
            .filter(|o| ir::op_name(*o) == "scf.yield")?;
        let next = ir::defining_op(*ir::operands(step_op).get(index)?)
            .filter(|o| ir::op_name(*o) == "tt.addptr")?;
        let [base, increment] = ir::operands(next)[..] else {
            return None;
        };
        if rank != 2 || !ir::same_value(base, ptr) {
            return None;
        }
        let (dim, c) = match ir::constant_splat_int(increment) {
            Some(c) => (1, c),
            None => {
                let product = ir::defining_op(root(splatted_scalar(increment)?))
                    .filter(|o| ir::op_name(*o) == "arith.muli")?;
                let factors = ir::operands(product);
                (0, factors.iter().find_map(|f| ir::constant_int(*f))?)
            }
        };
        let bounds = ir::operands(for_op);
        let (lower, upper, step) = (bounds[0], bounds[1], bounds[2]);
        if ir::constant_int(lower) != Some(0) {
            return None;
        }
        match ir::constant_int(step)? {
            s if s == c => Some((dim, KernelValue::Scalar(upper))),
            1 => cdiv_numerator(upper, c).map(|x| (dim, KernelValue::Scalar(x))),
            _ => None,
        }
    };
    walked().into_iter().collect()
}

/// `x`, where `v` is `(x + c - 1) / c`.
fn cdiv_numerator(v: Value, c: i64) -> Option<Value> {
    let division = ir::defining_op(v)
        .filter(|o| matches!(ir::op_name(*o).as_str(), "arith.divsi" | "arith.divui"))?;
    let operands = ir::operands(division);
    if ir::constant_int(operands[1]) != Some(c) {
        return None;
    }
    let sum = ir::defining_op(operands[0]).filter(|o| ir::op_name(*o) == "arith.addi")?;
    let terms = ir::operands(sum);
    match (ir::constant_int(terms[0]), ir::constant_int(terms[1])) {
        (_, Some(k)) if k == c - 1 => Some(terms[0]),
        (Some(k), _) if k == c - 1 => Some(terms[1]),
        _ => None,
    }
}

/// A descriptor access's layout, from the `tt.make_tensor_descriptor` that
/// made its descriptor: `(dim, role, value)` for each dimension's shape and
/// stride (nothing for a descriptor of another rank than the buffer's).
fn descriptor_layout(op: Op, rank: usize) -> Vec<(usize, ScalarRole, KernelValue)> {
    if !ir::op_name(op).starts_with("tt.descriptor_") {
        return Vec::new();
    }
    let Some(descriptor) = ir::operands(op).first().copied() else {
        return Vec::new();
    };
    let makers: Vec<Op> = ir::backward_slice(descriptor)
        .into_iter()
        .filter_map(ir::defining_op)
        .filter(|o| ir::op_name(*o) == "tt.make_tensor_descriptor")
        .collect();
    let [maker] = makers[..] else {
        return Vec::new();
    };
    let operands = ir::operands(maker);
    if operands.len() != 1 + 2 * rank {
        return Vec::new();
    }
    (0..rank)
        .flat_map(|d| {
            [
                (d, ScalarRole::Extent, KernelValue::Scalar(operands[1 + d])),
                (
                    d,
                    ScalarRole::Stride,
                    KernelValue::Scalar(operands[1 + rank + d]),
                ),
            ]
        })
        .collect()
}

/// The value whose tiles tile index `t` counts, where the kernel computes
/// their number as `cdiv(x, tile)` (`(x + tile - 1) / tile`): `x` and the
/// division, if one value is counted so.
fn tile_count_extent(t: Value, tile: i64) -> Option<(KernelValue, Op)> {
    let mut counted: Vec<(Value, Op)> = Vec::new();
    for op in ir::backward_slice(t)
        .into_iter()
        .filter_map(ir::defining_op)
    {
        let Some(x) = ir::results(op)
            .first()
            .and_then(|quotient| cdiv_numerator(*quotient, tile))
        else {
            continue;
        };
        if !counted.iter().any(|(c, _)| ir::same_value(*c, x)) {
            counted.push((x, op));
        }
    }
    match counted[..] {
        [(x, division)] => Some((KernelValue::Scalar(x), division)),
        _ => None,
    }
}

/// A value the kernel's arithmetic uses (a stride, an extent).
#[derive(Clone, Copy)]
enum KernelValue {
    /// A scalar value: a kernel argument, a constant, or computed.
    Scalar(Value),
    /// A constant (a splat tensor constant, as a specialised stride is).
    Constant(i64),
}

/// What a 2-D access's address multiplies one axis's offsets by, where the
/// other axis's offsets are not multiplied (the row stride).
fn row_stride(op: Op) -> Option<KernelValue> {
    if ir::op_name(op).starts_with("tt.descriptor_") {
        return None; // A descriptor carries its own strides.
    }
    let ptr = *ir::operands(op).first()?;
    let slice = ir::backward_slice(ptr);
    let mut scaled: Vec<(usize, KernelValue)> = Vec::new();
    let mut unscaled: Vec<usize> = Vec::new();
    for expand in slice
        .iter()
        .filter_map(|v| ir::defining_op(*v))
        .filter(|o| ir::op_name(*o) == "tt.expand_dims")
    {
        let axis = usize::from(ir::int_attr(expand, "axis")? == 0);
        let expanded = ir::result(expand, 0);
        let strides: Vec<KernelValue> = ir::uses(expanded)
            .iter()
            .filter(|(user, _)| {
                ir::op_name(*user) == "arith.muli" && in_slice(&slice, ir::result(*user, 0))
            })
            .filter_map(|(user, _)| {
                ir::operands(*user)
                    .into_iter()
                    .find(|o| !ir::same_value(*o, expanded))
            })
            .filter(|o| !is_splat_of_one(*o))
            .filter_map(|o| {
                splatted_scalar(o)
                    .map(KernelValue::Scalar)
                    .or_else(|| ir::constant_splat_int(o).map(KernelValue::Constant))
            })
            .collect();
        match strides[..] {
            [] => unscaled.push(axis),
            [stride] => scaled.push((axis, stride)),
            _ => return None,
        }
    }
    match (&scaled[..], &unscaled[..]) {
        ([(axis, stride)], [other]) if axis != other => Some(*stride),
        _ => None,
    }
}

/// The scalar `v` splats (`tt.splat`), if it is a splat.
fn splatted_scalar(v: Value) -> Option<Value> {
    let op = ir::defining_op(v).filter(|o| ir::op_name(*o) == "tt.splat")?;
    ir::operands(op).first().copied()
}

/// Checks one tile map against every access of its buffer's argument.
fn check_tile_map(
    plan: &Plan,
    kernel: Op,
    tiles: TileMap,
    access: Access,
    pass: &str,
) -> Result<(), PassFailed> {
    let name = tiles.buffer().unwrap_or_default();
    let Some(buffer) = plan.buffer(&name) else {
        return Ok(()); // The plan verifier names a missing buffer.
    };
    let Some(arg) = buffer.arg else {
        return Ok(()); // The fused code declares it (an output the kernel never sees).
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
        return Ok(());
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
    Ok(())
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

/// The buffer dimension of tensor axis `axis` in a 2-D access: the axis
/// whose expanded offsets are used without a stride multiply is the
/// buffer's last dimension (contiguous), the other its first. `None` where
/// the address does not tell (every axis strided by a runtime value, or a
/// buffer of another rank).
fn buffer_dim(axis: usize, slice: &[Value], rank: usize) -> Option<usize> {
    if rank == 1 {
        return Some(0);
    }
    if rank != 2 {
        return None;
    }
    let unit: Vec<usize> = slice
        .iter()
        .filter_map(|v| ir::defining_op(*v))
        .filter(|op| ir::op_name(*op) == "tt.expand_dims")
        .filter_map(|op| {
            let inserted = ir::int_attr(op, "axis")? as usize;
            let expanded = ir::result(op, 0);
            let strided = ir::uses(expanded).iter().any(|(user, _)| {
                ir::op_name(*user) == "arith.muli"
                    && ir::operands(*user)
                        .iter()
                        .any(|o| !ir::same_value(*o, expanded) && !is_splat_of_one(*o))
            });
            (!strided).then_some(usize::from(inserted == 0))
        })
        .collect::<std::collections::BTreeSet<usize>>()
        .into_iter()
        .collect();
    match unit[..] {
        [u] if u == axis => Some(1),
        [_] => Some(0),
        _ => None,
    }
}

fn is_splat_of_one(v: Value) -> bool {
    ir::constant_int(v) == Some(1)
        || ir::defining_op(v)
            .filter(|op| ir::op_name(*op) == "tt.splat")
            .and_then(|op| ir::constant_int(ir::operands(op)[0]))
            == Some(1)
}
