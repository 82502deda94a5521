//! `chunk-verify-plan`: check each plan against the kernel it fuses into.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkVerifyPlan` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::plan::{TileMap, fail, plans};
use melior::ir::operation::OperationRef;
use synco_chunk::PassFailed;
use synco_chunk::passes::{ChunkVerifyPlanOptions, RustPass};
use synco_ir as ir;

/// The body of `chunk-verify-plan`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkVerifyPlanOptions;

    fn run(module: OperationRef, options: &ChunkVerifyPlanOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

fn run(module: OperationRef, _options: &ChunkVerifyPlanOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    for plan in plans(module) {
        let kernel = plan.kernel_in(module)?;
        let kernel_name = ir::str_attr(kernel, "sym_name").unwrap_or_default();
        let inputs = ir::attr(kernel, "function_type")
            .and_then(ir::type_attr_value)
            .map(ir::function_inputs)
            .unwrap_or_default();
        let mut bound: Vec<(usize, &str)> = Vec::new();
        for buffer in &plan.buffers {
            let Some(arg) = buffer.arg else { continue };
            let Some(ty) = inputs.get(arg) else {
                return Err(fail(
                    buffer.op,
                    format!(
                        "buffer @{} binds argument {arg} of @{kernel_name}, which has {} arguments",
                        buffer.name,
                        inputs.len()
                    ),
                ));
            };
            let expected = format!("!tt.ptr<{}>", buffer.element);
            let actual = ir::print_type(*ty);
            if let Some((block, element)) = synco_manifest::descriptor_type(&actual) {
                check_descriptor_binding(buffer, &block, &element, &kernel_name)?;
            } else if actual != expected {
                return Err(fail(
                    buffer.op,
                    format!(
                        "buffer @{} of {} binds argument {arg} of @{kernel_name}, which is {actual}, not {expected}",
                        buffer.name, buffer.element
                    ),
                ));
            }
            if let Some((_, other)) = bound.iter().find(|(a, _)| *a == arg) {
                return Err(fail(
                    buffer.op,
                    format!(
                        "buffers @{other} and @{} both bind argument {arg} of @{kernel_name}",
                        buffer.name
                    ),
                ));
            }
            bound.push((arg, &buffer.name));
        }
        let consumed = plan
            .consumes()
            .into_iter()
            .map(|c| (TileMap::from(c), "consumed"));
        let produced = plan
            .produces()
            .into_iter()
            .map(|p| (TileMap::from(p), "produced"));
        for (tiles, verb) in consumed.chain(produced) {
            {
                let name = tiles.buffer().unwrap_or_default();
                if plan.buffer(&name).is_some_and(|b| b.arg.is_none()) {
                    return Err(fail(
                        tiles,
                        format!(
                            "@{name} is {verb} by kernel tiles but not bound to an argument of @{kernel_name}: add bind(i)"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A buffer bound to a host tensor descriptor (`!tt.tensordesc<tensor<64x
/// 128xbf16>>`): the runtime makes the descriptor over the buffer, its
/// dimensions the buffer's last ones and its first running over the
/// leading ones too (`[Z * H * N, D]` of a `[Z * H, N, D]` buffer), so the
/// element types must agree, the descriptor has at most the buffer's
/// dimensions and each block fits in what it views. (A produced buffer's
/// store through it is rewritten as a store through pointers by the passes
/// that fuse the producer: `tiles::tile_store`.)
fn check_descriptor_binding(
    buffer: &crate::plan::BufferDecl,
    block: &[u32],
    element: &str,
    kernel_name: &str,
) -> Result<(), PassFailed> {
    let name = &buffer.name;
    let arg = buffer.arg.unwrap_or_default();
    let refuse = |why: String| {
        Err(fail(
            buffer.op,
            format!(
                "buffer @{name} binds argument {arg} of @{kernel_name}, a host tensor descriptor of {}x{element} blocks, but {why}",
                join_dims(block)
            ),
        ))
    };
    if element != buffer.element {
        return refuse(format!("the buffer holds {}", buffer.element));
    }
    let Some(first) = buffer.shape.len().checked_sub(block.len()) else {
        return refuse(format!(
            "the buffer has {} dimensions: a descriptor views at most as many",
            buffer.shape.len()
        ));
    };
    let viewed: Option<Vec<i64>> = (0..block.len())
        .map(|d| match d {
            0 => buffer.shape[..=first]
                .iter()
                .try_fold(1i64, |n, &e| n.checked_mul(e)),
            _ => Some(buffer.shape[first + d]),
        })
        .collect();
    let Some(viewed) = viewed else {
        return refuse("the buffer's rows overflow an i64".into());
    };
    if block.iter().zip(&viewed).any(|(b, v)| i64::from(*b) > *v) {
        return refuse(format!(
            "it views the buffer as {}: a block does not fit",
            join_dims(&viewed)
        ));
    }
    Ok(())
}

fn join_dims<T: ToString>(dims: &[T]) -> String {
    dims.iter().map(T::to_string).collect::<Vec<_>>().join("x")
}
