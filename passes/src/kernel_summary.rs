//! `synco-kernel-summary`: describe each Triton kernel in a module.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `SyncoKernelSummary` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use melior::ir::{
    attribute::{IntegerAttribute, StringAttribute, TypeAttribute},
    operation::{OperationLike, OperationRef, WalkOrder, WalkResult},
    r#type::FunctionType,
};
use synco_chunk::passes::{RustPass, SyncoKernelSummaryOptions};
use synco_chunk::{Diagnostic, PassFailed};

/// The body of `synco-kernel-summary`.
pub struct Pass;

impl RustPass for Pass {
    type Options = SyncoKernelSummaryOptions;

    fn run(module: OperationRef, options: &SyncoKernelSummaryOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

/// What one kernel contains.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KernelSummary {
    pub name: String,
    pub num_arguments: usize,
    pub program_id_axes: Vec<i64>,
    pub loads: usize,
    pub stores: usize,
    pub dots: usize,
    pub loops: usize,
}

impl std::fmt::Display for KernelSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "kernel @{}: {} arguments, program ids on axes {:?}, {} tt.load, {} tt.store, {} tt.dot, {} loops",
            self.name,
            self.num_arguments,
            self.program_id_axes,
            self.loads,
            self.stores,
            self.dots,
            self.loops
        )
    }
}

/// Summarises the `tt.func` op `func`.
pub fn summarize(func: OperationRef) -> KernelSummary {
    let mut summary = KernelSummary {
        name: func
            .attribute("sym_name")
            .ok()
            .and_then(|a| StringAttribute::try_from(a).ok())
            .map(|s| s.value().to_string())
            .unwrap_or_default(),
        num_arguments: func
            .attribute("function_type")
            .ok()
            .and_then(|a| TypeAttribute::try_from(a).ok())
            .and_then(|t| FunctionType::try_from(t.value()).ok())
            .map(|t| t.input_count())
            .unwrap_or(0),
        ..Default::default()
    };
    func.walk(WalkOrder::PreOrder, |op| {
        match op.name().as_string_ref().as_str().unwrap_or("") {
            "tt.get_program_id" => {
                let axis = op
                    .attribute("axis")
                    .ok()
                    .and_then(|a| IntegerAttribute::try_from(a).ok())
                    .map_or(-1, |a| a.value());
                if !summary.program_id_axes.contains(&axis) {
                    summary.program_id_axes.push(axis);
                }
            }
            "tt.load" | "tt.descriptor_load" => summary.loads += 1,
            "tt.store" | "tt.descriptor_store" => summary.stores += 1,
            "tt.dot" | "ttng.warp_group_dot" => summary.dots += 1,
            "scf.for" | "scf.while" => summary.loops += 1,
            _ => {}
        }
        WalkResult::Advance
    });
    summary.program_id_axes.sort_unstable();
    summary
}

fn run(module: OperationRef, _options: &SyncoKernelSummaryOptions) -> Result<(), PassFailed> {
    module.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("tt.func") {
            Diagnostic::remark(op.location(), summarize(op).to_string()).emit();
            return WalkResult::Skip;
        }
        WalkResult::Advance
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::ir::Module;

    const GEMM: &str = include_str!("../../lit-tests/Inputs/matmul.generic.mlir");

    fn first_tt_func<'c, 'a>(module: OperationRef<'c, 'a>) -> Option<OperationRef<'c, 'a>> {
        let mut found = None;
        module.walk(WalkOrder::PreOrder, |op| {
            if found.is_none() && op.name().as_string_ref().as_str() == Ok("tt.func") {
                found = Some(op.to_raw());
                return WalkResult::Interrupt;
            }
            WalkResult::Advance
        });
        found.map(|raw| unsafe { OperationRef::from_raw(raw) })
    }

    #[test]
    fn summarizes_real_triton_gemm() {
        let context = synco_chunk::create_context();
        let module = Module::parse(&context, GEMM).expect("the GEMM parses");
        let func = first_tt_func(module.as_operation()).expect("a tt.func");
        assert_eq!(
            summarize(func),
            KernelSummary {
                name: "matmul_kernel".into(),
                num_arguments: 12,
                program_id_axes: vec![0, 1],
                loads: 2,
                stores: 1,
                dots: 1,
                loops: 1,
            }
        );
    }

    #[test]
    fn empty_kernel_has_empty_summary() {
        let context = synco_chunk::create_context();
        let module = Module::parse(
            &context,
            r#""tt.func"() <{function_type = () -> (), sym_name = "nop", sym_visibility = "public"}> ({
                 "tt.return"() : () -> ()
               }) : () -> ()"#,
        )
        .expect("parses");
        let func = first_tt_func(module.as_operation()).expect("a tt.func");
        let summary = summarize(func);
        assert_eq!(summary.name, "nop");
        assert_eq!(
            summary.to_string(),
            "kernel @nop: 0 arguments, program ids on axes [], 0 tt.load, 0 tt.store, 0 tt.dot, 0 loops"
        );
    }
}
