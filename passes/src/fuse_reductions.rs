//! `chunk-fuse-reductions`: fuse a reduce-scatter, or a one-shot
//! all-reduce, into the GEMM tiles that produce its partials.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkFuseReductions` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::{
    abi::{AbiArgs, buffer_arg},
    plan::{
        FlagKind, FlagRange, Plan, ReductionKind, bound_kernel, fail, flag_layout, internal, loc,
        plans, reduction_kind,
    },
    tiles::{TILE_INDEX_ATTR, kernel_arg, tile_store},
};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkFuseReductionsOptions, PassOptions, ReductionMode, RustPass};
use synco_chunk::{Diagnostic, PassFailed, attrs};
use synco_ir::{self as ir, Builder, Op, RmwOp, Scope, Sem, Value, builder::Cmp};
use synco_manifest::ReductionCopy;

/// The body of `chunk-fuse-reductions`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkFuseReductionsOptions;

    fn run(module: OperationRef, options: &ChunkFuseReductionsOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkFuseReductionsOptions::ARGUMENT;

/// How partials reach their owner (the pass option `mode`, or the copy
/// engine when the reduce-scatter's backend is `copy_engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Push,
    Pull,
    CopyEngine,
    /// Staged like `CopyEngine`, moved by SM copy programs.
    Stage,
}

impl Mode {
    /// Partials travel through the owner's staging buffer: tiles store and
    /// count them locally, and something else moves each finished chunk.
    fn staged(self) -> bool {
        matches!(self, Mode::CopyEngine | Mode::Stage)
    }

    /// The kernel itself keeps one epoch's chunks from overwriting the
    /// previous epoch's before they were moved or read (the `consumed`,
    /// `copied` and `sent` flags). On the copy engine the runtime's stream
    /// order does it instead (a rank's copies wait for the owners' previous
    /// launch, its next kernel for its previous launch's copies), so those
    /// flags are neither waited for nor bumped.
    fn guards_epochs_in_kernel(self) -> bool {
        !matches!(self, Mode::CopyEngine)
    }
}

/// Marks a transfer that a pass lowered into the kernel.
pub const FUSED_ATTR: &str = "synco.fused";

fn run(module: OperationRef, options: &ChunkFuseReductionsOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let mode = match options.mode {
        ReductionMode::Push => Mode::Push,
        ReductionMode::Pull => Mode::Pull,
        ReductionMode::Stage => Mode::Stage,
    };
    for plan in plans(module) {
        let reducing: Vec<Op> = plan
            .ops_named("chunk.transfer")
            .into_iter()
            .filter(|t| ir::attr(*t, "reduce").is_some())
            .collect();
        if reducing.is_empty() {
            continue;
        }
        for t in &reducing {
            check_fusable(*t)?;
        }
        check_layout(&plan, &reducing)?;
        let (kernel, abi) = bound_kernel(&plan, module, NAME)?;
        if mode == Mode::Stage {
            stage(&plan, kernel, &reducing)?;
        }
        for range in flag_layout(&plan)?
            .into_iter()
            .filter(|r| r.kind == FlagKind::Reduction)
        {
            // A transfer of this partial: it names the reduction's output.
            let transfer = reducing
                .iter()
                .copied()
                .find(|t| {
                    ir::attr(*t, "src")
                        .and_then(crate::plan::region_parts)
                        .is_some_and(|(b, _, _)| b == range.buffer)
                })
                .ok_or_else(|| internal(plan.op, "a reduction range without its transfers"))?;
            fuse(&plan, kernel, abi, &range, transfer, mode)?;
        }
        // A two-shot all-reduce's gathering transfers move the sums the
        // owners now push themselves.
        let gathers = plan.ops_named("chunk.transfer").into_iter().filter(|t| {
            ir::str_attr(*t, "group")
                .is_some_and(|g| g.starts_with("all_reduce") && g.ends_with("_ag"))
        });
        if let Some(unit) = ir::parse_attr(ir::context_of(module), "unit") {
            for t in reducing.into_iter().chain(gathers) {
                ir::set_attr(t, FUSED_ATTR, unit);
            }
        }
    }
    Ok(())
}

/// Reduce-scatter and all-reduce on the SM backend, or a reduce-scatter
/// (or two-shot all-reduce) moved by the copy engine.
fn check_fusable(t: Op) -> Result<(), PassFailed> {
    let group = ir::str_attr(t, "group").unwrap_or_default();
    if !group.starts_with("reduce_scatter") && !group.starts_with("all_reduce") {
        return Err(fail(
            t,
            "chunk-fuse-reductions: this reducing transfer belongs to no reduce_scatter or all_reduce (the `group` that chunk-expand-collectives gives their transfers): write the collective and let chunk-expand-collectives expand it",
        ));
    }
    let backend = ir::int_attr(t, "backend").and_then(attrs::Backend::from_value);
    let local = crate::plan::is_local(t);
    // A reduce-scatter, alone or as a two-shot all-reduce's first phase.
    let scatters = group.starts_with("reduce_scatter") || group.ends_with("_rs");
    if backend == Some(attrs::Backend::CopyEngine) && !local && scatters {
        return Ok(());
    }
    if backend != Some(attrs::Backend::Ldst) && !local {
        return Err(fail(
            t,
            format!(
                "chunk-fuse-reductions: a reduction fuses into its GEMM with backend(ldst) (SM loads and stores move the partials), or a reduce-scatter or two-shot all-reduce with backend(copy_engine); backend '{}' is not implemented for this one",
                backend.map_or("?", |b| b.keyword())
            ),
        ));
    }
    Ok(())
}

/// Refuses reducing transfers that the fused code would not reduce as
/// written: it sums, in chunks of the first reducing transfer's rows,
/// a reduce-scatter's and a two-shot all-reduce's rows of rank `o`'s block
/// of `@P` on rank `o` (into `@C`'s rows from 0, or into the same rows of a
/// `@C` as large as `@P`), and a one-shot all-reduce's every row into the
/// same rows of `@C` on every rank; a two-shot all-reduce then gathers each
/// owner's rows into the same rows of every peer's `@C`. So on every rank
/// each transfer must move one such chunk of whole rows. The plan verifier
/// already checked that each row of `@C` gets exactly one partial from
/// every rank; a plan written out by hand can still put them elsewhere
/// (a rotated owner, say), which this refuses.
fn check_layout(plan: &Plan, reducing: &[Op]) -> Result<(), PassFailed> {
    let gathers = plan.ops_named("chunk.transfer").into_iter().filter(|t| {
        ir::str_attr(*t, "group").is_some_and(|g| g.starts_with("all_reduce") && g.ends_with("_ag"))
    });
    // (partials, output, sizes) of each partial buffer's first reducing
    // transfer: its sizes are the chunk (as in `flag_layout`).
    let mut firsts: Vec<(String, String, Vec<i64>)> = Vec::new();
    for r in reducing {
        let (Some((p, _, sizes)), Some(c)) = (
            ir::attr(*r, "src").and_then(crate::plan::region_parts),
            crate::plan::dst_buffer(*r),
        ) else {
            continue;
        };
        if !firsts.iter().any(|(q, _, _)| *q == p) {
            firsts.push((p, c, sizes));
        }
    }
    for t in reducing.iter().copied().chain(gathers) {
        let gathered = ir::attr(t, "reduce").is_none();
        let (Some(src), Some(dst)) = (ir::attr(t, "src"), ir::attr(t, "dst")) else {
            return Err(internal(t, "a transfer without regions"));
        };
        let (Some((src_name, _, sizes)), Some((dst_name, _, _))) = (
            crate::plan::region_parts(src),
            crate::plan::region_parts(dst),
        ) else {
            return Err(internal(t, "cannot read the transfer's regions"));
        };
        // A two-shot all-reduce's gathering transfers move @C itself; its
        // partials are the reducing transfers' source.
        let partials = if gathered {
            firsts
                .iter()
                .find(|(_, c, _)| *c == dst_name)
                .map(|(p, _, _)| p.clone())
                .unwrap_or_default()
        } else {
            src_name.clone()
        };
        let Some(produce) = plan.producer_of(&partials) else {
            return Err(fail(
                t,
                format!(
                    "chunk-fuse-reductions: no chunk.produce says which tiles write @{partials}, the partials this transfer reduces"
                ),
            ));
        };
        let dim = ir::int_attr(produce, "dim").unwrap_or(0) as usize;
        let (Some(p_buf), Some(c_buf)) = (plan.buffer(&partials), plan.buffer(&dst_name)) else {
            return Err(internal(t, "the transfer's buffers are not in the plan"));
        };
        let block = p_buf.shape.get(dim).copied().unwrap_or(0) / plan.world_size;
        let chunk = firsts
            .iter()
            .find(|(p, _, _)| *p == partials)
            .and_then(|(_, _, sizes)| sizes.get(dim).copied())
            .unwrap_or(0);
        let kind = reduction_kind(plan, &partials);
        let one_shot = kind == Some(ReductionKind::AllReduce);
        let into_block = c_buf.shape.get(dim) == Some(&block);
        let whole_rows = (0..sizes.len()).all(|k| k == dim || sizes.get(k) == c_buf.shape.get(k));
        let rows = sizes.get(dim).copied().unwrap_or(0);
        for r in 0..plan.world_size {
            let (Some(from), Some(to), Some(src_at), Some(dst_at)) = (
                crate::plan::rank_at(t, "src_rank", r),
                crate::plan::rank_at(t, "dst_rank", r),
                crate::plan::region_offsets(src, r),
                crate::plan::region_offsets(dst, r),
            ) else {
                return Err(internal(t, "cannot evaluate the transfer on every rank"));
            };
            // Whose block of rows this is: the receiver's sum, or the
            // sender's gathered sums.
            let owner = if gathered { from } else { to };
            let start = src_at.get(dim).copied().unwrap_or(0);
            let in_owners_block =
                one_shot || (start >= owner * block && start < (owner + 1) * block);
            let mut expected = src_at.clone();
            if let Some(row) = expected.get_mut(dim)
                && into_block
                && !gathered
            {
                *row -= owner * block;
            }
            if rows == chunk
                && chunk > 0
                && start % chunk == 0
                && whole_rows
                && in_owners_block
                && dst_at == expected
            {
                continue;
            }
            let what = if gathered {
                "gathers each owner's sums into the same rows of every peer's"
            } else if one_shot {
                "sums every row into the same rows of every rank's"
            } else if into_block {
                "sums rank o's own block of the partials into the rows from 0 of rank o's"
            } else {
                "sums rank o's own block of the partials into the same rows of rank o's"
            };
            return Err(fail(
                t,
                format!(
                    "chunk-fuse-reductions: on rank {r}, this transfer moves {rows} rows of @{src_name} at {src_at:?} on rank {from} into @{dst_name} at {dst_at:?} on rank {to}, but the fused code {what} @{dst_name}, {chunk} whole rows at a time: write the collective and let chunk-expand-collectives expand it"
                ),
            ));
        }
    }
    Ok(())
}

/// `mode=stage`: marks the plan's reductions on `ldst` as staged (so that
/// the flag layout is the copy engine's, `plan::staged`) and gives each
/// reduced buffer the owners' staging buffer that `chunk-expand-collectives`
/// declares for the copy engine (`W - 1` blocks of its rows, kernel-owned),
/// with its kernel argument. A one-shot all-reduce is not staged.
fn stage(plan: &Plan, kernel: Op, reducing: &[Op]) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let mut names: Vec<String> = Vec::new();
    for t in reducing {
        let backend = ir::int_attr(*t, "backend").and_then(attrs::Backend::from_value);
        let local = crate::plan::is_local(*t);
        let Some((name, _, _)) = ir::attr(*t, "src").and_then(crate::plan::region_parts) else {
            return Err(internal(*t, "a reducing transfer without a source region"));
        };
        if local || backend != Some(attrs::Backend::Ldst) || names.contains(&name) {
            continue;
        }
        if reduction_kind(plan, &name) == Some(ReductionKind::AllReduce) {
            return Err(fail(
                *t,
                "chunk-fuse-reductions: mode=stage moves a reduce-scatter or a two-shot all-reduce; this one-shot all-reduce needs mode=push or pull",
            ));
        }
        names.push(name);
    }
    let ctx = ir::context_of(plan.op);
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let Some(list) = ir::parse_attr(ctx, &format!("[{}]", quoted.join(", "))) else {
        return Err(internal(plan.op, "cannot build the staged buffers' list"));
    };
    ir::set_attr(plan.op, crate::plan::STAGED_ATTR, list);
    for name in names {
        // W - 1 blocks of the partial's rows (fused partials are split
        // along dimension 0, see `fuse`).
        let Some(rows) = plan.buffer(&name).and_then(|b| b.shape.first().copied()) else {
            return Err(internal(plan.op, "a reduced buffer without rows"));
        };
        let (staging, shape, element) =
            crate::plan::staging_decl(plan, &name, 0, rows / w * (w - 1), plan.op, NAME)?;
        crate::plan::declare_kernel_buffer(
            plan,
            kernel,
            &staging,
            &shape,
            &element,
            &[crate::plan::STAGING_ATTR],
            NAME,
        )?;
    }
    Ok(())
}

fn fuse(
    plan: &Plan,
    kernel: Op,
    abi: AbiArgs,
    range: &FlagRange,
    transfer: Op,
    mode: Mode,
) -> Result<(), PassFailed> {
    let w = plan.world_size;
    let name = &range.buffer;
    let produce = plan
        .producer_of(name)
        .ok_or_else(|| internal(plan.op, "a reduction range without its chunk.produce"))?;
    let tile = ir::int_attr(produce, "tile").unwrap_or(1);
    if range.dim != 0 {
        return Err(fail(
            produce,
            "chunk-fuse-reductions: only partials split along dim(0) (row blocks) are fused",
        ));
    }
    let partial = plan
        .buffer(name)
        .ok_or_else(|| internal(produce, "a produced buffer that is not in the plan"))?;
    let Some(p_arg) = partial.arg.and_then(|a| kernel_arg(kernel, a)) else {
        return Err(fail(
            produce,
            format!(
                "@{name} is produced by kernel tiles but not bound to a kernel argument: add bind(i)"
            ),
        ));
    };
    let [m, n] = partial.shape[..] else {
        return Err(fail(
            produce,
            format!("chunk-fuse-reductions: @{name} must be a 2D [M, N] partial"),
        ));
    };
    let out_name = crate::plan::dst_buffer(transfer)
        .ok_or_else(|| internal(transfer, "a transfer without a destination"))?;
    let out = plan
        .buffer(&out_name)
        .ok_or_else(|| internal(transfer, "a destination that is not in the plan"))?;
    let block = m / w;
    let kind = reduction_kind(plan, name);
    let all_reduce = kind == Some(ReductionKind::AllReduce);
    let two_shot = kind == Some(ReductionKind::AllReduceTwoShot);
    let out_rows = if all_reduce || two_shot { m } else { block };
    if out.shape != [out_rows, n] || out.element != partial.element {
        return Err(fail(
            transfer,
            format!(
                "chunk-fuse-reductions: @{out_name} must be {out_rows}x{n}x{}, like {} @{name}",
                partial.element,
                if all_reduce || two_shot {
                    ""
                } else {
                    "a block of"
                }
            ),
        ));
    }
    let out_ptr = match out.arg {
        Some(a) => kernel_arg(kernel, a),
        None => buffer_arg(kernel, &out_name),
    }
    .ok_or_else(|| internal(kernel, "the reduction's output has no kernel argument"))?;
    let element_bytes = partial.element_bytes().ok_or_else(|| {
        fail(
            produce,
            format!("unsupported element type {}", partial.element),
        )
    })?;
    if range.rows_per_chunk % tile != 0 {
        return Err(fail(
            produce,
            format!(
                "chunks of {} rows of @{name} would split {tile}-row tiles: pick a chunk count whose chunks hold whole tiles",
                range.rows_per_chunk
            ),
        ));
    }

    let marked = ir::walk(kernel)
        .into_iter()
        .find(|op| ir::str_attr(*op, TILE_INDEX_ATTR).as_deref() == Some(name.as_str()))
        .ok_or_else(|| {
            fail(
                produce,
                "chunk-fuse-reductions: no tile index for this buffer; run chunk-reorder-tiles first",
            )
        })?;
    let store = tile_store(
        kernel,
        partial.arg.unwrap_or(usize::MAX),
        name,
        marked,
        produce,
        NAME,
    )?;
    let operands = ir::operands(store);
    let (ptrs, value) = (operands[0], operands[1]);
    let mask = operands.get(2).copied();
    let shape = ir::tensor_shape(ir::type_of(value)).unwrap_or_default();
    let [tile_rows, tile_cols] = shape[..] else {
        return Err(fail(
            store,
            "chunk-fuse-reductions: the tile's store must write a 2D tensor",
        ));
    };
    if tile_rows != tile {
        return Err(fail(
            store,
            format!("this store writes {tile_rows}-row tiles, but the plan produces tile({tile})"),
        ));
    }
    let tiles_per_chunk = range.rows_per_chunk / tile * ((n + tile_cols - 1) / tile_cols);
    let element = ir::tensor_element(ir::type_of(value))
        .ok_or_else(|| internal(store, "a tensor without an element type"))?;

    let mode = if crate::plan::reduced_by_copy_engine(plan, name) {
        Mode::CopyEngine
    } else {
        mode
    };
    // The copy engine lands peers' partials in the staging buffer (read
    // only in that mode).
    let staging_ptr = if mode.staged() {
        let staging = crate::plan::staging_name(name);
        buffer_arg(kernel, &staging).ok_or_else(|| {
            fail(
                transfer,
                format!(
                    "chunk-fuse-reductions: the copy engine's staging buffer @{staging} is not a kernel argument; run chunk-expand-collectives and chunk-bind-kernel first"
                ),
            )
        })?
    } else {
        p_arg
    };
    if all_reduce {
        // Peers' partials beyond the first land in the staging buffer.
        let staging = if w > 2 {
            let staging = crate::plan::staging_name(name);
            Some(buffer_arg(kernel, &staging).ok_or_else(|| {
                fail(
                    transfer,
                    format!(
                        "chunk-fuse-reductions: a one-shot all-reduce of {w} ranks stages peers' partials in @{staging}, which is not a kernel argument; run chunk-expand-collectives and chunk-bind-kernel first"
                    ),
                )
            })?)
        } else {
            None
        };
        return fuse_all_reduce(AllReduceSite {
            abi,
            produce,
            name,
            out_name: &out_name,
            marked,
            store,
            p_arg,
            staging,
            partial_elems: m * n,
            out_ptr,
            element,
            element_bytes,
            tile,
            range,
            tiles_per_chunk,
            world_size: w,
        });
    }
    let b = Builder::before(store).with_loc(ir::location_of(produce));
    let t = ir::result(marked, 0);
    let chunk = b.divsi(
        b.muli(t, b.const_i32(tile)),
        b.const_i32(range.rows_per_chunk),
    );
    let owner = b.divsi(chunk, b.const_i32(range.chunks_per_rank));
    let flag = b.addi(chunk, b.const_i32(range.base));
    let own = b.cmpi(Cmp::Eq, owner, abi.rank);
    let (_, own_block, peer_block) = b.if_else(own);
    let yield_of = |block| ir::ops_in(block).last().copied();

    // Own rows: pull, reduce in rank order, store into the output block.
    let own_yield =
        yield_of(own_block).ok_or_else(|| internal(store, "an scf.if without yield"))?;
    let ob = Builder::before(own_yield).with_loc(ir::location_of(produce));
    let ce = CeFlags::new(range, w);
    if mode.staged() {
        // One flag per source, set to the epoch by the copy engine.
        for s in 0..w {
            let peer = ob.const_i32(s);
            ob.if_then(ob.cmpi(Cmp::Ne, abi.rank, peer), |ib| {
                let arrived = ce.arrived(&ib, chunk, peer);
                wait(&ib, abi, arrived, abi.epoch, 1);
            });
        }
    } else {
        wait(&ob, abi, flag, abi.epoch, (w - 1) * tiles_per_chunk);
    }
    let sum = rank_ordered_sum(&ob, abi, store, value, mask, w, |s, peer| match mode {
        // Copied into this rank's staging buffer, in source s's slot.
        Mode::CopyEngine | Mode::Stage => staging_shift(
            &ob,
            ptrs,
            p_arg,
            staging_ptr,
            abi.rank,
            s,
            w,
            block * n,
            element_bytes,
            &shape,
        ),
        // Pushed into this rank's @P, in the rows of block s.
        Mode::Push => block_shift(&ob, ptrs, peer, abi.rank, block * n, &shape),
        Mode::Pull => peer_ptr(&ob, ptrs, peer),
    })?;
    // @C row = @P row - rank * block: shift every address by one offset, in
    // elements, through tt.addptr so the store stays vectorised (buffers
    // are aligned to 16 elements, rows hold a multiple of 16 elements).
    let between = elements_between(&ob, p_arg, out_ptr, element_bytes);
    // (A two-shot all-reduce's @C has @P's shape: no shift by the block.)
    let shift = if two_shot {
        between
    } else {
        ob.subi(
            between,
            ob.muli(ob.to_i64(abi.rank), ob.const_i64(block * n)),
        )
    };
    if n % 16 == 0 {
        ob.assume_multiple_of(shift, 16);
    }
    let out_ptrs = ob.addptr(ptrs, ob.splat(shift, &shape));
    let reduced = ob.convert_float(sum, element);
    let gathered_by_copy_engine = two_shot && mode.staged();
    if gathered_by_copy_engine && mode.guards_epochs_in_kernel() {
        // The copy programs have sent the previous epoch's sums of this chunk.
        let sent = ce.sent(&ob, chunk);
        wait(&ob, abi, sent, ob.subi(abi.epoch, ob.const_i32(1)), 1);
    }
    store_under(&ob, out_ptrs, reduced, mask);
    if gathered_by_copy_engine {
        // Counted here; the side stream sends the chunk's sums once complete.
        arrive(&ob, abi.flags, ce.reduced(&ob, chunk));
    }
    // A two-shot all-reduce on SMs: the sum to every peer's @C too,
    // counted on its gathered-rows counter (the kernel ends when those are
    // complete, see `wait_for_peers_sums`); and every peer may overwrite
    // its partial (unless the runtime's stream order says so).
    let sums_to_peers = two_shot && !gathered_by_copy_engine;
    if sums_to_peers || mode.guards_epochs_in_kernel() {
        for s in 0..w {
            let peer = ob.const_i32(s);
            let other = ob.cmpi(Cmp::Ne, abi.rank, peer);
            ob.if_then(other, |ib| {
                let peer_flags = peer_ptr(&ib, abi.flags, peer);
                if sums_to_peers {
                    let gathered = ib.addi(flag, ib.const_i32(range.chunks_per_rank * w));
                    store_under(&ib, peer_ptr(&ib, out_ptrs, peer), reduced, mask);
                    arrive(&ib, peer_flags, gathered);
                }
                if mode.guards_epochs_in_kernel() {
                    let consumed = if mode.staged() {
                        ce.consumed(&ib, chunk)
                    } else {
                        flag
                    };
                    arrive(&ib, peer_flags, consumed);
                }
            });
        }
    }
    if sums_to_peers {
        wait_for_peers_sums(&ob, abi, range, chunk, tiles_per_chunk, w);
    }
    if two_shot {
        match mode {
            // The sums' copies set no flag: the runtime ends each launch
            // after the side streams that send this rank its sums.
            Mode::CopyEngine => {}
            Mode::Stage => record_completion(plan, range, &ce),
            // The kernel waits for the peers' sums itself.
            Mode::Push | Mode::Pull => {}
        }
    }

    // Other ranks' rows: the kernel's own store, between an acknowledgement
    // of the previous epoch and an arrival at the owner.
    let peer_yield =
        yield_of(peer_block).ok_or_else(|| internal(store, "an scf.if without yield"))?;
    let pb = Builder::before(peer_yield).with_loc(ir::location_of(produce));
    let previous = || pb.subi(abi.epoch, pb.const_i32(1));
    match mode {
        // The runtime's stream order keeps this epoch's partial from the
        // rows the copy engine still reads (see `guards_epochs_in_kernel`).
        Mode::CopyEngine => {}
        // The copy programs have copied the previous epoch's partial.
        Mode::Stage => {
            let previous = previous();
            wait(&pb, abi, ce.copied(&pb, chunk), previous, 1)
        }
        Mode::Push | Mode::Pull => wait(&pb, abi, flag, previous(), tiles_per_chunk),
    }
    match mode {
        Mode::Pull => ir::move_before(store, peer_yield),
        Mode::CopyEngine | Mode::Stage => {
            ir::move_before(store, peer_yield);
            // Counted here; the side stream (or the copy programs) copies
            // the chunk once complete.
            arrive(&pb, abi.flags, flag);
            record_copies(
                plan,
                range,
                tiles_per_chunk,
                block * n * element_bytes,
                n * element_bytes,
                two_shot.then_some(out_name.as_str()),
                mode.guards_epochs_in_kernel(),
            );
        }
        Mode::Push => {
            // Into the owner's @P, in the rows of this rank's block.
            let slot = block_shift(&pb, ptrs, abi.rank, owner, block * n, &shape);
            let remote = peer_ptr(&pb, slot, owner);
            store_under(&pb, remote, value, mask);
            ir::erase(store);
        }
    }
    if !mode.staged() {
        let owner_flags = peer_ptr(&pb, abi.flags, owner);
        arrive(&pb, owner_flags, flag);
    }

    let how = match mode {
        Mode::CopyEngine => {
            "other rows store their partial and count it; the copy engine moves each finished chunk to its owner; own rows add"
        }
        Mode::Stage => {
            "other rows store their partial and count it; the kernel's copy programs move each finished chunk to its owner; own rows add"
        }
        Mode::Push => {
            "other rows push their partial into the owner's @P and arrive at its counter; own rows add"
        }
        Mode::Pull => {
            "other rows store their partial and arrive at the owner's counter; own rows pull and add"
        }
    };
    Diagnostic::remark(
        loc(produce),
        format!(
            "tiles of @{name} reduce into @{out_name}: {how} {} peer partial(s) per tile after {} per chunk \
             (counters {}..{}, {tiles_per_chunk} tiles per chunk)",
            w - 1,
            if mode == Mode::CopyEngine {
                format!("{} copy-engine flag(s)", w - 1)
            } else if mode == Mode::Stage {
                format!("{} copy-program flag(s)", w - 1)
            } else {
                format!("{} arrivals", (w - 1) * tiles_per_chunk)
            },
            range.base,
            range.base + range.count(w)
        ),
    )
    .emit();
    Ok(())
}

/// The sum in f32 of every rank's partial of the tile, added in rank order
/// (so every rank gets the same bits whatever order they arrived in): the
/// tile's own `value` for this rank, for every other rank `s` a load from
/// `partial_of(s, s as an i32 value)` (masked off on the rank itself).
fn rank_ordered_sum(
    b: &Builder,
    abi: AbiArgs,
    store: Op,
    value: Value,
    mask: Option<Value>,
    world_size: i64,
    partial_of: impl Fn(i64, Value) -> Value,
) -> Result<Value, PassFailed> {
    let shape = ir::tensor_shape(ir::type_of(value)).unwrap_or_default();
    let f32t = ir::parse_type(b.ctx, "f32").ok_or_else(|| internal(store, "no f32 type"))?;
    let zeros = b.zeros(ir::type_of(value));
    let mut sum: Option<Value> = None;
    for s in 0..world_size {
        let source = b.const_i32(s);
        let is_me = b.splat(b.cmpi(Cmp::Eq, abi.rank, source), &shape);
        let not_me = b.splat(b.cmpi(Cmp::Ne, abi.rank, source), &shape);
        let load_mask = match mask {
            Some(m) => b.andi(m, not_me),
            None => not_me,
        };
        let theirs = b.load_masked(partial_of(s, source), load_mask, zeros);
        let x = b.convert_float(b.select(is_me, value, theirs), f32t);
        sum = Some(match sum {
            Some(acc) => b.addf(acc, x),
            None => x,
        });
    }
    sum.ok_or_else(|| internal(store, "a reduction without ranks"))
}

/// How many elements of `element_bytes` each buffer `to` starts after buffer
/// `from` (an `i64`; both are kernel arguments).
fn elements_between(b: &Builder, from: Value, to: Value, element_bytes: i64) -> Value {
    b.divsi(
        b.subi(b.ptr_to_int(to), b.ptr_to_int(from)),
        b.const_i64(element_bytes),
    )
}

/// `ptrs` moved by `(to - from)` blocks of `block_elems` elements: from a
/// row of block `from` to the same row of block `to`.
fn block_shift(
    b: &Builder,
    ptrs: Value,
    to: Value,
    from: Value,
    block_elems: i64,
    shape: &[i64],
) -> Value {
    let blocks = b.to_i64(b.subi(to, from));
    let elems = b.muli(blocks, b.const_i64(block_elems));
    b.addptr(ptrs, b.splat(elems, shape))
}

/// Pointers into the staging buffer for `ptrs` (the rank's own rows of
/// `@P`): the same rows of the rank's block, in source `source`'s slot
/// ([`crate::plan::staging_slot`]). One shift in elements, through
/// `tt.addptr`, so the loads stay vectorised.
#[allow(clippy::too_many_arguments)]
fn staging_shift(
    b: &Builder,
    ptrs: Value,
    p_arg: Value,
    staging: Value,
    rank: Value,
    source: i64,
    world_size: i64,
    block_elems: i64,
    element_bytes: i64,
    shape: &[i64],
) -> Value {
    let between = elements_between(b, p_arg, staging, element_bytes);
    // slot - rank, in blocks: (source - rank - 1) mod W - rank.
    let rank = b.to_i64(rank);
    let w = b.const_i64(world_size);
    let slot = b.remsi(b.subi(b.const_i64(source - 1 + world_size), rank), w);
    let blocks = b.subi(slot, rank);
    let shift = b.addi(between, b.muli(blocks, b.const_i64(block_elems)));
    if block_elems % 16 == 0 {
        b.assume_multiple_of(shift, 16);
    }
    b.addptr(ptrs, b.splat(shift, shape))
}

/// What [`fuse_all_reduce`] needs of the plan and the kernel's store.
struct AllReduceSite<'a> {
    abi: AbiArgs,
    produce: Op,
    name: &'a str,
    out_name: &'a str,
    marked: Op,
    store: Op,
    p_arg: Value,
    /// `@P_staging` (`W > 2`): slots 1.. of the peers' partials.
    staging: Option<Value>,
    /// Elements of one whole partial `P`.
    partial_elems: i64,
    out_ptr: Value,
    element: ir::Type,
    element_bytes: i64,
    tile: i64,
    range: &'a FlagRange,
    tiles_per_chunk: i64,
    world_size: i64,
}

/// Most tiles one all-reduce chunk may have: every tile of a chunk waits
/// for the peers' same chunk, so they must all be resident at once (one
/// program per SM on 132 SMs, with some room).
const MAX_ALL_REDUCE_CHUNK_TILES: i64 = 128;

/// One-shot all-reduce, every tile (the kernel's own order, the same on
/// every rank). Source `s`'s partial lands on rank `r` in slot
/// `(s - r - 1) mod W` ([`crate::plan::staging_slot`]): slot 0 is `r`'s own
/// `@P`, which a one-shot all-reduce never stores into, slot `k > 0` copy
/// `k - 1` of `@P_staging`. With `n` tiles per chunk:
///
/// ```mlir
/// chunk.wait %flags[G + g], %epoch - 1 count((W - 1) * n) // peers read my last pushes
/// tt.store peer_ptr(slot(rank, s) of %ptrs, s), %v       // for every peer s
/// chunk.arrive peer_ptr(%flags, s)[g]
/// chunk.wait %flags[g], %epoch count((W - 1) * n)        // every peer's pushes of chunk g
/// tt.store %c_ptrs, truncf(x_0 + ... + x_{W-1})          // rank order, f32
/// chunk.arrive peer_ptr(%flags, s)[G + g]                // consumed, for every peer s
/// ```
fn fuse_all_reduce(site: AllReduceSite) -> Result<(), PassFailed> {
    let AllReduceSite {
        abi,
        produce,
        name,
        out_name,
        marked,
        store,
        p_arg,
        staging,
        partial_elems,
        out_ptr,
        element,
        element_bytes,
        tile,
        range,
        tiles_per_chunk,
        world_size,
    } = site;
    if tiles_per_chunk > MAX_ALL_REDUCE_CHUNK_TILES {
        return Err(fail(
            produce,
            format!(
                "chunk-fuse-reductions: all-reduce chunks of {} rows hold {tiles_per_chunk} tiles, more than the {MAX_ALL_REDUCE_CHUNK_TILES} that can wait for the peers at once: the kernel would deadlock; use chunks of {tile} rows",
                range.rows_per_chunk
            ),
        ));
    }
    let operands = ir::operands(store);
    let (ptrs, value) = (operands[0], operands[1]);
    let mask = operands.get(2).copied();
    let shape = ir::tensor_shape(ir::type_of(value)).unwrap_or_default();
    let b = Builder::before(store).with_loc(ir::location_of(produce));
    let chunks = range.chunks_per_rank * world_size;
    let t = ir::result(marked, 0);
    let chunk = b.divsi(
        b.muli(t, b.const_i32(tile)),
        b.const_i32(range.rows_per_chunk),
    );
    let arrival = b.addi(chunk, b.const_i32(range.base));
    let ack = b.addi(chunk, b.const_i32(range.base + chunks));
    let peers_tiles = (world_size - 1) * tiles_per_chunk;
    let slots = Slots {
        ptrs,
        p_arg,
        staging,
        partial_elems,
        element_bytes,
        world_size,
    };
    // Push this rank's partial into every peer's slot for it, once the
    // peers have read the previous epoch's.
    let previous = b.subi(abi.epoch, b.const_i32(1));
    wait(&b, abi, ack, previous, peers_tiles);
    for s in 0..world_size {
        let peer = b.const_i32(s);
        b.if_then(b.cmpi(Cmp::Ne, abi.rank, peer), |ib| {
            let remote = peer_ptr(&ib, slots.of(&ib, abi.rank, peer, &shape), peer);
            store_under(&ib, remote, value, mask);
            arrive(&ib, peer_ptr(&ib, abi.flags, peer), arrival);
        });
    }
    // Every peer's partial of this chunk, pushed into this rank's slots.
    wait(&b, abi, arrival, abi.epoch, peers_tiles);
    // Added in rank order on every rank, so all get the same bits.
    let sum = rank_ordered_sum(&b, abi, store, value, mask, world_size, |_, source| {
        slots.of(&b, source, abi.rank, &shape)
    })?;
    let sum = b.convert_float(sum, element);
    // @C has @P's shape: the same rows, another buffer.
    let between = elements_between(&b, p_arg, out_ptr, element_bytes);
    b.assume_multiple_of(between, 16);
    let out_ptrs = b.addptr(ptrs, b.splat(between, &shape));
    store_under(&b, out_ptrs, sum, mask);
    for s in 0..world_size {
        let peer = b.const_i32(s);
        b.if_then(b.cmpi(Cmp::Ne, abi.rank, peer), |ib| {
            arrive(&ib, peer_ptr(&ib, abi.flags, peer), ack);
        });
    }
    ir::erase(store);
    Diagnostic::remark(
        loc(produce),
        format!(
            "tiles of @{name} all-reduce into @{out_name}: every tile pushes its partial to {} and adds theirs, in rank order, after {peers_tiles} arrivals per chunk (counters {}..{}{})",
            if world_size == 2 {
                "the peer".to_string()
            } else {
                format!("the {} peers", world_size - 1)
            },
            range.base,
            range.base + range.count(world_size),
            if staging.is_some() {
                format!(", {} peers' partials in @{}", world_size - 2, crate::plan::staging_name(name))
            } else {
                String::new()
            }
        ),
    )
    .emit();
    Ok(())
}

/// Where a one-shot all-reduce's partials land: the kernel's pointers into
/// `@P`, moved to the same elements of the slot that holds source `s`'s
/// partial on rank `r`.
struct Slots {
    ptrs: Value,
    p_arg: Value,
    staging: Option<Value>,
    partial_elems: i64,
    element_bytes: i64,
    world_size: i64,
}

impl Slots {
    /// Pointers into rank `rank`'s slot for source `source` (both i32
    /// values): `@P` itself for slot 0, else `@P_staging` + (slot - 1)
    /// partials. One shift in elements through `tt.addptr`, so the
    /// accesses stay vectorised.
    fn of(&self, b: &Builder, source: Value, rank: Value, shape: &[i64]) -> Value {
        let Some(staging) = self.staging else {
            // Two ranks: the only slot is @P.
            return self.ptrs;
        };
        let w = b.const_i32(self.world_size);
        // (source - rank - 1) mod W, kept non-negative.
        let slot = b.remsi(
            b.addi(b.subi(source, rank), b.const_i32(self.world_size - 1)),
            w,
        );
        let into_staging = b.addi(
            elements_between(b, self.p_arg, staging, self.element_bytes),
            b.muli(
                b.to_i64(b.subi(slot, b.const_i32(1))),
                b.const_i64(self.partial_elems),
            ),
        );
        let shift = b.select(
            b.cmpi(Cmp::Eq, slot, b.const_i32(0)),
            b.const_i64(0),
            into_staging,
        );
        if self.partial_elems % 16 == 0 {
            b.assume_multiple_of(shift, 16);
        }
        b.addptr(self.ptrs, b.splat(shift, shape))
    }
}

/// `chunk.peer_ptr %ptr, %peer`.
pub(crate) fn peer_ptr(b: &Builder, ptr: Value, peer: Value) -> Value {
    ir::result(
        b.op("chunk.peer_ptr", &[ptr, peer], &[ir::type_of(ptr)], &[]),
        0,
    )
}

/// `chunk.wait %flags[%flag], %epoch count(n)` on this rank's flags.
pub(crate) fn wait(b: &Builder, abi: AbiArgs, flag: Value, epoch: Value, n: i64) {
    let count = ir::int_attr_of(ir::i64_type(b.ctx), n);
    b.op(
        "chunk.wait",
        &[abi.flags, flag, epoch],
        &[],
        &[("count", count)],
    );
}

/// A two-shot all-reduce on SMs ends in its kernel: the owner's tiles of
/// each of its chunks count themselves done (once their sums are sent) on
/// the chunk's `finished` counter, and the chunk's last tile of the launch
/// waits until every peer's chunk of the same index within its block has
/// all its sums here (its `gathered` counter at `epoch * tiles_per_chunk`),
/// so the kernel is over only once every peer's sums have arrived. A stream
/// wait after the kernel (`synco.completion`) did the same at about 3 us
/// more per launch (benches/ag_gemm/README.md).
///
/// Only the chunk's last tile waits, after its own sums are out: no tile
/// holds its SM while tiles of its rank that a peer's sums depend on (its
/// partials, which come first in the tile order) still have to run. With a
/// persistent kernel a waiting program's later tiles (own chunks of a
/// higher index) wait too; the waits still cannot form a cycle, since the
/// last tile of chunk `i` waits only for peers' chunks `i`, whose tiles
/// follow no wait of a higher index.
fn wait_for_peers_sums(
    b: &Builder,
    abi: AbiArgs,
    range: &FlagRange,
    chunk: Value,
    tiles_per_chunk: i64,
    w: i64,
) {
    let chunks = range.chunks_per_rank * w;
    let finished = b.addi(chunk, b.const_i32(range.base + 2 * chunks));
    let done = count_one(b, abi.flags, finished, Scope::Gpu);
    let last = b.cmpi(
        Cmp::Eq,
        done,
        b.muli(abi.epoch, b.const_i32(tiles_per_chunk)),
    );
    b.if_then(last, |lb| {
        let within = lb.remsi(chunk, lb.const_i32(range.chunks_per_rank));
        for s in 0..w {
            let peer = lb.const_i32(s);
            lb.if_then(lb.cmpi(Cmp::Ne, abi.rank, peer), |pb| {
                let theirs = pb.addi(pb.muli(peer, pb.const_i32(range.chunks_per_rank)), within);
                let gathered = pb.addi(theirs, pb.const_i32(range.base + chunks));
                wait(&pb, abi, gathered, abi.epoch, tiles_per_chunk);
            });
        }
    });
}

/// Adds 1 to `%flags[%counter]` (one acq_rel atomic at `scope`) and
/// returns the count it made, the old value plus 1, to every thread.
pub(crate) fn count_one(b: &Builder, flags: Value, counter: Value, scope: Scope) -> Value {
    let before = b.atomic_rmw(
        RmwOp::Add,
        b.addptr(flags, counter),
        b.const_i32(1),
        Sem::AcqRel,
        scope,
    );
    b.addi(before, b.const_i32(1))
}

/// `chunk.arrive %flags[%flag]`.
pub(crate) fn arrive(b: &Builder, flags: Value, flag: Value) {
    b.op("chunk.arrive", &[flags, flag], &[], &[]);
}

/// A `tt.store` under the kernel store's mask, if it had one.
fn store_under(b: &Builder, ptrs: Value, value: Value, mask: Option<Value>) {
    match mask {
        Some(m) => b.store_masked(ptrs, value, m),
        None => b.store(ptrs, value),
    };
}

/// Discardable attribute on a plan: per rank, the `[flag, count]` pairs the
/// launch must wait for after the kernel (`chunk-lower-transfers` moves
/// them into the schedule's `completion`).
pub const COMPLETION_ATTR: &str = "synco.completion";

/// A two-shot all-reduce staged on SMs ends on rank `r` once every other
/// rank's sums arrived: the `gathered` flag of every chunk `r` does not own
/// reaches the epoch (set by the copy programs).
fn record_completion(plan: &Plan, range: &FlagRange, ce: &CeFlags) {
    let chunks = range.chunks_per_rank * plan.world_size;
    let per_rank: Vec<Vec<[i64; 2]>> = (0..plan.world_size)
        .map(|r| {
            (0..chunks)
                .filter(|g| g / range.chunks_per_rank != r)
                .map(|g| [ce.gathered_index(g), 1])
                .collect()
        })
        .collect();
    let text = serde_json::to_string(&per_rank).unwrap_or_default();
    let ctx = ir::context_of(plan.op);
    ir::set_attr(plan.op, COMPLETION_ATTR, ir::string_attr(ctx, &text));
}

/// The flags of a reduce-scatter moved by the copy engine, after the
/// range's base (`G = W * chunks_per_rank` global chunks): `produced[g]`
/// (this rank's tiles of chunk g, a counter), `arrived[g * W + s]` (set to
/// the epoch by the copy engine once source s's partial of chunk g is in),
/// `consumed[g]` (the owner's tiles that read this rank's partial, a
/// counter), `copied[g]` (set to the epoch once the copy engine has read
/// this rank's partial of chunk g); a two-shot all-reduce also has
/// `reduced[g]` (the owner's tiles that stored their sums, a counter),
/// `sent[g]` (set to the epoch once the copy engine has sent the owner's
/// sums to every peer) and `gathered[g]` (set to the epoch on every peer
/// once the sums are in its `@C`). The copy engine itself uses only
/// `produced`, `arrived` and `reduced`: its streams order the rest (see
/// `record_copies`); the SM-staged mode uses every one.
#[derive(Clone, Copy)]
struct CeFlags {
    base: i64,
    chunks: i64,
    world_size: i64,
}

impl CeFlags {
    fn new(range: &FlagRange, world_size: i64) -> CeFlags {
        CeFlags {
            base: range.base,
            chunks: range.chunks_per_rank * world_size,
            world_size,
        }
    }

    fn produced_index(&self, g: i64) -> i64 {
        self.base + g
    }

    fn arrived_index(&self, g: i64, source: i64) -> i64 {
        self.base + self.chunks + g * self.world_size + source
    }

    fn consumed_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (1 + self.world_size) + g
    }

    fn copied_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (2 + self.world_size) + g
    }

    fn reduced_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (3 + self.world_size) + g
    }

    fn sent_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (4 + self.world_size) + g
    }

    fn gathered_index(&self, g: i64) -> i64 {
        self.base + self.chunks * (5 + self.world_size) + g
    }

    fn reduced(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.reduced_index(0)))
    }

    fn sent(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.sent_index(0)))
    }

    fn arrived(&self, b: &Builder, chunk: Value, source: Value) -> Value {
        let first = b.const_i32(self.arrived_index(0, 0));
        b.addi(
            first,
            b.addi(b.muli(chunk, b.const_i32(self.world_size)), source),
        )
    }

    fn consumed(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.consumed_index(0)))
    }

    fn copied(&self, b: &Builder, chunk: Value) -> Value {
        b.addi(chunk, b.const_i32(self.copied_index(0)))
    }
}

/// Discardable attribute on a plan: per rank, the copies of finished
/// partial chunks its side stream drives (`chunk-lower-transfers` moves
/// them into the schedule's `reduction_copies`).
pub const REDUCTION_COPIES_ATTR: &str = "synco.reduction_copies";

/// The side stream of rank `s` copies each chunk `g` of its partial that
/// rank `o` owns, in the order the kernel computes them (chunk by chunk,
/// ranks s+1, s+2, ...): once `produced[g]` reaches `epoch * n` and the
/// owner consumed the previous epoch's (`consumed[g]`), from `s`'s @P rows
/// of `g` to the same rows of slot `staging_slot(s, o)` of `o`'s
/// `@P_staging`; then the epoch into `o`'s `arrived[g * W + s]` and into
/// `s`'s `copied[g]`. A two-shot all-reduce (`gather` names its `@C`)
/// then sends each of `s`'s own chunks of sums: once `reduced[g]` reaches
/// `epoch * n`, from `s`'s `@C` rows of `g` to the same rows of every
/// peer's, the epoch into each peer's `gathered[g]`, and, after the last
/// peer, into `s`'s `sent[g]`. Without `epoch_flags` (the copy engine,
/// whose stream order guards the epochs: `Mode::guards_epochs_in_kernel`)
/// the copies neither wait for `consumed[g]` nor set `copied[g]`,
/// `sent[g]` and `gathered[g]`: no kernel waits for the sums, and the
/// runtime ends each peer's launch after the side streams that send it
/// sums (`FusedPlan::sources_ordered_by_streams`).
fn record_copies(
    plan: &Plan,
    range: &FlagRange,
    tiles_per_chunk: i64,
    block_bytes: i64,
    row_bytes: i64,
    gather: Option<&str>,
    epoch_flags: bool,
) {
    let w = plan.world_size;
    let flags = CeFlags::new(range, w);
    let chunk_bytes = range.rows_per_chunk * row_bytes;
    let per_rank: Vec<Vec<ReductionCopy>> = (0..w)
        .map(|s| {
            let partials = (0..range.chunks_per_rank)
                .flat_map(|c| (1..w).map(move |k| (c, (s + k) % w)))
                .map(|(c, o)| {
                    let g = o * range.chunks_per_rank + c;
                    let rows = c * range.rows_per_chunk;
                    let slot = crate::plan::staging_slot(s, o, w);
                    ReductionCopy {
                        src_buffer: range.buffer.clone(),
                        dst_buffer: crate::plan::staging_name(&range.buffer),
                        owner: o,
                        src_offset: o * block_bytes + rows * row_bytes,
                        dst_offset: slot * block_bytes + rows * row_bytes,
                        bytes: chunk_bytes,
                        produced: (flags.produced_index(g), tiles_per_chunk),
                        consumed: epoch_flags.then(|| (flags.consumed_index(g), tiles_per_chunk)),
                        arrived: Some(flags.arrived_index(g, s)),
                        copied: epoch_flags.then(|| flags.copied_index(g)),
                        rows: None,
                    }
                });
            let sums = gather.into_iter().flat_map(move |out| {
                (0..range.chunks_per_rank).flat_map(move |c| {
                    let g = s * range.chunks_per_rank + c;
                    (1..w).map(move |k| {
                        let offset = g * chunk_bytes;
                        ReductionCopy {
                            src_buffer: out.to_string(),
                            dst_buffer: out.to_string(),
                            owner: (s + k) % w,
                            src_offset: offset,
                            dst_offset: offset,
                            bytes: chunk_bytes,
                            produced: (flags.reduced_index(g), tiles_per_chunk),
                            consumed: None,
                            arrived: epoch_flags.then(|| flags.gathered_index(g)),
                            copied: (epoch_flags && k == w - 1).then(|| flags.sent_index(g)),
                            rows: None,
                        }
                    })
                })
            });
            partials.chain(sums).collect()
        })
        .collect();
    let text = serde_json::to_string(&per_rank).unwrap_or_default();
    let ctx = ir::context_of(plan.op);
    ir::set_attr(plan.op, REDUCTION_COPIES_ATTR, ir::string_attr(ctx, &text));
}
