//! Which rows an index walks in an address: `splat(v) + [0, n)`, `v * x`
//! added to offsets `[0, n) * x`, or a tensor descriptor's block of `n`
//! rows at offset `v`; and whether anything else shifts them.

use synco_ir::{self as ir, Op, Value};

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

/// The buffer dimension that dimension `d` of a descriptor of
/// `descriptor_rank` dimensions walks, in a buffer of `rank`: the
/// descriptor's dimensions are the buffer's last ones; none for a
/// descriptor of more dimensions than its buffer.
pub fn buffer_dim_of(d: usize, descriptor_rank: usize, rank: usize) -> Option<usize> {
    (d + rank).checked_sub(descriptor_rank)
}

/// The descriptor dimension that walks buffer dimension `buffer_dim` (the
/// inverse of [`buffer_dim_of`]); none for a leading buffer dimension the
/// descriptor does not have.
pub fn descriptor_dim_of(buffer_dim: usize, descriptor_rank: usize, rank: usize) -> Option<usize> {
    (buffer_dim + descriptor_rank)
        .checked_sub(rank)
        .filter(|&d| d < descriptor_rank)
}

/// A tensor-descriptor access's offsets (one per dimension of the
/// descriptor, in order: they follow the descriptor, and for a store the
/// value) and its block's shape; `None` for a pointer access.
pub fn descriptor_block(op: Op) -> Option<(Vec<Value>, Vec<i64>)> {
    let operands = ir::operands(op);
    let (first_offset, block) = match ir::op_name(op).as_str() {
        "tt.descriptor_load" => (1, ir::result(op, 0)),
        "tt.descriptor_store" => (2, *operands.get(1)?),
        _ => return None,
    };
    let offsets = operands.get(first_offset..).unwrap_or_default().to_vec();
    Some((
        offsets,
        ir::tensor_shape(ir::type_of(block)).unwrap_or_default(),
    ))
}

/// For a tensor-descriptor access: the dimensions whose offset is loop
/// variable `v` itself (through integer casts), or `base + v` with a
/// `base` that does not depend on `v`, each with the block's extent along
/// it and the base: the access reads rows `[base + v, base + v + n)` of
/// that dimension.
pub fn descriptor_rows_at(op: Op, v: Value) -> Vec<(i64, usize, Option<Value>)> {
    let Some((offsets, block)) = descriptor_block(op) else {
        return Vec::new();
    };
    offsets
        .iter()
        .enumerate()
        .filter_map(|(d, offset)| Some((*block.get(d)?, d, offset_from(*offset, v)?)))
        .collect()
}

/// Whether offset `offset` is `v` (`Some(None)`) or `base + v` (`Some(Some(base))`,
/// `base` independent of `v`), through integer casts.
fn offset_from(offset: Value, v: Value) -> Option<Option<Value>> {
    let offset = uncast(offset);
    if ir::same_value(offset, v) {
        return Some(None);
    }
    let add = ir::defining_op(offset).filter(|o| ir::op_name(*o) == "arith.addi")?;
    match ir::operands(add)[..] {
        [a, base] | [base, a]
            if ir::same_value(uncast(a), v) && !in_slice(&ir::backward_slice(base), v) =>
        {
            Some(Some(base))
        }
        _ => None,
    }
}

/// The loop variables a tensor-descriptor offset may be read at: the
/// offset itself, or either term of a sum (through integer casts).
pub fn offset_terms(offset: Value) -> Vec<Value> {
    let offset = uncast(offset);
    let mut terms = vec![offset];
    if let Some(add) = ir::defining_op(offset).filter(|o| ir::op_name(*o) == "arith.addi") {
        terms.extend(ir::operands(add).into_iter().map(uncast));
    }
    terms
}

/// `v` without its integer extensions and truncations.
pub fn uncast(v: Value) -> Value {
    let mut v = v;
    while let Some(op) = ir::defining_op(v).filter(|op| {
        matches!(
            ir::op_name(*op).as_str(),
            "arith.extsi" | "arith.extui" | "arith.trunci"
        )
    }) {
        v = ir::operands(op)[0];
    }
    v
}

/// For a loop variable `v` that an address adds as `v * x` (a pointer
/// moved by `start_n * stride_kn`, the style of FlashAttention's Triton
/// kernels) to offsets that multiply a `tt.make_range` of `n` by the same
/// `x` (`offs_n[:, None] * stride_kn`): each such `(n, axis)`. Such an
/// address reads rows `[v, v + n)` along the range's axis, as `(v + [0,
/// n)) * x` would.
fn ranges_scaled_alike(v: Value, slice: &[Value]) -> Vec<(i64, Option<usize>)> {
    scaled_alike(v, slice)
        .into_iter()
        .filter_map(|(range, _)| Some((range_length(range)?, expanded_axis(range, slice))))
        .collect()
}

/// The `tt.make_range`s of [`ranges_scaled_alike`], each with the stride
/// `x` it and the index are scaled by.
fn scaled_alike(v: Value, slice: &[Value]) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    for value in with_extensions(v, slice) {
        for (product, result) in users_in(value, slice) {
            if ir::op_name(product) != "arith.muli" || ir::is_ranked_tensor(ir::type_of(result)) {
                continue;
            }
            let x = other_operand(product, value);
            out.extend(
                slice
                    .iter()
                    .copied()
                    .filter(|r| range_length(*r).is_some() && range_scaled_by(*r, x, slice))
                    .map(|r| (r, x)),
            );
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
        for (user, out) in users_in(v, slice) {
            match ir::op_name(user).as_str() {
                "arith.muli" => {
                    let other = other_operand(user, v);
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

/// Whether the rows an index `v` walks in an address `slice` (`splat(v) +
/// [0, n)`, or the range of `[0, n) * x` that `v * x` is added to) have
/// anything else added on their way into the address along the same
/// tensor axis: a uniform offset (`start_n + offs_n + past`) or offsets
/// that vary along that axis. Such rows are not `[v, v + n)`, and a wait
/// for the chunk of `v` would not cover them. Also a term of the pointer
/// `address` itself (`K + past * stride_kn + ...`) that is a multiple of
/// the rows' stride and not computed from `v`. A uniform offset computed
/// from `per_source` (the variable of a loop over source ranks, as in
/// `src * M + rows`: a block per source) is the consumer's own and
/// allowed. Rows of unit stride (the buffer's last dimension) are checked
/// on their way only: a pointer term of theirs looks like any other.
pub fn rows_shifted(v: Value, address: Value, slice: &[Value], per_source: Option<Value>) -> bool {
    let mut starts = Vec::new();
    for value in with_extensions(v, slice) {
        for (splat, _) in ir::uses(value) {
            if ir::op_name(splat) != "tt.splat" {
                continue;
            }
            for (add, _) in ir::uses(ir::result(splat, 0)) {
                let out = ir::result(add, 0);
                if ir::op_name(add) == "arith.addi"
                    && in_slice(slice, out)
                    && ir::operands(add)
                        .into_iter()
                        .any(|o| range_length(o).is_some())
                {
                    starts.push(out);
                }
            }
        }
    }
    let mut strides: Vec<Value> = starts
        .iter()
        .filter_map(|s| row_stride(*s, slice))
        .collect();
    for (range, x) in scaled_alike(v, slice) {
        starts.push(range);
        strides.push(x);
    }
    starts
        .into_iter()
        .any(|start| shifted_on_the_way(start, slice, per_source))
        || pointer_terms(address).into_iter().any(|term| {
            let from = |x: Value| {
                ir::backward_slice(term)
                    .iter()
                    .any(|y| ir::same_value(*y, x))
            };
            !from(v) && !per_source.is_some_and(from) && strides.iter().any(|x| scaled_by(term, *x))
        })
}

/// The scalar the rows `start` are multiplied by on their way into the
/// address (`rows[:, None] * stride`), if they are.
fn row_stride(start: Value, slice: &[Value]) -> Option<Value> {
    let mut frontier = vec![start];
    while let Some(v) = frontier.pop() {
        for (user, out) in users_in(v, slice) {
            match ir::op_name(user).as_str() {
                "arith.muli" => {
                    let other = other_operand(user, v);
                    let scalar = splatted(other);
                    return (!ir::is_ranked_tensor(ir::type_of(scalar))).then_some(scalar);
                }
                "tt.expand_dims" | "tt.broadcast" | "arith.extsi" | "arith.extui"
                | "arith.addi" | "arith.subi" => frontier.push(out),
                _ => {}
            }
        }
    }
    None
}

/// The additive scalar terms of pointer `address`'s uniform offsets: the
/// scalar offsets of its `tt.addptr` chain and the splat ones of its
/// tensor `tt.addptr`s, split at `arith.addi` / `arith.subi`.
fn pointer_terms(address: Value) -> Vec<Value> {
    let mut offsets = Vec::new();
    let mut ptr = address;
    while let Some(op) = ir::defining_op(ptr) {
        let operands = ir::operands(op);
        match ir::op_name(op).as_str() {
            "tt.addptr" => {
                let offset = operands[1];
                if varying_axes(offset, 16).iter().all(|a| !a) {
                    offsets.push(splatted(offset));
                }
                ptr = operands[0];
            }
            "tt.splat" | "tt.broadcast" => ptr = operands[0],
            _ => break,
        }
    }
    let mut terms = Vec::new();
    while let Some(v) = offsets.pop() {
        match ir::defining_op(v).map(|op| (ir::op_name(op), ir::operands(op))) {
            Some((name, operands)) if name == "arith.addi" || name == "arith.subi" => {
                offsets.extend(operands);
            }
            Some((name, operands)) if name == "arith.extsi" || name == "arith.extui" => {
                offsets.push(operands[0]);
            }
            _ => terms.push(v),
        }
    }
    terms
}

/// Whether scalar `term` is a product with `x` (through integer casts).
fn scaled_by(term: Value, x: Value) -> bool {
    let Some(op) = ir::defining_op(unextended(term)).filter(|op| ir::op_name(*op) == "arith.muli")
    else {
        return false;
    };
    ir::operands(op)
        .into_iter()
        .any(|f| ir::same_value(unextended(f), unextended(x)))
}

/// Follows rows `start` (a 1-D tensor) through the integer arithmetic of
/// the address `slice` up to the pointer: whether an `arith.addi` or
/// `arith.subi` on the way adds something uniform (not zero) or varying
/// along the rows' axis.
fn shifted_on_the_way(start: Value, slice: &[Value], per_source: Option<Value>) -> bool {
    // (value, the tensor axis its rows vary along)
    let mut frontier = vec![(start, 0usize)];
    let mut steps = 0;
    while let Some((v, axis)) = frontier.pop() {
        steps += 1;
        if steps > 256 {
            return true;
        }
        for (user, out) in users_in(v, slice) {
            let name = ir::op_name(user);
            match name.as_str() {
                "tt.expand_dims" => {
                    let inserted = ir::int_attr(user, "axis").unwrap_or(0) as usize;
                    frontier.push((out, if inserted <= axis { axis + 1 } else { axis }));
                }
                "arith.addi" | "arith.subi" => {
                    let other = ir::operands(user)
                        .into_iter()
                        .find(|o| !ir::same_value(*o, v));
                    let Some(other) = other else {
                        continue; // v + v: the rows doubled, not shifted
                    };
                    let varying = varying_axes(other, 16);
                    let uniform = varying.iter().all(|a| !a);
                    let own = per_source.is_some_and(|src| {
                        ir::backward_slice(other)
                            .iter()
                            .any(|x| ir::same_value(*x, src))
                    });
                    let shifts = (uniform && ir::constant_splat_int(other) != Some(0))
                        || varying.get(axis).copied().unwrap_or(true);
                    if shifts && !(uniform && own) {
                        return true;
                    }
                    frontier.push((out, axis));
                }
                "tt.broadcast" | "arith.muli" | "arith.extsi" | "arith.extui" | "arith.trunci"
                | "arith.remsi" | "arith.remui" | "arith.select" | "arith.minsi"
                | "arith.maxsi" => frontier.push((out, axis)),
                _ => {}
            }
        }
    }
    false
}

/// Along which axes of its tensor type integer `v` varies: none for a
/// scalar or a splat, the range's for `tt.make_range`, followed through
/// `tt.expand_dims`, `tt.broadcast` and elementwise arithmetic; every
/// axis of extent > 1 for anything else (or past `depth`).
fn varying_axes(v: Value, depth: u32) -> Vec<bool> {
    let shape = ir::tensor_shape(ir::type_of(v)).unwrap_or_default();
    let every = || shape.iter().map(|n| *n > 1).collect::<Vec<bool>>();
    let Some(op) = ir::defining_op(v) else {
        return every();
    };
    if depth == 0 {
        return every();
    }
    let operands = ir::operands(op);
    match ir::op_name(op).as_str() {
        "tt.splat" => vec![false; shape.len()],
        "arith.constant" if ir::constant_splat_int(v).is_some() => vec![false; shape.len()],
        "tt.make_range" => vec![true],
        "tt.expand_dims" => {
            let mut axes = varying_axes(operands[0], depth - 1);
            let inserted = ir::int_attr(op, "axis").unwrap_or(0) as usize;
            axes.insert(inserted.min(axes.len()), false);
            axes
        }
        "tt.broadcast" | "arith.extsi" | "arith.extui" | "arith.trunci" => {
            varying_axes(operands[0], depth - 1)
        }
        "arith.addi" | "arith.subi" | "arith.muli" | "arith.divsi" | "arith.remsi"
        | "arith.andi" | "arith.ori" | "arith.minsi" | "arith.maxsi" => {
            let mut axes = vec![false; shape.len()];
            for operand in operands {
                for (axis, varies) in varying_axes(operand, depth - 1).into_iter().enumerate() {
                    if varies && let Some(slot) = axes.get_mut(axis) {
                        *slot = true;
                    }
                }
            }
            axes
        }
        _ => every(),
    }
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
        for (user, out) in users_in(v, slice) {
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

/// The users of `v` whose (first) result lies in the address `slice`, with
/// that result.
fn users_in(v: Value, slice: &[Value]) -> Vec<(ir::Op, Value)> {
    ir::uses(v)
        .into_iter()
        .filter_map(|(user, _)| {
            let out = ir::results(user).first().copied()?;
            in_slice(slice, out).then_some((user, out))
        })
        .collect()
}

/// The operand of binary op `op` that is not `v` (its first, if both are).
fn other_operand(op: ir::Op, v: Value) -> Value {
    let operands = ir::operands(op);
    if ir::same_value(operands[0], v) {
        operands[1]
    } else {
        operands[0]
    }
}
