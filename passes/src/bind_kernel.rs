//! `chunk-bind-kernel`: give the plan's kernel the fused kernel's ABI.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkBindKernel` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    abi::{ARGS, FIRST_ARG_ATTR, append_args, append_buffer_args},
    plan::{Plan, fail, plans},
};
use melior::ir::operation::OperationRef;
use synco_chunk::PassFailed;
use synco_chunk::passes::{ChunkBindKernelOptions, PassOptions, RustPass};
use synco_ir::{self as ir, Op};

/// The body of `chunk-bind-kernel`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkBindKernelOptions;

    fn run(module: OperationRef, options: &ChunkBindKernelOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkBindKernelOptions::ARGUMENT;

fn run(module: OperationRef, _options: &ChunkBindKernelOptions) -> Result<(), PassFailed> {
    let all = plans(module.to_raw());
    if all.is_empty() {
        // A fusing pipeline on a kernel alone would hand back the kernel
        // unfused, as if it were.
        return Err(fail(
            module.to_raw(),
            format!(
                "{NAME}: the module has no chunk.plan, so there is nothing to fuse into its kernel (give `synco compile --plan FILE`, or leave the fusing passes out)"
            ),
        ));
    }
    for plan in all {
        let kernel = plan.kernel_in(module.to_raw())?;
        if ir::attr(kernel, FIRST_ARG_ATTR).is_some() {
            continue; // Already bound (two plans, one kernel).
        }
        bind(kernel, &plan)?;
    }
    Ok(())
}

pub fn bind(kernel: Op, plan: &Plan) -> Result<(), PassFailed> {
    check_i32_offsets(plan)?;
    read_loop_variables(kernel, plan);
    let indices = crate::kernel_access::check_plan_fits_kernel(plan, kernel, NAME)?;
    let (fixed, bounds) = crate::kernel_access::fixed_args(plan, kernel, &indices, NAME)?;
    crate::plan::records::record_scalar_args(plan, &fixed)?;
    crate::plan::records::record_index_bounds(plan, &bounds)?;
    let ctx = ir::context_of(kernel);
    let Some(fty) = ir::attr(kernel, "function_type").and_then(ir::type_attr_value) else {
        return Err(fail(
            kernel,
            "chunk-bind-kernel: the tt.func has no function_type",
        ));
    };
    let first = ir::function_inputs(fty).len();
    let args: Vec<(String, String)> = ARGS
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    append_args(kernel, &args, "{}", NAME)?;
    let named = plan.named_buffers();
    let unbound: Vec<(&str, &str)> = plan
        .buffers
        .iter()
        .filter(|b| {
            let through_descriptor =
                b.arg.is_some() && crate::abi::bound_pointer(kernel, b.arg).is_none();
            through_descriptor
                || (b.arg.is_none() && (b.staging || b.trace || named.contains(&b.name)))
        })
        .map(|b| (b.name.as_str(), b.element.as_str()))
        .collect();
    append_buffer_args(kernel, &unbound, NAME)?;
    ir::set_attr(
        kernel,
        FIRST_ARG_ATTR,
        ir::int_attr_of(ir::i32_type(ctx), first as i64),
    );
    Ok(())
}

/// Makes the kernel's loops address what they walk by their variables
/// (see `passes/src/kernel_loops.rs`): offsets carried in step with a
/// loop, and, in the loops that walk a consumed argument no program tile
/// indexes, pointers moved by the step times a stride.
fn read_loop_variables(kernel: Op, plan: &Plan) {
    crate::kernel_loops::carried_offsets_to_variable(kernel);
    for consume in plan.consumes() {
        let (Some(name), Some(tile)) = (consume.buffer(), consume.tile()) else {
            continue;
        };
        let Some(arg) = plan.buffer(&name).and_then(|b| b.arg) else {
            continue;
        };
        if consume.index().is_some()
            || consume.source().is_some()
            || crate::tiles::tiled_by_program(kernel, arg, tile)
        {
            continue;
        }
        if let Some(value) = crate::tiles::kernel_arg(kernel, arg) {
            crate::kernel_loops::carried_pointers_to_variable(kernel, value);
        }
    }
}

/// Refuses buffers whose elements 32-bit offsets cannot all reach: the
/// fused code indexes every buffer of the plan with `i32` element offsets
/// and counts, as Triton's kernels index their tensors (a larger count
/// would be truncated into a wrong address or a zero divisor).
fn check_i32_offsets(plan: &Plan) -> Result<(), PassFailed> {
    for buffer in &plan.buffers {
        let elements = buffer
            .shape
            .iter()
            .try_fold(1i64, |n, d| n.checked_mul(*d))
            .unwrap_or(i64::MAX);
        if elements > i64::from(i32::MAX) {
            return Err(fail(
                buffer.op,
                format!(
                    "{NAME}: @{} has {elements} elements, more than the fused kernel's 32-bit element offsets reach (at most {}): split it into buffers of at most that many",
                    buffer.name,
                    i32::MAX
                ),
            ));
        }
    }
    Ok(())
}
