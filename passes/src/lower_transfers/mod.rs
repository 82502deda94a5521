//! `chunk-lower-transfers`: turn transfers into what moves the data.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkLowerTransfers` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).
//!
//! This file holds the pass; `schedule.rs` the host's copy schedule it
//! writes (and the refusals of transfers whose arrival flags would not be
//! set exactly once); [`sm_copies`] the `ldst` backend, the copy programs
//! it adds to the kernel.

mod schedule;
pub mod sm_copies;

use crate::plan::records;
use crate::plan::slots::STEP_STATE_BYTES_ATTR;
use crate::plan::{MAX_FLAGS, Transfer, fail, flag_layout, internal, plans};
use melior::ir::operation::OperationRef;
use schedule::{check_arrival_flags, schedule};
use synco_chunk::passes::{ChunkLowerTransfersOptions, PassOptions, RustPass};
use synco_chunk::{PassFailed, attrs::Backend};
use synco_ir as ir;
use synco_manifest::{FusedPlan, RingSteps};

/// The body of `chunk-lower-transfers`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkLowerTransfersOptions;

    fn run(module: OperationRef, options: &ChunkLowerTransfersOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkLowerTransfersOptions::ARGUMENT;

fn run(module: OperationRef, options: &ChunkLowerTransfersOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let requested = CopyProgramCount::parse(module, &options.copy_programs)?;
    let machine = crate::calibration::machine(module, NAME, &options.calibration)?;
    let all = plans(module);
    if all.len() > 1 {
        return Err(fail(
            all[1].op,
            "chunk-lower-transfers: one plan per module is supported",
        ));
    }
    for plan in all {
        let sm_transfers: Vec<Transfer> = plan
            .transfers()
            .into_iter()
            .filter(|t| t.copied_by_sms())
            .filter(|t| !moves_nothing(*t) && !t.is_fused())
            .collect();
        let layout = flag_layout(&plan)?;
        check_arrival_flags(&plan, &layout)?;
        let mut schedule = schedule(&plan, &layout)?;
        let copy_programs = match requested {
            CopyProgramCount::Fixed(programs) => programs,
            CopyProgramCount::Auto => {
                auto_copy_programs(&plan, &machine, &sm_transfers, &schedule.reduction_copies)?
            }
        };
        let programs = i64::from(copy_programs);
        if let Some(programs) = plan.find_kernel_in(module).and_then(persistent_programs) {
            let programs = u32::try_from(programs).map_err(|_| {
                fail(
                    plan.op,
                    format!("chunk-lower-transfers: the kernel's tile loop strides by {programs} programs, which no grid launches"),
                )
            })?;
            schedule.persistent_programs = Some(programs);
            // Its programs wait for other programs' tiles (a reduction's
            // owners for the producers): all of them must be resident.
            schedule.co_resident = layout
                .iter()
                .any(|r| r.kind == crate::plan::FlagKind::Reduction);
        }
        schedule.ring_steps = ring_steps(&plan, module)?;
        if crate::plan::stages_on_sms(&plan) {
            // chunk-fuse-reductions{mode=stage}: the copy programs run the
            // reduction copies the copy engine would.
            if let Some(t) = sm_transfers.first() {
                return Err(fail(
                    *t,
                    "chunk-lower-transfers: the kernel's copy programs already move a staged reduction; an ldst transfer beside it is not supported",
                ));
            }
            let copies = std::mem::take(&mut schedule.reduction_copies);
            let (kernel, abi) = crate::plan::bound_kernel(&plan, module, NAME)?;
            let flags = schedule.num_flags;
            let with_counters = copy_program_flags(&plan, flags)?;
            if copies.iter().any(|c| c.len() as i64 > flags) {
                return Err(internal(plan.op, "more reduction copies than counters"));
            }
            let placement = sm_copies::placement(kernel, plan.op)?;
            sm_copies::lower_reduction_copies(
                &plan, kernel, abi, &copies, programs, placement, flags,
            )?;
            add_copy_programs(&mut schedule, copy_programs, placement, with_counters);
        } else if !sm_transfers.is_empty() {
            let (kernel, abi) = crate::plan::bound_kernel(&plan, module, NAME)?;
            let with_counters = copy_program_flags(&plan, schedule.num_flags)?;
            let placement = sm_copies::placement(kernel, sm_transfers[0])?;
            let forward = sm_copies::lower(
                &plan,
                kernel,
                abi,
                &sm_transfers,
                programs,
                placement,
                &layout,
                schedule.num_flags,
            )?;
            add_copy_programs(&mut schedule, copy_programs, placement, with_counters);
            schedule.copy_programs_forward = forward;
        }
        records::record_host_schedule(module, &schedule)?;
        // The schedule now carries everything the transfers, tile maps and
        // records said; the plan keeps its buffers only.
        records::forget_plan_records(plan.op);
        for name in ["chunk.transfer", "chunk.consume", "chunk.produce"] {
            for op in plan.ops_named(name) {
                ir::erase(op);
            }
        }
    }
    Ok(())
}

/// Of a plan that keeps a buffer in ring slots: its ring steps and the
/// state the kernel keeps between their launches (`chunk-reorder-tiles`
/// recorded it on the kernel). Refuses a transfer into a buffer without
/// slots beside it.
fn ring_steps(plan: &crate::plan::Plan, module: ir::Op) -> Result<Option<RingSteps>, PassFailed> {
    let Some(slotted) = plan.buffers.iter().find(|b| b.slots.is_some()) else {
        return Ok(None);
    };
    let state = plan
        .find_kernel_in(module)
        .and_then(|kernel| ir::int_attr(kernel, STEP_STATE_BYTES_ATTR));
    let (Some(state), Ok(steps)) = (state, u32::try_from(plan.world_size)) else {
        return Err(fail(
            slotted.op,
            format!(
                "chunk-lower-transfers: @{} is kept in ring slots, but the kernel does not run one ring step per launch; run chunk-reorder-tiles first",
                slotted.name
            ),
        ));
    };
    // Each launch makes its step's copies: a transfer into a buffer
    // without slots belongs to no step, and would never be made.
    let unslotted = plan.transfers().into_iter().find(|t| {
        !moves_nothing(*t)
            && t.dst_buffer()
                .and_then(|name| plan.buffer(&name))
                .is_some_and(|b| b.slots.is_none())
    });
    if let Some(t) = unslotted {
        return Err(fail(
            t,
            format!(
                "chunk-lower-transfers: the kernel runs once per ring step (@{} is kept in ring slots), and each launch makes only its step's copies; a transfer into @{}, which has no slots, would never be made: keep every gathered buffer of the plan in slots",
                slotted.name,
                t.dst_buffer().unwrap_or_default()
            ),
        ));
    }
    Ok(Some(RingSteps {
        steps,
        state_bytes: state.unsigned_abs(),
    }))
}

/// Option `copy-programs`: a count, or the cost model's choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyProgramCount {
    Fixed(i32),
    Auto,
}

impl CopyProgramCount {
    /// Reads the option's text: `auto`, or a count in 1..=i32::MAX (the
    /// kernel counts programs in i32); else an error at the module.
    fn parse(module: ir::Op, text: &str) -> Result<CopyProgramCount, PassFailed> {
        if text == "auto" {
            return Ok(CopyProgramCount::Auto);
        }
        text.parse::<i64>()
            .ok()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|n| *n >= 1)
            .map(CopyProgramCount::Fixed)
            .ok_or_else(|| {
                fail(
                    module,
                    format!(
                        "{NAME}: option copy-programs must be auto or a count in 1..{}, not '{text}': the fused kernel's program ids are 32-bit",
                        i32::MAX
                    ),
                )
            })
    }
}

/// `copy-programs=auto`: the cost model's count for the bytes a rank's copy
/// programs move per launch ([`copied_bytes`]), of 1 up to a quarter of
/// the GPU's SMs and at most the blocks of the largest chunk; reported in a
/// remark at the plan. 16 (the option's default) where nothing is copied
/// by SMs.
fn auto_copy_programs(
    plan: &crate::plan::Plan,
    machine: &synco_cost_model::Machine,
    transfers: &[Transfer],
    copies: &[Vec<synco_manifest::ReductionCopy>],
) -> Result<i32, PassFailed> {
    let (bytes, largest) = copied_bytes(plan, transfers, copies)?;
    if bytes == 0 {
        return Ok(16);
    }
    let by_tma = transfers.iter().any(|t| t.backend() == Some(Backend::Tma))
        || (crate::plan::stages_on_sms(plan)
            && plan
                .transfers()
                .iter()
                .any(|t| !t.is_local() && t.backend() == Some(Backend::Tma)));
    let (rate, unmeasured) = match (by_tma, machine.tma_copy_gbps) {
        (true, Some(rate)) => (rate, false),
        (true, None) => (machine.sm_copy_gbps, true),
        (false, _) => (machine.sm_copy_gbps, false),
    };
    // Blocks of the largest chunk bound the programs that have work.
    let block = if by_tma {
        sm_copies::TMA_BLOCK_BYTES
    } else {
        sm_copies::COPY_STEP_BYTES
    };
    let blocks = u64::try_from(largest / block).unwrap_or(0).max(1);
    let most = u64::from(machine.sms / 4).clamp(1, blocks);
    let candidates: Vec<u64> = (1..=most).collect();
    let Some((chosen, predictions)) =
        synco_cost_model::choose_copy_programs(machine, bytes, rate, &candidates)
    else {
        return Err(internal(plan.op, "the cost model had no candidates"));
    };
    let shown: Vec<String> = predictions
        .iter()
        .filter(|(p, _)| p.is_power_of_two() || *p == chosen || *p == most)
        .map(|(p, us)| format!("{p}: {us:.0} us"))
        .collect();
    synco_chunk::Diagnostic::remark(
        crate::plan::loc(plan.op),
        format!(
            "copy-programs=auto -> {chosen}: {bytes} bytes per rank and launch, {rate:.1} GB/s per program{} up to the link's {:.0} GB/s; predicted copy time by programs: {}",
            if unmeasured {
                " (tma's rate is not measured: ldst's)"
            } else {
                ""
            },
            machine.link_gbps,
            shown.join(", ")
        ),
    )
    .emit();
    i32::try_from(chosen).map_err(|_| internal(plan.op, "more copy programs than an i32 counts"))
}

/// The bytes a rank's copy programs move per launch, and the largest
/// chunk's: `transfers` on `ldst` or `tma` (one chunk per rank each), or a
/// staged reduction's `copies` (the busiest rank's list).
fn copied_bytes(
    plan: &crate::plan::Plan,
    transfers: &[Transfer],
    copies: &[Vec<synco_manifest::ReductionCopy>],
) -> Result<(u64, i64), PassFailed> {
    let mut chunks: Vec<i64> = Vec::new();
    for t in transfers {
        let bytes = chunk_bytes(plan, *t)
            .ok_or_else(|| internal(*t, "cannot size the transfer's chunk"))?;
        chunks.push(bytes);
    }
    chunks.extend(copies.iter().flatten().map(|c| c.bytes));
    let busiest = copies
        .iter()
        .map(|list| list.iter().map(|c| c.bytes).sum::<i64>())
        .max()
        .unwrap_or(0);
    let transferred: i64 = transfers.iter().zip(&chunks).map(|(_, b)| *b).sum();
    let total = u64::try_from(transferred.max(busiest)).unwrap_or(0);
    Ok((total, chunks.iter().copied().max().unwrap_or(0)))
}

/// Bytes of the chunk a transfer moves on each rank.
fn chunk_bytes(plan: &crate::plan::Plan, t: Transfer) -> Option<i64> {
    let buffer = plan.buffer(&t.dst_buffer()?)?;
    let elements = t.sizes()?.iter().try_fold(1i64, |n, s| n.checked_mul(*s))?;
    elements.checked_mul(buffer.element_bytes()?)
}

/// The flags of a kernel with copy programs: after the kernel's `flags`, a
/// counter per flag (`flags + flag`), all within [`MAX_FLAGS`]; else an
/// error at the plan, before the copy programs are built.
fn copy_program_flags(plan: &crate::plan::Plan, flags: i64) -> Result<i64, PassFailed> {
    flags
        .checked_mul(2)
        .filter(|all| *all <= MAX_FLAGS)
        .ok_or_else(|| {
            fail(
                plan.op,
                format!(
                    "{NAME}: the copy programs add a counter per flag after the kernel's {flags} flags, twice as many in all: more than the {MAX_FLAGS} flags that the fused kernel's 32-bit flag indices reach"
                ),
            )
        })
}

/// The schedule of a kernel given `programs` copy programs (positive,
/// checked by `run`), placed as `placement` says: `flags`, those of
/// [`copy_program_flags`].
fn add_copy_programs(
    schedule: &mut FusedPlan,
    programs: i32,
    placement: sm_copies::CopyPrograms,
    flags: i64,
) {
    schedule.copy_programs = programs.unsigned_abs();
    schedule.copy_plane = placement == sm_copies::CopyPrograms::Plane;
    schedule.num_flags = flags;
}

/// The number of programs a persistent kernel must be launched with: the
/// constant stride of the tile loop its marked tile index comes from.
fn persistent_programs(kernel: ir::Op) -> Option<i64> {
    ir::walk(kernel)
        .into_iter()
        .filter(|op| ir::attr(*op, crate::tiles::TILE_INDEX_ATTR).is_some())
        .find_map(|op| crate::tiles::persistent_stride(ir::result(op, 0)))
}

/// A local transfer whose source is its destination: the rows are in place.
fn moves_nothing(t: Transfer) -> bool {
    t.is_local() && t.src().map(ir::print_attr) == t.dst().map(ir::print_attr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::ir::Module;

    /// An `ldst` all-gather on 2 ranks into a kernel that
    /// `chunk-bind-kernel` bound (`lower-transfers-ldst.mlir`'s first case).
    const GATHER: &str = r#"module {
      chunk.plan @p world_size(2) {
        chunk.buffer @A : !chunk.buffer<512x64xbf16> bind(0)
        chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 256, 0)] [256, 64]> on (d0) -> (d0) order(0)
        chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 256, 0)] [256, 64]> on (d0) -> (d0) order(1)
        chunk.consume @A dim(0) tile(128)
      }
      "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
      ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
        "tt.return"() : () -> ()
      }) {chunk.abi_first_arg = 1 : i32} : () -> ()
    }"#;

    /// The pass body run on [`GATHER`] with option `copy_programs`, and
    /// the module it leaves.
    fn lower_gather(copy_programs: &str) -> (Result<(), PassFailed>, String) {
        let context = synco_chunk::create_context();
        // The pass's dependent dialects, as the pass manager loads them
        // before a chunk pass runs (ChunkPasses.td). Without them the body
        // builds arith ops as unregistered, and their op name dangles once
        // the dialect loads (a use after free that crashed 1 run in 10).
        for dialect in ["arith", "scf", "gpu"] {
            context.get_or_load_dialect(dialect);
        }
        let module = Module::parse(&context, GATHER).expect("parses");
        let options = ChunkLowerTransfersOptions {
            copy_programs: copy_programs.to_string(),
            calibration: String::new(),
        };
        let result = <Pass as RustPass>::run(module.as_operation(), &options);
        (result, module.as_operation().to_string())
    }

    #[test]
    fn copy_programs_beyond_32_bits_or_not_a_count_are_refused_before_the_kernel_changes() {
        let (result, text) = lower_gather("4");
        assert_eq!(result, Ok(()));
        assert!(text.contains("copy_programs = 4 : i64"), "{text}");
        // Called directly, the body used to record 2147483648 programs in
        // the schedule and build the kernel with the constant -2147483648.
        for programs in ["2147483648", "0", "-3", "many", ""] {
            let (result, text) = lower_gather(programs);
            assert_eq!(result, Err(PassFailed));
            assert!(!text.contains("chunk.host_schedule"), "{text}");
            assert!(!text.contains("arith.constant"), "{text}");
        }
    }

    #[test]
    fn auto_copy_programs_come_from_the_cost_model() {
        // One 256 x 64 bf16 chunk (32 KiB): one block, so one program.
        let (result, text) = lower_gather("auto");
        assert_eq!(result, Ok(()));
        assert!(text.contains("copy_programs = 1 : i64"), "{text}");
    }
}
