//! The kernel loop of a consumer whose buffer a ring keeps in two slots
//! (`chunk.all_gather ... slots(2)`, see [`crate::plan::slots`]): the
//! kernel runs once per ring step, and each launch walks one block.
//!
//! Launch `s` (`s = (epoch - 1) mod W`: a call of the operation is `W`
//! launches, epochs counting them) clips the loop to block
//! `c = (rank - s) mod W` and reads it where it lies: the rank's own block
//! at step 0, then slot `s mod 2` (the buffer's argument is moved by
//! `(place - c)` blocks). What the loop carries (an attention's running
//! maximum, sum and accumulator) comes in from the program's state at
//! steps after the first, and goes back to it at steps before the last;
//! only the last step runs what follows the loop (the output's store).

use crate::{
    abi::{AbiArgs, STEP_STATE_ARG, append_args, bound_pointer, named_arg},
    plan::{
        BufferDecl, Plan, TileMap, fail, internal, loc,
        slots::{RING_STEP_ATTR, STEP_STATE_BYTES_ATTR, SlotRing},
    },
    tiles::{CHUNK_INDEX_ATTR, CHUNK_LOOP_ATTR, TileLoop},
};
use synco_chunk::{Diagnostic, PassFailed};
use synco_ir::{self as ir, Builder, Op, Type, Value, builder::Cmp};

/// Where each value the loop carries is kept in a program's state: byte
/// offsets, each a multiple of 16.
struct StateLayout {
    offsets: Vec<i64>,
    bytes: i64,
}

/// Runs `tile_loop` of `consume` (of the slotted buffer `buffer`) one ring
/// step per launch (see the module docs); `loops`: how many kernel loops
/// walk the buffer. A second buffer walked by the same loop (values after
/// keys) only has its argument moved.
pub(super) fn step_tile_loop(
    kernel: Op,
    abi: AbiArgs,
    plan: &Plan,
    consume: TileMap,
    buffer: &BufferDecl,
    tile_loop: TileLoop,
    loops: usize,
) -> Result<(), PassFailed> {
    let (name, subject, l) = (&buffer.name, tile_loop.subject(), tile_loop.op);
    let ring = SlotRing::new(&buffer.shape, plan.world_size)
        .ok_or_else(|| internal(consume, "a slotted buffer that does not split in blocks"))?;
    let pointer = slotted_pointer(kernel, consume, buffer, tile_loop, loops)?;
    let (step, block) = match marked(kernel, RING_STEP_ATTR).zip(marked(kernel, CHUNK_INDEX_ATTR)) {
        Some(built) => built,
        None => {
            let step = build_step(kernel, abi, ring)?;
            (step, build_block(kernel, abi, step, ring)?)
        }
    };
    move_to_slots(kernel, pointer, step, block, ring, buffer)?;
    if ir::attr(l, CHUNK_LOOP_ATTR).is_some() {
        same_split(consume, tile_loop, ring, name)?;
        remark(
            consume,
            format!("{subject} reads @{name} in the same ring steps, from its own slots"),
        );
        return Ok(());
    }
    check_no_effects_before(kernel, l, consume, name)?;
    clip_to_block(tile_loop, block, ring);
    let state = state_layout(l, consume, &subject)?;
    carry_between_steps(kernel, l, step, plan.world_size, &state)?;
    mark_stepped(kernel, tile_loop, defined_by(block, kernel)?, ring, &state);
    remark(
        consume,
        format!(
            "{subject} reads @{name} one ring step per launch ({} launches per call): block (r + s) mod {} at step s, this rank's own at step 0, then slot s mod 2; what it carries waits between the launches in {} bytes per program",
            ring.world, ring.world, state.bytes
        ),
    );
    Ok(())
}

fn remark(consume: TileMap, text: String) {
    Diagnostic::remark(loc(consume), text).emit();
}

/// The pointer argument of `buffer` once the kernel checks out for ring
/// steps: one loop walks the buffer, in the kernel's body (each launch runs
/// it over one block), through a pointer (moved per step), not a tensor
/// descriptor.
fn slotted_pointer(
    kernel: Op,
    consume: TileMap,
    buffer: &BufferDecl,
    tile_loop: TileLoop,
    loops: usize,
) -> Result<Value, PassFailed> {
    let (name, subject) = (&buffer.name, tile_loop.subject());
    let refuse = |why: String| {
        Err(fail(
            consume,
            format!("@{name} is kept in ring slots (slots(2)){why}"),
        ))
    };
    if loops != 1 {
        return refuse(format!(
            ", so the kernel runs once per ring step and must walk it in one loop; {loops} loops walk it"
        ));
    }
    if !ir::parent_op(tile_loop.op).is_some_and(|p| ir::same_op(p, kernel)) {
        return refuse(format!(
            ": {subject} must sit in the kernel's body, not in another loop or a branch, since each launch runs it over one ring step's block"
        ));
    }
    match bound_pointer(kernel, buffer.arg) {
        Some(pointer) => Ok(pointer),
        None => refuse(
            ", which moves the address of its rows per step: it must be bound to a pointer argument, not a tensor descriptor"
                .to_string(),
        ),
    }
}

/// Marks the stepped loop as split (its chunk loop, rows and count; its
/// block as the chunk index, for `chunk-insert-waits`) and records the
/// state's bytes on the kernel.
fn mark_stepped(kernel: Op, tile_loop: TileLoop, block: Op, ring: SlotRing, state: &StateLayout) {
    let (l, key) = (tile_loop.op, tile_loop.key());
    let ctx = ir::context_of(l);
    let i64t = ir::i64_type(ctx);
    ir::set_attr(l, CHUNK_LOOP_ATTR, ir::string_attr(ctx, &key));
    let rows = ir::int_attr_of(i64t, ring.block_rows);
    ir::set_attr(l, super::kernel_loop::CHUNK_ROWS_ATTR, rows);
    let chunks = ir::int_attr_of(i64t, ring.world);
    ir::set_attr(l, super::kernel_loop::CHUNKS_ATTR, chunks);
    ir::set_attr(block, CHUNK_INDEX_ATTR, ir::string_attr(ctx, &key));
    let bytes = ir::int_attr_of(i64t, state.bytes);
    ir::set_attr(kernel, STEP_STATE_BYTES_ATTR, bytes);
}

/// The op defining `value`, one this pass built in `kernel`.
fn defined_by(value: Value, kernel: Op) -> Result<Op, PassFailed> {
    ir::defining_op(value)
        .ok_or_else(|| internal(kernel, "a value built for the ring steps is no op's result"))
}

/// The value an op of the kernel's body marked with `attr` defines: the
/// step ([`RING_STEP_ATTR`]) and block ([`CHUNK_INDEX_ATTR`]) built for an
/// earlier buffer of the loop.
fn marked(kernel: Op, attr: &str) -> Option<Value> {
    let entry = entry_block(kernel)?;
    ir::ops_in(entry)
        .into_iter()
        .find(|op| ir::attr(*op, attr).is_some())
        .map(|op| ir::result(op, 0))
}

fn entry_block(kernel: Op) -> Option<ir::Block> {
    ir::blocks(*ir::regions(kernel).first()?).first().copied()
}

/// A builder at the top of the kernel's body.
fn at_top(kernel: Op) -> Result<Builder, PassFailed> {
    let first = entry_block(kernel)
        .and_then(|entry| ir::ops_in(entry).first().copied())
        .ok_or_else(|| internal(kernel, "the kernel's body is empty"))?;
    Ok(Builder::before(first).with_loc(ir::location_of(kernel)))
}

/// `s = (epoch - 1) mod W`, at the top of the kernel, marked.
fn build_step(kernel: Op, abi: AbiArgs, ring: SlotRing) -> Result<Value, PassFailed> {
    let b = at_top(kernel)?;
    let step = ring.step_value(&b, abi.epoch);
    let op = defined_by(step, kernel)?;
    ir::set_attr(op, RING_STEP_ATTR, ir::unit_attr(b.ctx));
    Ok(step)
}

/// The block read at `step` ([`SlotRing::block_at`]), right after the step.
fn build_block(kernel: Op, abi: AbiArgs, step: Value, ring: SlotRing) -> Result<Value, PassFailed> {
    let after = ir::next_op(defined_by(step, kernel)?)
        .ok_or_else(|| internal(kernel, "no op after the step"))?;
    let b = Builder::before(after).with_loc(ir::location_of(kernel));
    Ok(ring.block_at_value(&b, abi.rank, step))
}

/// Moves the kernel's `pointer` (of `buffer`) so that block `block`'s rows
/// land in the physical block of `step`: by `(place - block)` blocks.
fn move_to_slots(
    kernel: Op,
    pointer: Value,
    step: Value,
    block: Value,
    ring: SlotRing,
    buffer: &BufferDecl,
) -> Result<(), PassFailed> {
    let row_elems: i64 = buffer.shape.iter().skip(1).product();
    let block_elems = ring.block_rows.checked_mul(row_elems).ok_or_else(|| {
        fail(
            buffer.op,
            format!("@{}'s blocks hold more than 2^63 elements", buffer.name),
        )
    })?;
    let after = ir::next_op(defined_by(block, kernel)?)
        .ok_or_else(|| internal(kernel, "no op after the block"))?;
    let b = Builder::before(after).with_loc(ir::location_of(kernel));
    let place = SlotRing::physical_block_value(&b, step);
    let blocks = b.extsi_i64(b.subi(place, block));
    let moved = b.addptr(pointer, b.muli(blocks, b.const_i64(block_elems)));
    ir::replace_uses_except(pointer, moved, &[defined_by(moved, kernel)?]);
    Ok(())
}

/// Refuses a second buffer walked by `tile_loop` that is split otherwise.
fn same_split(
    consume: TileMap,
    tile_loop: TileLoop,
    ring: SlotRing,
    name: &str,
) -> Result<(), PassFailed> {
    let split = (
        ir::int_attr(tile_loop.op, super::kernel_loop::CHUNK_ROWS_ATTR),
        ir::int_attr(tile_loop.op, super::kernel_loop::CHUNKS_ATTR),
    );
    if split == (Some(ring.block_rows), Some(ring.world)) {
        return Ok(());
    }
    Err(fail(
        consume,
        format!(
            "@{name} is kept in ring slots in blocks of {} rows, but {} already walks another buffer in {} chunks of {} rows: buffers read in one loop must be chunked alike",
            ring.block_rows,
            tile_loop.subject(),
            split.1.unwrap_or(0),
            split.0.unwrap_or(0)
        ),
    ))
}

/// Refuses stores and atomics ahead of the loop: every launch runs them.
fn check_no_effects_before(
    kernel: Op,
    l: Op,
    consume: TileMap,
    name: &str,
) -> Result<(), PassFailed> {
    let entry = entry_block(kernel).ok_or_else(|| internal(kernel, "the kernel has no body"))?;
    for op in ir::ops_in(entry) {
        if ir::same_op(op, l) {
            return Ok(());
        }
        let writes = ir::walk(op).into_iter().find(|o| {
            matches!(
                ir::op_name(*o).as_str(),
                "tt.store" | "tt.atomic_rmw" | "tt.atomic_cas" | "tt.descriptor_store"
            )
        });
        if let Some(write) = writes {
            return Err(fail(
                consume,
                format!(
                    "@{name} is kept in ring slots (slots(2)), so the kernel runs once per ring step; its {} before the loop would run at every step",
                    ir::op_name(write)
                ),
            ));
        }
    }
    Ok(())
}

/// Clips the loop to `block`'s rows: `[max(lo, c * R), min(hi, (c + 1) * R))`
/// (the rows hidden from LLVM, as in a split loop that unrolls).
fn clip_to_block(tile_loop: TileLoop, block: Value, ring: SlotRing) {
    let l = tile_loop.op;
    let operands = ir::operands(l);
    let (lower, upper) = (operands[0], operands[1]);
    let b = Builder::before(l).with_loc(ir::location_of(l));
    let rows = b.opaque(b.constant(ir::type_of(lower), ring.block_rows));
    let first = b.muli(block, rows);
    let end = b.addi(first, rows);
    let start = if ir::constant_int(lower) == Some(0) {
        first
    } else {
        b.maxsi(lower, first)
    };
    ir::set_operand(l, 0, start);
    ir::set_operand(l, 1, b.minsi(upper, end));
}

/// Bytes of one element of `ty` (a number type, a flag among them), if it
/// is one.
fn element_bytes(ty: Type) -> Option<i64> {
    match ir::print_type(ty).as_str() {
        "i1" => Some(1),
        number => crate::plan::element_bytes_of(number),
    }
}

/// Where `l`'s carried values go in a program's state; refuses values
/// that are not numbers (a pointer the loop advances has no place to
/// resume from in another launch).
fn state_layout(l: Op, consume: TileMap, subject: &str) -> Result<StateLayout, PassFailed> {
    let mut offsets = Vec::new();
    let mut bytes = 0i64;
    for init in ir::operands(l).into_iter().skip(3) {
        let ty = ir::type_of(init);
        let element = ir::tensor_element(ty).unwrap_or(ty);
        let shape = ir::tensor_shape(ty).unwrap_or_default();
        let count: i64 = shape.iter().product();
        let size = element_bytes(element).and_then(|e| e.checked_mul(count));
        let (Some(size), true) = (size, shape.len() <= 2) else {
            return Err(fail(
                consume,
                format!(
                    "the kernel runs once per ring step, so what {subject} carries must wait between launches in memory; it carries a {}, which cannot (only numbers and tensors of numbers of one or two dimensions)",
                    ir::print_type(ty)
                ),
            ));
        };
        offsets.push(bytes);
        bytes = size
            .checked_add(15)
            .map(|s| s / 16 * 16)
            .and_then(|s| bytes.checked_add(s))
            .ok_or_else(|| fail(consume, "the loop's carried values exceed 2^63 bytes"))?;
    }
    Ok(StateLayout { offsets, bytes })
}

/// The loop's carried values: its initial values at step 0, the state
/// after; at the last step the code after the loop runs, before it the
/// values go back to the state. A step whose block the program's loop does
/// not read (a causal tile's blocks past its queries) leaves the state
/// alone, but at the last step.
fn carry_between_steps(
    kernel: Op,
    l: Op,
    step: Value,
    world: i64,
    state: &StateLayout,
) -> Result<(), PassFailed> {
    let base = state_base(kernel, l, state)?;
    let b = Builder::before(l).with_loc(ir::location_of(l));
    let bounds = ir::operands(l);
    let (reads, idle) = (
        b.cmpi(Cmp::Slt, bounds[0], bounds[1]),
        b.cmpi(Cmp::Sge, bounds[0], bounds[1]),
    );
    let first = b.cmpi(Cmp::Eq, step, b.const_i32(0));
    let before_last = b.cmpi(Cmp::Ne, step, b.const_i32(world - 1));
    let inits: Vec<Value> = ir::operands(l).into_iter().skip(3).collect();
    let types: Vec<Type> = inits.iter().map(|v| ir::type_of(*v)).collect();
    let restored = b.if_yield(
        b.ori(first, b.andi(idle, before_last)),
        &types,
        |_| inits.clone(),
        |inner| {
            types
                .iter()
                .zip(&state.offsets)
                .map(|(ty, offset)| load_state(&inner, base, *offset, *ty))
                .collect()
        },
    );
    for (i, value) in ir::results(restored).into_iter().enumerate() {
        ir::set_operand(l, 3 + i, value);
    }
    // What follows the loop (but the return) runs at the last step only.
    let entry = entry_block(kernel).ok_or_else(|| internal(kernel, "the kernel has no body"))?;
    let ops = ir::ops_in(entry);
    let at = ops.iter().position(|op| ir::same_op(*op, l));
    let (Some(at), Some(next)) = (at, ir::next_op(l)) else {
        return Err(internal(kernel, "the loop is not in the kernel's body"));
    };
    // (The body ends in its return, which stays.)
    let after: Vec<Op> = ops[at + 1..ops.len() - 1].to_vec();
    let b = Builder::before(next).with_loc(ir::location_of(l));
    let (_, then_block, else_block) = b.if_else(b.cmpi(Cmp::Eq, step, b.const_i32(world - 1)));
    let then_yield = ir::ops_in(then_block)[0];
    for op in after {
        ir::move_before(op, then_yield);
    }
    let keep = Builder::before(ir::ops_in(else_block)[0]).with_loc(ir::location_of(l));
    keep.if_then(reads, |inner| {
        for (value, offset) in ir::results(l).into_iter().zip(&state.offsets) {
            store_state(&inner, base, *offset, value);
        }
    });
    Ok(())
}

/// Where the program's state lies: the kernel's state argument (appended
/// once) at the program's index times the state's bytes.
fn state_base(kernel: Op, l: Op, state: &StateLayout) -> Result<Value, PassFailed> {
    if named_arg(kernel, STEP_STATE_ARG).is_none() {
        append_args(
            kernel,
            &[(STEP_STATE_ARG.to_string(), "!tt.ptr<i8>".to_string())],
            "{tt.divisibility = 16 : i32}",
            super::NAME,
        )?;
    }
    let state_arg = named_arg(kernel, STEP_STATE_ARG)
        .ok_or_else(|| internal(kernel, "no step state argument"))?;
    let b = Builder::before(l).with_loc(ir::location_of(l));
    Ok(b.addptr(
        state_arg,
        b.muli(program_index(&b, kernel), b.const_i64(state.bytes)),
    ))
}

/// The program's index in its grid, as i64: over axis 0 and the other
/// axes the kernel reads (its programs tell their work by no other; the
/// ldst backend's copy programs take axis 2 of a 2D grid, and the programs
/// in front of a 1D grid's).
fn program_index(b: &Builder, kernel: Op) -> Value {
    let i32t = ir::i32_type(b.ctx);
    let grid = |name: &str, axis: i64| {
        let axis = ir::int_attr_of(i32t, axis);
        b.extsi_i64(ir::result(b.op(name, &[], &[i32t], &[("axis", axis)]), 0))
    };
    let reads = |axis: i64| {
        ir::walk(kernel).into_iter().any(|op| {
            matches!(
                ir::op_name(op).as_str(),
                "tt.get_program_id" | "tt.get_num_programs"
            ) && ir::int_attr(op, "axis") == Some(axis)
        })
    };
    let (mut index, mut below) = (grid("tt.get_program_id", 0), grid("tt.get_num_programs", 0));
    for axis in [1, 2].into_iter().filter(|a| reads(*a)) {
        index = b.addi(index, b.muli(below, grid("tt.get_program_id", axis)));
        below = b.muli(below, grid("tt.get_num_programs", axis));
    }
    index
}

/// Pointers to a value of type `ty` at `offset` bytes of `base`: a tensor
/// of them (row-major) for a tensor.
fn state_pointers(b: &Builder, base: Value, offset: i64, ty: Type) -> Value {
    let element = ir::tensor_element(ty).unwrap_or(ty);
    let at = b.addptr(base, b.const_i64(offset));
    let ptr_ty = ir::parse_type(b.ctx, &format!("!tt.ptr<{}>", ir::print_type(element)))
        .expect("a pointer to a number type parses");
    let typed = ir::result(b.op("tt.bitcast", &[at], &[ptr_ty], &[]), 0);
    let Some(shape) = ir::tensor_shape(ty) else {
        return typed;
    };
    b.addptr(b.splat(typed, &shape), row_major_index(b, &shape))
}

/// The row-major index of each element of a tensor of one or two
/// dimensions (`shape`), the second built from two ranges, which keeps the
/// rows contiguous for Triton's vectorised loads and stores.
fn row_major_index(b: &Builder, shape: &[i64]) -> Value {
    let [rows, columns] = *shape else {
        return b.make_range(shape.iter().product());
    };
    let row = b.expand_dims(b.make_range(rows), 1);
    let row = b.muli(row, b.splat(b.const_i32(columns), &[rows, 1]));
    let column = b.expand_dims(b.make_range(columns), 0);
    b.addi(b.broadcast(row, shape), b.broadcast(column, shape))
}

fn load_state(b: &Builder, base: Value, offset: i64, ty: Type) -> Value {
    b.load(state_pointers(b, base, offset, ty), ty)
}

fn store_state(b: &Builder, base: Value, offset: i64, value: Value) {
    b.store(state_pointers(b, base, offset, ir::type_of(value)), value);
}
