//! `chunk-expand-collectives`: turn collectives into explicit transfers.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration, `ChunkExpandCollectives` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

use crate::checked;
use crate::plan::{
    Collective, MAX_RANK_COPIES, Plan, Produce, fail, internal, plans,
    slots::{RING_SLOTS, SLOTS_ATTR, SlotRing},
};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkExpandCollectivesOptions, PassOptions, RustPass};
use synco_chunk::{
    PassFailed,
    attrs::{self, CollectiveKind},
};
use synco_ir::{self as ir, Builder, Op};

/// The body of `chunk-expand-collectives`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkExpandCollectivesOptions;

    fn run(
        module: OperationRef,
        options: &ChunkExpandCollectivesOptions,
    ) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkExpandCollectivesOptions::ARGUMENT;

fn run(module: OperationRef, _options: &ChunkExpandCollectivesOptions) -> Result<(), PassFailed> {
    for plan in plans(module.to_raw()) {
        // New transfers: a flag layout laid out before does not hold.
        crate::plan::records::forget_flag_layout(plan.op);
        let mut transfers = plan.ops_named("chunk.transfer").len() as i64;
        // (Listed once: a scan of the plan per collective made expanding
        // thousands of them quadratic.)
        let produces = plan.produces();
        for collective in plan.collectives() {
            let op = collective.0;
            let expansion = Expansion::new(&plan, collective, &produces)?;
            let adds = expansion.transfer_count();
            transfers = transfers.saturating_add(adds);
            if transfers.saturating_mul(plan.world_size) > MAX_RANK_COPIES {
                return Err(fail(
                    op,
                    format!(
                        "chunk-expand-collectives: this collective expands into {adds} transfers, {transfers} in the plan, \
                         each checked on {} ranks: more than {MAX_RANK_COPIES} per-rank copies; use fewer chunks or ranks",
                        plan.world_size
                    ),
                ));
            }
            expansion.declare_staging()?;
            record_slots(&plan, collective)?;
            expansion.emit_all()?;
            ir::erase(op);
        }
        if plan.ops_named("chunk.transfer").len() as i64 != transfers {
            return Err(internal(
                plan.op,
                "the expansion made another number of transfers than it counted",
            ));
        }
    }
    Ok(())
}

/// Records `slots(n)` of a ring all-gather on its buffer
/// ([`SLOTS_ATTR`]), once it checks out: a ring (blocks arrive one per
/// step), one chunk per rank (a step reads one block), moved by the copy
/// engine or `ldst` (each launch copies the next step's block), of dimension 0 (a
/// block's rows, moved to a slot, keep the kernel's strides) and two slots.
/// (The op's verifier refuses a ring of zigzag blocks.)
fn record_slots(plan: &Plan, collective: Collective) -> Result<(), PassFailed> {
    let Some(slots) = collective.slots() else {
        return Ok(());
    };
    let op = collective.0;
    let refuse = |why: &str| {
        Err(fail(
            op,
            format!("chunk-expand-collectives: slots({slots}) {why}"),
        ))
    };
    if slots != RING_SLOTS {
        return refuse("is not built: a ring's blocks rotate through slots(2)");
    }
    if collective.kind() != CollectiveKind::AllGather
        || collective.algorithm() != Some(attrs::Algorithm::Ring)
    {
        return refuse("needs a ring all_gather (algorithm(ring)): its blocks arrive one per step");
    }
    if collective.chunks() != Some(1) {
        return refuse("needs chunks(1): each ring step reads one whole block");
    }
    if !matches!(
        collective.backend(),
        Some(attrs::Backend::CopyEngine | attrs::Backend::Ldst)
    ) {
        return refuse(
            "needs backend(copy_engine) or backend(ldst): each launch of the kernel has the copy engine push, or its copy programs pull, the next step's block",
        );
    }
    if collective.dim() != 0 || collective.split().is_some() {
        return refuse(
            "needs dim(0) without split: a block moved into a slot keeps the kernel's strides only as whole rows of dimension 0",
        );
    }
    let Some(buffer) = collective
        .src()
        .and_then(|name| plan.buffer(&name).cloned())
    else {
        return Err(fail(op, "chunk-expand-collectives: malformed collective"));
    };
    if SlotRing::new(&buffer.shape, plan.world_size).is_none() {
        return refuse(&format!(
            "needs dimension 0 of @{} ({} rows) split in {} blocks",
            buffer.name,
            buffer.shape.first().copied().unwrap_or(0),
            plan.world_size
        ));
    }
    let ctx = ir::context_of(buffer.op);
    ir::set_attr(
        buffer.op,
        SLOTS_ATTR,
        ir::int_attr_of(ir::i64_type(ctx), slots),
    );
    Ok(())
}

/// One collective being expanded.
struct Expansion<'p> {
    plan: &'p Plan,
    op: Op,
    kind: CollectiveKind,
    b: Builder,
    src: String,
    dst: String,
    dim: usize,
    rank: usize,
    chunks: i64,
    block: i64,
    rows: i64,
    /// `split(s)` of an all-gather: the dimension its chunks cut, and their
    /// width along it.
    split: Option<(usize, i64)>,
    /// `to(t)` of a re-sharding all-to-all (not `dim`).
    reshard_to: Option<usize>,
    sizes: Vec<i64>,
    backend: attrs::Backend,
    algorithm: attrs::Algorithm,
    reduce: Option<attrs::Reduction>,
    producers: Vec<String>,
    /// `blocks(zigzag)`: rank `o` owns half-blocks `o` and `2W - 1 - o`.
    zigzag: bool,
}

/// Rows along the collective's dimension: `owner`'s block, chunk `c`.
fn rows_of(owner: &str, block: i64, first: i64) -> String {
    format!("({owner}) * {block} + {first}")
}

impl<'p> Expansion<'p> {
    /// `produces`: the plan's `chunk.produce`s.
    fn new(
        plan: &'p Plan,
        collective: Collective,
        produces: &[Produce],
    ) -> Result<Self, PassFailed> {
        let (op, kind) = (collective.0, collective.kind());
        let algorithm = collective.algorithm().unwrap_or(attrs::Algorithm::Direct);
        if algorithm == attrs::Algorithm::Ring && kind != CollectiveKind::AllGather {
            return Err(fail(
                op,
                format!(
                    "chunk-expand-collectives: algorithm 'ring' is supported for all_gather only, not yet for {}; use 'direct'",
                    kind.keyword()
                ),
            ));
        }
        if collective.backend() == Some(attrs::Backend::Auto) {
            return Err(fail(
                op,
                "chunk-expand-collectives: backend(auto) has no backend yet; run chunk-select-backend first",
            ));
        }
        let Some(chunks) = collective.chunks() else {
            return Err(fail(
                op,
                "chunk-expand-collectives: chunks(auto) has no count yet; run chunk-select-chunk-size first",
            ));
        };
        let (Some(src), Some(dst)) = (collective.src(), collective.dst()) else {
            return Err(fail(op, "chunk-expand-collectives: malformed collective"));
        };
        let Some(src_buffer) = plan.buffer(&src) else {
            return Err(fail(
                op,
                format!("chunk-expand-collectives: no buffer @{src}"),
            ));
        };
        let dim = collective.dim();
        let block = src_buffer.shape[dim] / plan.world_size;
        let rows = block / chunks;
        let mut sizes = src_buffer.shape.clone();
        sizes[dim] = rows;
        let producers: Vec<String> = produces
            .iter()
            .filter(|p| p.buffer().as_deref() == Some(src.as_str()))
            .filter_map(|p| p.name())
            .collect();
        // A re-sharding all-to-all cuts its chunks along `to` too; of a
        // buffer kernel tiles produce, along `dim` (each rank's block in
        // the order its tiles finish it).
        let reshard_to = collective
            .reshard_to()
            .filter(|t| *t != dim && *t < sizes.len());
        let split = collective
            .split()
            .or(reshard_to.filter(|_| producers.is_empty()))
            .filter(|s| *s != dim && *s < sizes.len())
            .map(|s| (s, src_buffer.shape[s] / chunks));
        if let Some((s, width)) = split {
            sizes[dim] = block;
            sizes[s] = width;
        }
        let reduce = matches!(
            kind,
            CollectiveKind::ReduceScatter | CollectiveKind::AllReduce
        )
        .then(|| collective.reduction().unwrap_or(attrs::Reduction::Sum));
        let zigzag = collective.blocks() == attrs::BlockLayout::Zigzag;
        if zigzag && !producers.is_empty() {
            return Err(fail(
                op,
                format!(
                    "chunk-expand-collectives: a blocks(zigzag) all_gather of @{src}, which kernel tiles produce, is not supported; zigzag blocks are for consumed buffers"
                ),
            ));
        }
        if algorithm == attrs::Algorithm::Ring && !producers.is_empty() {
            return Err(fail(
                op,
                format!(
                    "chunk-expand-collectives: a ring all_gather of @{src}, which kernel tiles produce, is not supported yet; use 'direct'"
                ),
            ));
        }
        Ok(Expansion {
            plan,
            op,
            kind,
            b: Builder::before(op),
            dim,
            rank: src_buffer.shape.len(),
            chunks,
            block,
            rows,
            split,
            reshard_to,
            sizes,
            backend: collective.backend().unwrap_or(attrs::Backend::CopyEngine),
            algorithm,
            reduce,
            producers,
            zigzag,
            src,
            dst,
        })
    }

    /// Offsets of a box whose rows along the collective's dimension start
    /// at `rows`, 0 elsewhere.
    fn offsets(&self, rows: &str) -> Vec<String> {
        (0..self.rank)
            .map(|d| {
                if d == self.dim {
                    rows.to_string()
                } else {
                    "0".into()
                }
            })
            .collect()
    }

    fn peer(&self, k: i64) -> String {
        if k == 0 {
            "r".into()
        } else {
            format!("(r + {k}) mod {}", self.plan.world_size)
        }
    }

    /// Where chunk `c` of `owner`'s block of an all-gather lies (the same
    /// place on every rank): a range of rows of the block, of its columns
    /// with `split(s)`, or of one of its zigzag half-blocks.
    fn gathered_at(&self, owner: &str, c: i64) -> Vec<String> {
        match self.split {
            Some((s, width)) => {
                let mut at = self.offsets(&rows_of(owner, self.block, 0));
                at[s] = (c * width).to_string();
                at
            }
            None if self.zigzag => self.offsets(&self.zigzag_rows(owner, c)),
            None => self.offsets(&rows_of(owner, self.block, c * self.rows)),
        }
    }

    /// The first row of `owner`'s chunk `c` in a zigzag all-gather: chunks
    /// `0 .. n/2` cut its half-block `owner`, the others its half-block
    /// `2W - 1 - owner`.
    fn zigzag_rows(&self, owner: &str, c: i64) -> String {
        let (half, per_half) = (self.block / 2, self.chunks / 2);
        let within = (c % per_half) * self.rows;
        if c < per_half {
            rows_of(owner, half, within)
        } else {
            let last = 2 * self.plan.world_size - 1;
            format!("({last} - ({owner})) * {half} + {within}")
        }
    }

    /// How many transfers [`Expansion::emit_all`] makes.
    fn transfer_count(&self) -> i64 {
        let per_phase = self.plan.world_size.saturating_mul(self.chunks);
        match self.kind {
            CollectiveKind::AllReduce if self.algorithm == attrs::Algorithm::OneShot => {
                per_phase.saturating_mul(self.plan.world_size)
            }
            CollectiveKind::AllReduce => per_phase.saturating_mul(2),
            _ => per_phase,
        }
    }

    fn emit_all(&self) -> Result<(), PassFailed> {
        if self.algorithm == attrs::Algorithm::Ring {
            return self.emit_ring();
        }
        let w = self.plan.world_size;
        let (n, block, rows) = (self.chunks, self.block, self.rows);
        for k in 0..w {
            let peer = self.peer(k);
            for c in 0..n {
                let order = k * n + c;
                let name = format!("{}_p{k}_c{c}", self.dst);
                match self.kind {
                    CollectiveKind::AllGather => {
                        let at = self.gathered_at(&peer, c);
                        // A produced block leaves once its tiles are done
                        // (its own block stays in place).
                        let after: &[String] = if k == 0 { &[] } else { &self.producers };
                        self.transfer(
                            &name,
                            k,
                            &self.src,
                            at.clone(),
                            &peer,
                            &self.dst,
                            at,
                            order,
                            None,
                            None,
                            after,
                        )?;
                    }
                    CollectiveKind::AllToAll => {
                        let (from, to) = match self.split {
                            // Block r (along dim) of the peer's rows c,
                            // into the peer's block (along `to`).
                            Some((t, width)) => {
                                let mut from = self.offsets(&rows_of("r", block, 0));
                                from[t] = (c * width).to_string();
                                let mut to = self.offsets("0");
                                let stacked = width * self.chunks;
                                to[t] = rows_of(&peer, stacked, c * width);
                                (from, to)
                            }
                            None => {
                                let from = self.offsets(&rows_of("r", block, c * rows));
                                let to = match self.reshard_to {
                                    // Chunk c of block r of what the peer's
                                    // tiles produce, into the peer's slot
                                    // along `to`, at the chunk's rows.
                                    Some(t) => {
                                        let mut to = self.offsets(&(c * rows).to_string());
                                        to[t] = rows_of(&peer, self.sizes[t], 0);
                                        to
                                    }
                                    None => self.offsets(&rows_of(&peer, block, c * rows)),
                                };
                                (from, to)
                            }
                        };
                        // (Even the rank's own block: a copy into `dst`,
                        // after the tiles that produce it.)
                        self.transfer(
                            &name,
                            k,
                            &self.src,
                            from,
                            &peer,
                            &self.dst,
                            to,
                            order,
                            None,
                            None,
                            &self.producers,
                        )?;
                    }
                    CollectiveKind::ReduceScatter => {
                        let from = self.offsets(&rows_of("r", block, c * rows));
                        let to = self.offsets(&format!("{}", c * rows));
                        self.transfer(
                            &name,
                            k,
                            &self.src,
                            from,
                            &peer,
                            &self.dst,
                            to,
                            order,
                            None,
                            self.reduce,
                            &self.producers,
                        )?;
                    }
                    CollectiveKind::AllReduce if self.algorithm == attrs::Algorithm::OneShot => {
                        // Every block of the peer's partial, chunk by chunk.
                        for blk in 0..w {
                            let at = self.offsets(&format!("{}", blk * block + c * rows));
                            let name = format!("{}_p{k}_b{blk}_c{c}", self.dst);
                            let order = (k * w + blk) * n + c;
                            self.transfer(
                                &name,
                                k,
                                &self.src,
                                at.clone(),
                                &peer,
                                &self.dst,
                                at,
                                order,
                                None,
                                self.reduce,
                                &self.producers,
                            )?;
                        }
                    }
                    CollectiveKind::AllReduce => {
                        // Phase 1: block r of every partial, reduced into block r of C.
                        let own = self.offsets(&rows_of("r", block, c * rows));
                        let rs = format!("{}_rs_p{k}_c{c}", self.dst);
                        self.transfer(
                            &rs,
                            k,
                            &self.src,
                            own.clone(),
                            &peer,
                            &self.dst,
                            own,
                            order,
                            Some(attrs::CollectivePhase::ReduceScatter),
                            self.reduce,
                            &self.producers,
                        )?;
                    }
                }
            }
        }
        if self.kind == CollectiveKind::AllReduce && self.algorithm != attrs::Algorithm::OneShot {
            // Phase 2: the other blocks of C, each after its reduction.
            for k in 0..w {
                let peer = self.peer(k);
                for c in 0..n {
                    let at = self.offsets(&rows_of(&peer, block, c * rows));
                    let reduced: Vec<String> = (0..w)
                        .map(|j| format!("{}_rs_p{j}_c{c}", self.dst))
                        .collect();
                    let ag = format!("{}_ag_p{k}_c{c}", self.dst);
                    self.transfer(
                        &ag,
                        k,
                        &self.dst,
                        at.clone(),
                        &peer,
                        &self.dst,
                        at,
                        w * n + k * n + c,
                        Some(attrs::CollectivePhase::AllGather),
                        None,
                        &reduced,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// A ring all-gather: in step `k` (1 to `W - 1`) rank `r` receives chunk
    /// `c` of block `r + k` from its neighbour `r + 1`, which received it
    /// in step `k - 1` (its own block in step 0): `@<dst>_s<k>_c<c>`, after
    /// `@<dst>_s<k-1>_c<c>` for `k >= 2` (on the rank it reads from, the
    /// neighbour). Blocks arrive in the order `r, r + 1, r + 2, ...`, the
    /// direct gather's: a kernel loop reads them in two runs of rows (its
    /// present path, passes/docs/present-path.md).
    fn emit_ring(&self) -> Result<(), PassFailed> {
        let w = self.plan.world_size;
        let n = self.chunks;
        let neighbour = if w == 1 {
            "r".to_string()
        } else {
            format!("(r + 1) mod {w}")
        };
        for k in 0..w {
            let owner = if k == 0 {
                "r".to_string()
            } else {
                format!("(r + {k}) mod {w}")
            };
            for c in 0..n {
                let at = self.gathered_at(&owner, c);
                let after = if k >= 2 {
                    vec![format!("{}_s{}_c{c}", self.dst, k - 1)]
                } else {
                    Vec::new()
                };
                let (src_rank, step) = if k == 0 {
                    ("r", 0)
                } else {
                    (neighbour.as_str(), 1)
                };
                self.transfer(
                    &format!("{}_s{k}_c{c}", self.dst),
                    step,
                    &self.src,
                    at.clone(),
                    src_rank,
                    &self.dst,
                    at,
                    k * n + c,
                    None,
                    None,
                    &after,
                )?;
            }
        }
        Ok(())
    }

    /// The staging buffer of a reduce-scatter moved by the copy engine, or
    /// of a one-shot all-reduce of more than 2 ranks (see the module docs);
    /// nothing for other collectives.
    fn declare_staging(&self) -> Result<(), PassFailed> {
        let w = self.plan.world_size;
        let one_shot =
            self.kind == CollectiveKind::AllReduce && self.algorithm == attrs::Algorithm::OneShot;
        let scatters = self.kind == CollectiveKind::ReduceScatter
            || (self.kind == CollectiveKind::AllReduce && !one_shot);
        // Rows of the staging buffer along the collective's dimension.
        let rows = if scatters && self.backend == attrs::Backend::CopyEngine {
            // Within the buffer: W - 1 of its W blocks.
            self.block * (w - 1)
        } else if one_shot && w > 2 {
            checked::product(
                &[self.block, w, w - 2],
                self.op,
                &format!("{NAME}: the rows of the staging buffer of @{}", self.src),
            )?
        } else {
            return Ok(());
        };
        let (name, shape, element) =
            crate::plan::staging_decl(self.plan, &self.src, self.dim, rows, self.op, NAME)?;
        crate::plan::build_buffer(
            &self.b,
            self.op,
            &name,
            &shape,
            &element,
            &[crate::plan::STAGING_ATTR],
        )?;
        Ok(())
    }

    /// The `group` of the transfers of `phase`: `all_gather_A`,
    /// `all_reduce_C_rs`, ... (the plan verifier checks coverage per group).
    fn group_name(&self, phase: Option<attrs::CollectivePhase>) -> String {
        let suffix = match phase {
            None => "",
            Some(attrs::CollectivePhase::ReduceScatter) => "_rs",
            Some(attrs::CollectivePhase::AllGather) => "_ag",
        };
        format!("{}_{}{suffix}", self.kind.keyword(), self.dst)
    }

    /// Emits one transfer from `src_rank`'s `src_buf` to this rank's
    /// `dst_buf` (`k = 0`: a local transfer).
    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &self,
        name: &str,
        k: i64,
        src_buf: &str,
        src_offsets: Vec<String>,
        src_rank: &str,
        dst_buf: &str,
        dst_offsets: Vec<String>,
        order: i64,
        phase: Option<attrs::CollectivePhase>,
        reduce: Option<attrs::Reduction>,
        after: &[String],
    ) -> Result<(), PassFailed> {
        let ctx = self.b.ctx;
        let sizes = self
            .sizes
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let region = |buf: &str, offsets: Vec<String>| {
            ir::parse_attr(
                ctx,
                &format!(
                    "#chunk.region<@{buf}[(r) -> ({})] [{sizes}]>",
                    offsets.join(", ")
                ),
            )
        };
        let rank_map = |expr: &str| ir::parse_attr(ctx, &format!("affine_map<(r) -> ({expr})>"));
        let (Some(src), Some(dst), Some(src_rank), Some(dst_rank)) = (
            region(src_buf, src_offsets),
            region(dst_buf, dst_offsets),
            rank_map(src_rank),
            rank_map("r"),
        ) else {
            return Err(fail(
                self.op,
                "chunk-expand-collectives: internal error building a region",
            ));
        };
        let gathers = matches!(
            self.kind,
            CollectiveKind::AllGather | CollectiveKind::AllToAll
        );
        // The rank's own block: a copy within the rank, by the copy engine
        // (before the kernel, or after the tiles that produce it), or by
        // the copy programs that pull the peers' blocks of a produced
        // buffer.
        let sm_backend = matches!(self.backend, attrs::Backend::Ldst | attrs::Backend::Tma);
        let (mode, backend) = if k == 0 {
            let own = if sm_backend && !self.producers.is_empty() && self.reshard_to.is_some() {
                self.backend
            } else {
                attrs::Backend::CopyEngine
            };
            (attrs::TransferMode::Local, own)
        } else if gathers && self.backend == attrs::Backend::CopyEngine {
            (attrs::TransferMode::Push, self.backend)
        } else {
            (attrs::TransferMode::Pull, self.backend)
        };
        let i32t = ir::i32_type(ctx);
        let mut attributes = vec![
            ("sym_name", ir::string_attr(ctx, name)),
            ("mode", ir::int_attr_of(i32t, mode as i64)),
            ("backend", ir::int_attr_of(i32t, backend as i64)),
            ("src", src),
            ("src_rank", src_rank),
            ("dst", dst),
            ("dst_rank", dst_rank),
            ("order", ir::int_attr_of(ir::i64_type(ctx), order)),
            ("collective", ir::int_attr_of(i32t, self.kind as i64)),
            ("group", ir::string_attr(ctx, &self.group_name(phase))),
        ];
        if let Some(phase) = phase {
            attributes.push(("phase", ir::int_attr_of(i32t, phase as i64)));
        }
        if let Some(reduce) = reduce {
            attributes.push(("reduce", ir::int_attr_of(i32t, reduce as i64)));
        }
        if !after.is_empty() {
            let list = after
                .iter()
                .map(|a| format!("@{a}"))
                .collect::<Vec<_>>()
                .join(", ");
            let Some(attr) = ir::parse_attr(ctx, &format!("[{list}]")) else {
                return Err(internal(self.op, "cannot build the `after` list"));
            };
            attributes.push(("after", attr));
        }
        self.b.op("chunk.transfer", &[], &[], &attributes);
        Ok(())
    }
}
