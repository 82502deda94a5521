//! `chunk-bind-kernel`: give the plan's kernel the fused kernel's ABI.
//!
//! Appends the arguments listed in [`crate::abi`] to the `tt.func` named by
//! each plan's `kernel(@...)` (function type, entry block arguments named
//! after them, `arg_attrs` extended), and records where they start in the
//! discardable attribute `synco.abi_first_arg`; then one pointer argument
//! per plan buffer without `bind(i)` (listed in `synco.abi_buffers`).
//! Kernel-level chunk ops
//! (`chunk.rank`, `chunk.wait`, ...) are lowered against these arguments.
//!
//! Options: none.
//! Preconditions: each plan names a `tt.func` of the module, not yet bound.
//! Postconditions: the kernel takes the ABI arguments; the rest of the IR is
//! unchanged.

use crate::{
    abi::{ARGS, FIRST_ARG_ATTR, append_args, append_buffer_args},
    plan::{Plan, fail, plans},
};
use synco_chunk::{PassDescriptor, PassFailed};
use synco_ir::{self as ir, Op};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-bind-kernel",
    description: "Append the fused-kernel ABI arguments (rank, heap bases, flags, epoch, errors) to the plan's kernel",
    anchor: "builtin.module",
    options: &[],
    run,
};

fn run(module: melior::ir::operation::OperationRef, _options: &[&str]) -> Result<(), PassFailed> {
    for plan in plans(module.to_raw()) {
        let kernel = plan.kernel_in(module.to_raw())?;
        if ir::attr(kernel, FIRST_ARG_ATTR).is_some() {
            continue; // Already bound (two plans, one kernel).
        }
        bind(kernel, &plan)?;
    }
    Ok(())
}

pub fn bind(kernel: Op, plan: &Plan) -> Result<(), PassFailed> {
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
    append_args(kernel, &args, "{}", PASS.argument)?;
    let unbound: Vec<(&str, &str)> = plan
        .buffers
        .iter()
        .filter(|b| b.arg.is_none())
        .map(|b| (b.name.as_str(), b.element.as_str()))
        .collect();
    append_buffer_args(kernel, &unbound, PASS.argument)?;
    ir::set_attr(
        kernel,
        FIRST_ARG_ATTR,
        ir::int_attr_of(ir::i32_type(ctx), first as i64),
    );
    Ok(())
}
