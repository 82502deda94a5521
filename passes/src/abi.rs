//! The fused kernel's ABI: the arguments `chunk-bind-kernel` appends to the
//! user's kernel, in this order, after the user's own arguments (and before
//! the two scratch pointers Triton appends itself):
//!
//! | name               | type            | what                                              |
//! |--------------------|-----------------|---------------------------------------------------|
//! | `synco_rank`       | `i32`           | this launch's rank                                |
//! | `synco_world_size` | `i32`           | number of ranks                                   |
//! | `synco_heap_bases` | `!tt.ptr<i64>`  | base address of every rank's symmetric heap (`W`) |
//! | `synco_flags`      | `!tt.ptr<i32>`  | this rank's chunk flags, one per chunk            |
//! | `synco_epoch`      | `i32`           | this launch's epoch (flags are ready at `>=`)     |
//! | `synco_errors`     | `!tt.ptr<i32>`  | `[status, rank, chunk, epoch]`, status 0 = fine   |
//!
//! Then one `!tt.ptr<T>` argument `synco_buffer_<name>` for each buffer of
//! the plan that is not bound to one of the user's pointer arguments (for
//! example the output of a reduce-scatter fused into a GEMM that only
//! writes its partial, or a buffer the kernel reads through a host tensor
//! descriptor, which carries no address the kernel can compute with), in
//! plan order; their names are listed in the discardable attribute
//! `chunk.abi_buffers`.
//!
//! Symmetric buffers live at the same offset in every rank's heap, so a
//! peer's copy of address `p` is `p - heap_bases[rank] + heap_bases[peer]`.
//! The runtime (`synco-runtime`) fills these from the launch manifest, where
//! they appear with role `synco`.

use crate::plan::fail;
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value};

pub const ARGS: [(&str, &str); 6] = [
    ("synco_rank", "i32"),
    ("synco_world_size", "i32"),
    ("synco_heap_bases", "!tt.ptr<i64>"),
    ("synco_flags", "!tt.ptr<i32>"),
    ("synco_epoch", "i32"),
    ("synco_errors", "!tt.ptr<i32>"),
];

/// Discardable attribute on the `tt.func`: index of its first ABI argument.
pub const FIRST_ARG_ATTR: &str = "chunk.abi_first_arg";

/// Discardable attribute on the `tt.func`: the plan buffers passed as
/// `synco_buffer_<name>` arguments, in order, after the fixed ones.
pub const BUFFERS_ATTR: &str = "chunk.abi_buffers";

/// Prefix of the argument that carries an unbound plan buffer.
pub const BUFFER_ARG_PREFIX: &str = "synco_buffer_";

/// The `synco_buffer_<name>` argument of a bound kernel: the buffer
/// arguments follow the fixed ones in [`BUFFERS_ATTR`]'s order (a
/// [`STEP_STATE_ARG`] among them aside).
pub fn buffer_arg(func: Op, name: &str) -> Option<Value> {
    let index = ir::attr(func, BUFFERS_ATTR)
        .and_then(ir::array_value)?
        .into_iter()
        .position(|n| ir::str_value(n).as_deref() == Some(name))?;
    abi_tail(func)?
        .into_iter()
        .filter(|arg| !is_named(*arg, STEP_STATE_ARG))
        .nth(index)
}

/// The ABI argument of `func` named `name` ([`STEP_STATE_ARG`]), found by
/// the name its block argument carries.
pub fn named_arg(func: Op, name: &str) -> Option<Value> {
    abi_tail(func)?.into_iter().find(|arg| is_named(*arg, name))
}

/// The arguments of `func` after its fixed ABI arguments.
fn abi_tail(func: Op) -> Option<Vec<Value>> {
    let first = ir::int_attr(func, FIRST_ARG_ATTR)? as usize;
    let entry = ir::blocks(*ir::regions(func).first()?).first().copied()?;
    Some(
        ir::block_args(entry)
            .into_iter()
            .skip(first + ARGS.len())
            .collect(),
    )
}

fn is_named(arg: Value, name: &str) -> bool {
    synco_ir::loc::value_variable_name(arg).as_deref() == Some(name)
}

/// The argument `chunk-reorder-tiles` appends to a kernel that runs once
/// per ring step (`!tt.ptr<i8>`): each program's softmax state, or
/// whatever its loop carries, between the steps' launches.
pub const STEP_STATE_ARG: &str = "synco_step_state";

/// The pointer through which the fused kernel's own code (copy programs,
/// reductions) reaches plan buffer `buffer`: the argument it binds where
/// that is a pointer, else its `synco_buffer_<name>` argument.
pub fn buffer_pointer(kernel: Op, buffer: &crate::plan::BufferDecl) -> Option<Value> {
    bound_pointer(kernel, buffer.arg).or_else(|| buffer_arg(kernel, &buffer.name))
}

/// Kernel argument `arg` (a buffer's `bind(i)`) where it is a pointer the
/// kernel's code can address, not a host tensor descriptor.
pub fn bound_pointer(kernel: Op, arg: Option<usize>) -> Option<Value> {
    arg.and_then(|arg| crate::tiles::kernel_arg(kernel, arg))
        .filter(|value| !is_descriptor(*value))
}

/// Whether `value` is a host tensor descriptor (`!tt.tensordesc<...>`).
fn is_descriptor(value: Value) -> bool {
    synco_manifest::descriptor_type(&ir::print_type(ir::type_of(value))).is_some()
}

/// Appends arguments `(name, type)` to the `tt.func` `kernel`: its
/// function type, its entry block (arguments named after them) and its
/// `arg_attrs` (`arg_attr`, a dictionary attribute, for each). Errors name
/// `pass`.
pub fn append_args(
    kernel: Op,
    args: &[(String, String)],
    arg_attr: &str,
    pass: &str,
) -> Result<(), PassFailed> {
    let ctx = ir::context_of(kernel);
    let Some(fty) = ir::attr(kernel, "function_type").and_then(ir::type_attr_value) else {
        return Err(fail(
            kernel,
            format!("{pass}: the tt.func has no function_type"),
        ));
    };
    let Some(entry) = ir::regions(kernel)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
    else {
        return Err(fail(kernel, format!("{pass}: the kernel has no body")));
    };
    let mut inputs = ir::function_inputs(fty);
    let func_loc = ir::location_of(kernel);
    for (name, ty_text) in args {
        let Some(ty) = ir::parse_type(ctx, ty_text) else {
            return Err(fail(kernel, format!("{pass}: cannot build type {ty_text}")));
        };
        inputs.push(ty);
        ir::add_block_arg(entry, ty, ir::name_loc(ctx, name, func_loc));
    }
    let results = ir::function_results(fty);
    ir::set_attr(
        kernel,
        "function_type",
        ir::type_attr(ir::function_type(ctx, &inputs, &results)),
    );
    if let Some(arg_attrs) = ir::attr(kernel, "arg_attrs").and_then(ir::array_value) {
        let mut text: Vec<String> = arg_attrs.into_iter().map(ir::print_attr).collect();
        text.extend(args.iter().map(|_| arg_attr.to_string()));
        if let Some(a) = ir::parse_attr(ctx, &format!("[{}]", text.join(", "))) {
            ir::set_attr(kernel, "arg_attrs", a);
        }
    }
    Ok(())
}

/// Appends a `synco_buffer_<name>` argument (`!tt.ptr<element>`) for each
/// `(name, element)` of `buffers` to `kernel`, and their names to
/// [`BUFFERS_ATTR`]. Errors name `pass`.
pub fn append_buffer_args(
    kernel: Op,
    buffers: &[(&str, &str)],
    pass: &str,
) -> Result<(), PassFailed> {
    if buffers.is_empty() {
        return Ok(());
    }
    let args: Vec<(String, String)> = buffers
        .iter()
        .map(|(name, element)| {
            (
                format!("{BUFFER_ARG_PREFIX}{name}"),
                format!("!tt.ptr<{element}>"),
            )
        })
        .collect();
    // The runtime places every buffer at a multiple of 512 bytes.
    append_args(kernel, &args, "{tt.divisibility = 16 : i32}", pass)?;
    let names: Vec<String> = ir::attr(kernel, BUFFERS_ATTR)
        .and_then(ir::array_value)
        .unwrap_or_default()
        .into_iter()
        .map(ir::print_attr)
        .chain(buffers.iter().map(|(name, _)| format!("\"{name}\"")))
        .collect();
    let ctx = ir::context_of(kernel);
    let Some(list) = ir::parse_attr(ctx, &format!("[{}]", names.join(", "))) else {
        return Err(fail(
            kernel,
            format!("{pass}: cannot list the ABI buffers {names:?}"),
        ));
    };
    ir::set_attr(kernel, BUFFERS_ATTR, list);
    Ok(())
}

/// The ABI arguments of a bound kernel.
#[derive(Clone, Copy)]
pub struct AbiArgs {
    pub rank: Value,
    pub world_size: Value,
    pub heap_bases: Value,
    pub flags: Value,
    pub epoch: Value,
    pub errors: Value,
}

/// The ABI arguments of `func`, if `chunk-bind-kernel` bound it.
pub fn abi_args(func: Op) -> Option<AbiArgs> {
    let first = ir::int_attr(func, FIRST_ARG_ATTR)? as usize;
    let entry = ir::blocks(*ir::regions(func).first()?).first().copied()?;
    let args = ir::block_args(entry);
    let a = |i: usize| args.get(first + i).copied();
    Some(AbiArgs {
        rank: a(0)?,
        world_size: a(1)?,
        heap_bases: a(2)?,
        flags: a(3)?,
        epoch: a(4)?,
        errors: a(5)?,
    })
}

/// The `tt.func` enclosing `op`.
pub fn enclosing_kernel(op: Op) -> Option<Op> {
    ir::ancestors(op).find(|p| ir::op_name(*p) == "tt.func")
}
