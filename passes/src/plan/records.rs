//! What a pass records for the passes after it, and for the tool that
//! writes the launch manifest: typed values stored as registered `chunk`
//! attributes (structured MLIR attributes, see `synco_ir::structured`),
//! written and read here only.
//!
//! | attribute | on | value | written by |
//! |---|---|---|---|
//! | [`FLAG_LAYOUT_ATTR`] | `chunk.plan` | the [`FlagRange`]s | the first pass needing it ([`flag_layout`](super::flag_layout)); `chunk-fuse-reductions{mode=stage}` again |
//! | [`REDUCTION_COPIES_ATTR`] | `chunk.plan` | per rank, its side stream's [`ReductionCopy`]s | `chunk-fuse-reductions`, `chunk-fuse-gathers` |
//! | [`COMPLETION_ATTR`] | `chunk.plan` | per rank, `(flag, count)` waits after the kernel | `chunk-fuse-reductions` |
//! | [`SCALAR_ARGS_ATTR`] | `chunk.plan` | the kernel arguments the plan fixes ([`ScalarArg`]s) | `chunk-bind-kernel` |
//! | [`INDEX_BOUNDS_ATTR`] | `chunk.plan` | leading offsets the runtime keeps within their buffers ([`IndexBound`]s) | `chunk-bind-kernel` |
//! | [`HOST_SCHEDULE_ATTR`] | `builtin.module` | the [`FusedPlan`] of the launch manifest | `chunk-lower-transfers` |
//!
//! And two marks on `chunk.transfer`s: [`FUSED_ATTR`] (a fusing pass
//! lowered it into the kernel) and [`IMPLIED_ATTR`] (`chunk-insert-waits`:
//! no tile waits for its chunk).

use super::{FlagRange, Plan, Transfer, fail};
use serde::{Serialize, de::DeserializeOwned};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, structured};
use synco_manifest::{FusedPlan, IndexBound, ReductionCopy, ScalarArg};

/// The plan's flag and counter layout.
pub const FLAG_LAYOUT_ATTR: &str = "chunk.flag_layout";
/// Per rank, the copies of finished chunks its side stream drives
/// (`chunk-lower-transfers` moves them into the schedule).
pub const REDUCTION_COPIES_ATTR: &str = "chunk.reduction_copies";
/// Per rank, the `(flag, count)` pairs its launch waits for after the
/// kernel (`chunk-lower-transfers` moves them into the schedule).
pub const COMPLETION_ATTR: &str = "chunk.completion";
/// The kernel's scalar arguments whose values the plan fixes (strides of
/// bound buffers), for the runtime to check at launch.
pub const SCALAR_ARGS_ATTR: &str = "chunk.scalar_args";
/// Offsets into bound buffers the runtime evaluates over each launch.
pub const INDEX_BOUNDS_ATTR: &str = "chunk.index_bounds";
/// The host's schedule of the fused launch, for its manifest.
pub const HOST_SCHEDULE_ATTR: &str = "chunk.host_schedule";

/// Marks a transfer that a pass lowered into the kernel.
pub const FUSED_ATTR: &str = "chunk.fused";

/// Marks a transfer whose chunk no tile waits for, because a later flag in
/// the same rank's copy list implies it (see `chunk-insert-waits`):
/// `chunk-lower-transfers` gives its copy no flag. The value names the
/// buffer whose flags do.
pub const IMPLIED_ATTR: &str = "chunk.flag_implied_by";

/// Marks `t` as lowered into the kernel ([`FUSED_ATTR`]).
pub fn mark_fused(t: Transfer) {
    ir::set_attr(t.0, FUSED_ATTR, ir::unit_attr(ir::context_of(t.0)));
}

/// Marks `t`'s chunk as implied by the flags of buffer `by`
/// ([`IMPLIED_ATTR`]).
pub fn mark_implied(t: Transfer, by: &str) {
    ir::set_attr(t.0, IMPLIED_ATTR, ir::string_attr(ir::context_of(t.0), by));
}

/// Per rank, a list of `T`.
pub type PerRank<T> = Vec<Vec<T>>;

fn record<T: Serialize>(op: Op, name: &str, value: &T) -> Result<(), PassFailed> {
    let attr = structured::to_attr(ir::context_of(op), value)
        .map_err(|e| fail(op, format!("cannot record {name}: {e}")))?;
    ir::set_attr(op, name, attr);
    Ok(())
}

/// The value recorded as `name` on `op`, if any; a located error if it
/// does not hold a `T`.
fn recorded<T: DeserializeOwned>(op: Op, name: &str) -> Result<Option<T>, PassFailed> {
    let Some(attr) = ir::attr(op, name) else {
        return Ok(None);
    };
    structured::from_attr(attr).map(Some).map_err(|e| {
        fail(
            op,
            format!("'{name}' does not hold what its pass records: {e}"),
        )
    })
}

pub fn record_flag_layout(plan: &Plan, layout: &[FlagRange]) -> Result<(), PassFailed> {
    record(plan.op, FLAG_LAYOUT_ATTR, &layout)
}

pub fn recorded_flag_layout(plan: &Plan) -> Result<Option<Vec<FlagRange>>, PassFailed> {
    recorded(plan.op, FLAG_LAYOUT_ATTR)
}

/// Forgets the recorded flag layout (a pass changed the transfers it
/// was computed from).
pub fn forget_flag_layout(plan_op: Op) {
    ir::remove_attr(plan_op, FLAG_LAYOUT_ATTR);
}

/// Forgets every record on the plan (`chunk-lower-transfers` moved them
/// into the host schedule).
pub fn forget_plan_records(plan_op: Op) {
    for name in [FLAG_LAYOUT_ATTR, REDUCTION_COPIES_ATTR, COMPLETION_ATTR] {
        ir::remove_attr(plan_op, name);
    }
}

pub fn record_reduction_copies(
    plan: &Plan,
    copies: &PerRank<ReductionCopy>,
) -> Result<(), PassFailed> {
    record(plan.op, REDUCTION_COPIES_ATTR, copies)
}

/// The side streams' copies a fusing pass recorded (empty if none).
pub fn reduction_copies(plan: &Plan) -> Result<PerRank<ReductionCopy>, PassFailed> {
    Ok(recorded(plan.op, REDUCTION_COPIES_ATTR)?.unwrap_or_default())
}

pub fn has_reduction_copies(plan: &Plan) -> bool {
    ir::attr(plan.op, REDUCTION_COPIES_ATTR).is_some()
}

pub fn record_completion(plan: &Plan, waits: &PerRank<(i64, i64)>) -> Result<(), PassFailed> {
    record(plan.op, COMPLETION_ATTR, waits)
}

/// The waits after the kernel a fusing pass recorded (empty if none).
pub fn completion(plan: &Plan) -> Result<PerRank<(i64, i64)>, PassFailed> {
    Ok(recorded(plan.op, COMPLETION_ATTR)?.unwrap_or_default())
}

pub fn has_completion(plan: &Plan) -> bool {
    ir::attr(plan.op, COMPLETION_ATTR).is_some()
}

/// Records `bounds` (none: nothing recorded).
pub fn record_index_bounds(plan: &Plan, bounds: &[IndexBound]) -> Result<(), PassFailed> {
    if bounds.is_empty() {
        return Ok(());
    }
    record(plan.op, INDEX_BOUNDS_ATTR, &bounds)
}

/// The offsets `chunk-bind-kernel` recorded (empty if none).
pub fn index_bounds(plan: &Plan) -> Result<Vec<IndexBound>, PassFailed> {
    Ok(recorded(plan.op, INDEX_BOUNDS_ATTR)?.unwrap_or_default())
}

pub fn record_scalar_args(plan: &Plan, args: &[ScalarArg]) -> Result<(), PassFailed> {
    record(plan.op, SCALAR_ARGS_ATTR, &args)
}

/// The kernel arguments `chunk-bind-kernel` found the plan fixes (empty if
/// none, or if the kernel was not bound).
pub fn scalar_args(plan: &Plan) -> Result<Vec<ScalarArg>, PassFailed> {
    Ok(recorded(plan.op, SCALAR_ARGS_ATTR)?.unwrap_or_default())
}

pub fn record_host_schedule(module: Op, schedule: &FusedPlan) -> Result<(), PassFailed> {
    record(module, HOST_SCHEDULE_ATTR, schedule)
}

/// Takes the host schedule `chunk-lower-transfers` recorded off `module`
/// (so Triton never sees it); `None` for a module without a fused plan.
pub fn take_host_schedule(module: Op) -> Result<Option<FusedPlan>, PassFailed> {
    let schedule = recorded(module, HOST_SCHEDULE_ATTR)?;
    ir::remove_attr(module, HOST_SCHEDULE_ATTR);
    Ok(schedule)
}
