//! What a kernel's arithmetic takes from a value, for the plan to fix
//! ([`fixed_args`], called by `chunk-bind-kernel`): the strides a 2-D
//! access multiplies its axes' offsets by ([`super::axes`]: the strided
//! axis's is the product of the later dimensions, the contiguous one's 1);
//! the factors of the offset before the tile in a buffer of three or more
//! dimensions, multiples of the leading dimension's stride
//! ([`super::leading_offset`]); a
//! `tt.make_tensor_descriptor`'s shape and strides; the extent a tile index
//! computed from `cdiv(x, tile)` counts (one source's rows where tiles read
//! a block per source); and upper bounds: a mask `offsets < x`, or a loop
//! from 0 to `x` that steps an access's pointers along a dimension. A
//! constant must be what the plan buffer's row-major layout says (else the
//! plan is refused here); a kernel argument becomes a [`ScalarArg`] that the
//! runtime checks at launch (a plan buffer of 8192x1 bound to a kernel
//! launched with a row stride of 4096 would read far past it, and one of
//! 4096 rows bound to a kernel launched with M = 8192 too). Where several
//! values are counted in tiles of one size on the way to one index (a
//! grouped GEMM's M and N with 128x128 blocks), the index arithmetic,
//! evaluated, says which ([`super::walked_count`]). Not fixed: values the
//! kernel computes, and indices whose arithmetic is not integer `arith` on
//! the program id (or a persistent kernel's tile loop).

use super::TileIndex;
use super::axes::{BufferDims, KernelValue, axis_layout, buffer_dim, root, splatted_scalar};
use super::index_expr::index_expr;
use super::leading_offset::{OffsetTerm, leading_terms, offset_expr, sliced_dim};
use super::merged_rows::{WholeRows, descriptor_maker, whole_rows};
use super::walked_count::walked_count;
use crate::checked;
use crate::plan::{BufferDecl, Plan, fail};
use crate::tiles::{TileLoop, descriptor_rows_at, ranges_added_to};
use crate::tiles::{constant_products, depends_on_program_id, kernel_arg, loads_of, stores_of};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value};
use synco_manifest::{IndexBound, ScalarArg, ScalarRole};

/// The kernel arguments that the plan's bound buffers fix (see the module
/// docs): from every load and store of a bound buffer, its row stride, a
/// tensor descriptor's shape and strides, and upper bounds on its extents
/// (masks, tile counts); from every tile map, the exact extent of the
/// dimension its tiles walk, where the kernel counts them as
/// `cdiv(x, tile)`. A located error where a constant differs from the
/// plan's, or one argument would need two values.
pub fn fixed_args(
    plan: &Plan,
    kernel: Op,
    indices: &[TileIndex],
    pass: &str,
) -> Result<(Vec<ScalarArg>, Vec<IndexBound>), PassFailed> {
    let mut fixed = FixedArgs {
        kernel,
        pass,
        found: Vec::new(),
        bounds: Vec::new(),
    };
    fix_access_layouts(&mut fixed, plan, kernel)?;
    fix_tile_map_extents(&mut fixed, plan, kernel, indices)?;
    Ok((fixed.found, fixed.bounds))
}

/// What each access of a bound buffer fixes: row strides, descriptor
/// layouts, and bounds on extents.
fn fix_access_layouts(fixed: &mut FixedArgs, plan: &Plan, kernel: Op) -> Result<(), PassFailed> {
    for buffer in plan.buffers.iter() {
        let Some(arg) = buffer.arg else {
            continue;
        };
        let dims = BufferDims::of(plan, buffer);
        for op in [loads_of(kernel, arg), stores_of(kernel, arg)].concat() {
            for (dim, stride) in row_major_strides(op, dims) {
                let expected = row_major_stride(buffer, dim)?;
                fixed.require(buffer, op, stride, ScalarRole::Stride, dim, expected)?;
            }
            fix_leading_offset(fixed, buffer, dims, op, arg)?;
            let bounds = [
                mask_extents(op, dims),
                tile_extents(op, dims, &buffer.shape),
                loop_extents(op, dims.rank),
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
            for (dim, role, value, expected) in descriptor_layout(op, &buffer.shape) {
                fixed.require(buffer, op, value, role, dim, expected)?;
            }
        }
    }
    Ok(())
}

/// The exact extent of the dimension each tile map's tiles walk, where the
/// kernel counts them as `cdiv(x, tile)`.
fn fix_tile_map_extents(
    fixed: &mut FixedArgs,
    plan: &Plan,
    kernel: Op,
    indices: &[TileIndex],
) -> Result<(), PassFailed> {
    for TileIndex {
        tiles,
        index: t,
        walk,
    } in indices
    {
        let (Some(name), Some(tile)) = (tiles.buffer(), tiles.tile()) else {
            continue;
        };
        let Some(buffer) = plan.buffer(&name) else {
            continue;
        };
        let Some(arg) = buffer.arg else {
            continue;
        };
        let dim = tiles.dim();
        let rows = buffer.shape[dim];
        // A loop that walks the blocks (`loop(...)`) reads rows up to its
        // upper bound.
        if !walk.is_empty() {
            for tile_loop in walk {
                let upper = KernelValue::Scalar(tile_loop.upper_bound());
                fixed.require(
                    buffer,
                    tile_loop.op,
                    upper,
                    ScalarRole::MaxExtent,
                    dim,
                    rows,
                )?;
                for (access, base, whole) in whole_heads(kernel, arg, tile_loop, rows) {
                    if let WholeRows::Times(heads) = whole {
                        let heads = KernelValue::Scalar(heads);
                        fixed.require(buffer, access, heads, ScalarRole::Extent, dim, rows)?;
                    }
                    // The head's first row: within the merged rows.
                    let merged = checked::product(&buffer.shape[..=dim], buffer.op, "rows")?;
                    if let Some(value) = index_expr(base) {
                        fixed.bound(IndexBound {
                            buffer: buffer.name.clone(),
                            what: format!("the row its head starts at along dimension {dim}"),
                            value,
                            lowest: 0,
                            highest: merged - rows,
                        });
                    }
                }
            }
            continue;
        }
        // (Per-source tiles may walk one source's rows.)
        let per_source = tiles.source().map(|_| rows / plan.world_size);
        let candidates: Vec<i64> = [Some(rows), per_source].into_iter().flatten().collect();
        let Some((extent, count)) = counted_extent(*t, tile, &candidates) else {
            continue;
        };
        let extent = KernelValue::Scalar(extent);
        let mut expected = buffer.shape[dim];
        if tiles.source().is_some() && scales_an_access(kernel, arg, extent) {
            // Tiles that read one block per source rank along `dim`
            // (`src * x + rows`) count the rows of one source.
            if expected % plan.world_size != 0 {
                continue;
            }
            expected /= plan.world_size;
        }
        fixed.require(buffer, count, extent, ScalarRole::Extent, dim, expected)?;
    }
    Ok(())
}

/// The kernel arguments that make the row offsets of descriptor accesses
/// of argument `arg` in `tile_loop` whole heads of `rows` rows (see
/// [`super::merged_rows`]), each with its access.
fn whole_heads(
    kernel: Op,
    arg: usize,
    tile_loop: &TileLoop,
    rows: i64,
) -> Vec<(Op, Value, WholeRows)> {
    let mut found = Vec::new();
    for op in [loads_of(kernel, arg), stores_of(kernel, arg)].concat() {
        for (_, _, base) in descriptor_rows_at(op, tile_loop.iv) {
            if let Some((base, whole)) = base.and_then(|b| Some((b, whole_rows(b, rows)?))) {
                found.push((op, base, whole));
            }
        }
    }
    found
}

/// Whether some load or store of argument `arg` multiplies its address by
/// `x` (the rows of one source's block, in `src * x + rows`).
fn scales_an_access(kernel: Op, arg: usize, x: KernelValue) -> bool {
    let KernelValue::Scalar(x) = x else {
        return false;
    };
    [loads_of(kernel, arg), stores_of(kernel, arg)]
        .concat()
        .into_iter()
        .filter_map(|op| ir::operands(op).first().copied())
        .any(|ptr| scales_address(&ir::backward_slice(ptr), root(x)))
}

/// Whether `x` is a factor of a product in the address `slice`.
fn scales_address(slice: &[Value], x: Value) -> bool {
    slice.iter().filter_map(|v| ir::defining_op(*v)).any(|o| {
        ir::op_name(o) == "arith.muli"
            && ir::operands(o).iter().any(|v| ir::same_value(root(*v), x))
    })
}

/// The arguments found so far, and how to say that one does not fit.
struct FixedArgs<'a> {
    kernel: Op,
    pass: &'a str,
    found: Vec<ScalarArg>,
    /// Leading offsets the runtime keeps within their buffers.
    bounds: Vec<IndexBound>,
}

impl FixedArgs<'_> {
    /// Records `bound` for the runtime (once).
    fn bound(&mut self, bound: IndexBound) {
        if !self.bounds.contains(&bound) {
            self.bounds.push(bound);
        }
    }

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
        let wrong = |what: String| {
            fail(
                buffer.op,
                format!(
                    "{}: @{} is {} (row-major), so its {role} along dimension {dim} is {}{expected}, but the kernel's {} takes it from {what}",
                    self.pass,
                    buffer.name,
                    shape_text(&buffer.shape),
                    role.qualifier(),
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
        // (A smaller constant bound leaves the rest of the buffer alone.)
        let value = match value {
            Err(constant) if !role.allows(constant, expected) => {
                return Err(wrong(constant.to_string()));
            }
            Err(_) => return Ok(()),
            Ok(value) => value,
        };
        let Some(index) = (0..)
            .map_while(|i| kernel_arg(self.kernel, i))
            .position(|a| ir::same_value(a, value))
        else {
            // Computed: a bound the runtime evaluates over each launch,
            // where the value is arithmetic of program ids and arguments.
            if role == ScalarRole::MaxExtent
                && let Some(expr) = index_expr(value)
            {
                self.bound(IndexBound {
                    buffer: buffer.name.clone(),
                    what: format!(
                        "the extent its {} reaches along dimension {dim}",
                        ir::op_name(at)
                    ),
                    value: expr,
                    lowest: i64::MIN,
                    highest: expected,
                });
            }
            return Ok(());
        };
        let clashes =
            |f: &ScalarArg| f.arg == index && contradicts((f.role, f.value), (role, expected));
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

/// Whether no value meets both requirements (a role and its value) of one
/// argument: two exact values that differ, or an exact value the other
/// role does not allow (two bounds, or two multiples, always have one).
fn contradicts(a: (ScalarRole, i64), b: (ScalarRole, i64)) -> bool {
    let exact = |r: ScalarRole| matches!(r, ScalarRole::Stride | ScalarRole::Extent);
    match (a, b) {
        ((ra, va), (rb, vb)) if exact(ra) && exact(rb) => va != vb,
        ((ra, va), (rb, vb)) if exact(ra) => !rb.allows(va, vb),
        ((ra, va), (rb, vb)) if exact(rb) => !ra.allows(vb, va),
        _ => false,
    }
}

/// The extents a masked access bounds its offsets by: `(dim, x)` for each
/// `offsets < x` in its mask (`arith.cmpi slt` or `ult` of expanded offsets
/// and a splat scalar), with the buffer dimension the offsets walk (see
/// [`buffer_dim`]).
fn mask_extents(op: Op, dims: BufferDims) -> Vec<(usize, KernelValue)> {
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
        let bound = unbroadcast(sides[1]);
        let Some(bound) = splatted_scalar(bound)
            .map(KernelValue::Scalar)
            .or_else(|| ir::constant_splat_int(bound).map(KernelValue::Constant))
        else {
            continue;
        };
        let offsets = unbroadcast(sides[0]);
        let axis = match ir::defining_op(offsets).filter(|o| ir::op_name(*o) == "tt.expand_dims") {
            Some(expand) => ir::int_attr(expand, "axis").map(|inserted| usize::from(inserted == 0)),
            None if dims.rank == 1 => Some(0),
            None => None,
        };
        if let Some(dim) = axis.and_then(|a| buffer_dim(a, &address, dims)) {
            extents.push((dim, bound));
        }
    }
    extents
}

/// The extents a pointer access's tiles count: `(dim, x)` for each
/// program-id-derived index `t` its address multiplies by a constant `c`
/// (and adds a range to, along buffer dimension `dim`), where the kernel
/// counts those tiles as `cdiv(x, c)` (of several so counted, the one `t`
/// walks `shape[dim] / c` tiles of: [`walked_count`]). Not where `x` also
/// scales the address (`src * M + rows`: the dimension holds several
/// blocks of `x`).
fn tile_extents(op: Op, dims: BufferDims, shape: &[i64]) -> Vec<(usize, KernelValue)> {
    let Some(ptr) = ir::operands(op).first().copied() else {
        return Vec::new();
    };
    if ir::op_name(op).starts_with("tt.descriptor_") {
        return Vec::new();
    }
    let slice = ir::backward_slice(ptr);
    let mut extents = Vec::new();
    for (t, scale, scaled) in constant_products(&slice) {
        if !depends_on_program_id(t) {
            continue;
        }
        for (_, axis) in ranges_added_to(scaled, &slice) {
            let Some(dim) = axis.and_then(|a| buffer_dim(a, &slice, dims)) else {
                continue;
            };
            let walked = counted_extent(t, scale, &[shape[dim]]).map(|(x, _)| x);
            if let Some(x) = walked.filter(|x| !scales_address(&slice, root(*x))) {
                extents.push((dim, KernelValue::Scalar(x)));
            }
        }
    }
    extents
}

/// The extent a loop's pointer steps walk, for a 2-D access whose pointer
/// is an `scf.for` iteration argument advanced each iteration by `c`
/// elements (the last dimension) or by `c` times the stride of a
/// dimension, in a loop from 0 to `x` in steps of `c`, or `cdiv(x, c)`
/// times: `(dim, x)`. (The K loop of a GEMM: A's columns, B's rows.)
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
        let bounds = ir::operands(for_op);
        let (dim, c) = match ir::constant_splat_int(increment) {
            Some(c) => (1, c),
            None => {
                // `c` times the stride of the dimension it steps along.
                let product = ir::defining_op(root(splatted_scalar(increment)?))
                    .filter(|o| ir::op_name(*o) == "arith.muli")?;
                let factors = ir::operands(product);
                let c = factors.iter().find_map(|f| ir::constant_int(*f))?;
                let stride = *factors.iter().find(|f| ir::constant_int(**f).is_none())?;
                let initial = *bounds.get(3 + index)?;
                let layout = axis_layout(&ir::backward_slice(initial))?;
                let (dim, _) = layout
                    .scaled(BufferDims { rank, tiled: None })
                    .into_iter()
                    .find(|(_, s)| s.same(KernelValue::Scalar(stride)))?;
                (dim, c)
            }
        };
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
/// made its descriptor: `(dim, role, value, expected)` for each dimension's
/// shape and stride, the descriptor's dimensions the buffer's last ones
/// (nothing for a descriptor of more dimensions than the buffer). A
/// descriptor that a load reads through, or made at an offset into the
/// buffer (`K + off_h * stride_kh`, one head's columns or rows), views part
/// of it: its shape is at most the buffer's (a causal rank's keys, the
/// first N_CTX_KV rows); one a store writes through from the buffer's start
/// has exactly its shape. One of fewer dimensions made at the buffer's
/// address views the rows of its leading dimensions too (Triton's
/// tutorial's `[Z * H * N, D]`): its first extent is at most their
/// product.
fn descriptor_layout(op: Op, shape: &[i64]) -> Vec<(usize, ScalarRole, KernelValue, i64)> {
    if !ir::op_name(op).starts_with("tt.descriptor_") {
        return Vec::new();
    }
    let Some(maker) = descriptor_maker(op) else {
        return Vec::new();
    };
    let operands = ir::operands(maker);
    let rank = operands.len().saturating_sub(1) / 2;
    let Some(first) = shape.len().checked_sub(rank).filter(|_| rank > 0) else {
        return Vec::new();
    };
    let at_offset = ir::defining_op(operands[0]).is_some_and(|o| ir::op_name(o) == "tt.addptr");
    // A load may view fewer rows than the buffer has (bulk copies read
    // zeros past its shape, never past the buffer); a store through a
    // descriptor of the whole buffer must cover it, or rows the plan sends
    // would stay unwritten.
    let stores = ir::op_name(op) == "tt.descriptor_store";
    let extent = if stores && !at_offset {
        ScalarRole::Extent
    } else {
        ScalarRole::MaxExtent
    };
    let mut layout = Vec::new();
    for d in 0..rank {
        let dim = first + d;
        // (Suffixes and prefixes of a shape whose product fits an i64.)
        let value = KernelValue::Scalar(operands[1 + d]);
        if d == 0 && first > 0 && !at_offset {
            let rows = shape[..=dim].iter().product();
            let role = if stores {
                ScalarRole::Extent
            } else {
                ScalarRole::MaxExtent
            };
            layout.push((0, role, value, rows));
        } else {
            layout.push((dim, extent, value, shape[dim]));
        }
        let stride = shape[dim + 1..].iter().product();
        layout.push((
            dim,
            ScalarRole::Stride,
            KernelValue::Scalar(operands[1 + rank + d]),
            stride,
        ));
    }
    layout
}

/// The value tile index `t` counts its tiles of, as `cdiv(x, tile)`, with
/// the division: the only one counted in tiles of `tile` on the way to
/// `t`, or of several, the one whose tiles `t` walks (`walked_count`),
/// where the buffer has `rows` (or, for per-source tiles, one of the
/// `rows` given) along the dimension.
fn counted_extent(t: Value, tile: i64, rows: &[i64]) -> Option<(Value, Op)> {
    let counted = tile_counts(t, tile);
    match counted[..] {
        [only] => Some(only),
        [] => None,
        _ => {
            let values: Vec<Value> = counted.iter().map(|(x, _)| *x).collect();
            // (The kernel counts `cdiv(rows, tile)` tiles: a buffer of fewer
            // rows than a tile still holds one.)
            let tiles_of = |r: &i64| r.checked_add(tile - 1).and_then(|s| s.checked_div(tile));
            rows.iter()
                .filter_map(tiles_of)
                .find_map(|n| walked_count(t, &values, tile, n))
                .map(|i| counted[i])
        }
    }
}

/// Every value counted in tiles of `tile` on the way to `t`
/// (`cdiv(x, tile)`), with its division.
fn tile_counts(t: Value, tile: i64) -> Vec<(Value, Op)> {
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
    counted
}

/// What the offset before a pointer access's tile fixes, in a buffer of
/// three or more dimensions ([`leading_offset`]): each term's argument
/// factor a multiple of the sliced dimension's stride; a located error
/// for a term that is not whole slices.
fn fix_leading_offset(
    fixed: &mut FixedArgs,
    buffer: &BufferDecl,
    dims: BufferDims,
    op: Op,
    arg: usize,
) -> Result<(), PassFailed> {
    let (Some(dim), Some(argument)) = (sliced_dim(dims), kernel_arg(fixed.kernel, arg)) else {
        return Ok(());
    };
    let length = row_major_stride(buffer, dim)?;
    let Some(terms) = leading_terms(op, argument, length) else {
        return Ok(());
    };
    for term in terms {
        match term {
            OffsetTerm::Shown => {}
            OffsetTerm::Times(factor, multiple) => {
                let value = KernelValue::Scalar(factor);
                fixed.require(buffer, op, value, ScalarRole::Multiple, dim, multiple)?;
            }
            OffsetTerm::Unknown => {
                let message = format!(
                    "{}: @{} is {} (row-major) and the kernel's tiles walk its dimension {}, but this {} of argument {arg} offsets its tile by a term that is neither a multiple of {length} (whole slices along dimension {dim}) nor a kernel argument times something: its rows would not be those of the chunk it waits for",
                    fixed.pass,
                    buffer.name,
                    shape_text(&buffer.shape),
                    dim + 1,
                    ir::op_name(op)
                );
                return Err(super::refuse_access(buffer.op, op, message));
            }
        }
    }
    // Whole slices: the last must start within the buffer.
    let elements = checked::product(&buffer.shape, buffer.op, "the buffer's elements")?;
    if let Some(value) = offset_expr(op, argument) {
        fixed.bound(IndexBound {
            buffer: buffer.name.clone(),
            what: format!("the element its slice of dimension {dim} starts at"),
            value,
            lowest: 0,
            highest: elements - length,
        });
    }
    Ok(())
}

fn shape_text(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    dims.join("x")
}

/// The stride of dimension `dim` of the plan's row-major `buffer`: the
/// product of the later dimensions.
fn row_major_stride(buffer: &BufferDecl, dim: usize) -> Result<i64, PassFailed> {
    let later = buffer.shape.get(dim + 1..).unwrap_or_default();
    checked::product(later, buffer.op, "a stride of the buffer")
}

/// The strides a 2-D pointer access multiplies its axes' offsets by, with
/// the buffer dimension each walks ([`axis_layout`]; a buffer's last two):
/// for the plan's row-major buffer, the row stride is the product of the
/// later dimensions and the column stride 1.
fn row_major_strides(op: Op, dims: BufferDims) -> Vec<(usize, KernelValue)> {
    if dims.rank < 2 || ir::op_name(op).starts_with("tt.descriptor_") {
        return Vec::new(); // A descriptor carries its own strides.
    }
    let Some(ptr) = ir::operands(op).first().copied() else {
        return Vec::new();
    };
    axis_layout(&ir::backward_slice(ptr)).map_or_else(Vec::new, |layout| layout.scaled(dims))
}
