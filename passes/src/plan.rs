//! Reading `chunk.plan` ops, and what the passes share about them.

use melior::ir::AffineMap;
use synco_chunk::{Diagnostic, PassFailed, attrs};
use synco_ir::{self as ir, Op};

/// A `chunk.buffer`.
#[derive(Clone, Debug)]
pub struct BufferDecl {
    pub op: Op,
    pub name: String,
    pub shape: Vec<i64>,
    /// The element type as MLIR prints it (`bf16`).
    pub element: String,
    /// The kernel argument it is bound to.
    pub arg: Option<usize>,
    /// Declared by a pass as scratch of the fused operation (attribute
    /// [`STAGING_ATTR`]): the runtime allocates it, nobody binds it.
    pub staging: bool,
    /// The trace buffer `chunk-trace-tiles` declared (attribute
    /// [`TRACE_ATTR`]; also `staging`).
    pub trace: bool,
}

/// Discardable unit attribute on a `chunk.buffer` that a pass declared as
/// the fused operation's scratch (the copy engine's staging buffer of a
/// reduction): the launch manifest marks it, and the runtime allocates it
/// with the kernel.
pub const STAGING_ATTR: &str = "synco.staging";

/// Discardable unit attribute on the `chunk.buffer` that holds the kernel's
/// trace records (see `chunk-trace-tiles`).
pub const TRACE_ATTR: &str = "synco.trace";

impl BufferDecl {
    pub fn element_bytes(&self) -> Option<i64> {
        Some(match self.element.as_str() {
            "i8" => 1,
            "bf16" | "f16" | "i16" => 2,
            "f32" | "i32" => 4,
            "f64" | "i64" => 8,
            _ => return None,
        })
    }
}

/// A `chunk.plan`, with its buffers.
#[derive(Clone, Debug)]
pub struct Plan {
    pub op: Op,
    pub name: String,
    pub world_size: i64,
    pub kernel: Option<String>,
    pub buffers: Vec<BufferDecl>,
}

impl Plan {
    pub fn read(op: Op) -> Option<Plan> {
        let body = ir::regions(op)
            .first()
            .copied()
            .and_then(|r| ir::blocks(r).first().copied())?;
        let buffers = ir::ops_in(body)
            .into_iter()
            .filter(|o| ir::op_name(*o) == "chunk.buffer")
            .filter_map(read_buffer)
            .collect();
        Some(Plan {
            op,
            name: ir::str_attr(op, "sym_name")?,
            world_size: ir::int_attr(op, "world_size")?,
            kernel: ir::attr(op, "kernel").and_then(ir::symbol_value),
            buffers,
        })
    }

    pub fn body_ops(&self) -> Vec<Op> {
        ir::regions(self.op)
            .first()
            .and_then(|r| ir::blocks(*r).first().copied())
            .map(ir::ops_in)
            .unwrap_or_default()
    }

    pub fn ops_named(&self, name: &str) -> Vec<Op> {
        self.body_ops()
            .into_iter()
            .filter(|o| ir::op_name(*o) == name)
            .collect()
    }

    pub fn buffer(&self, name: &str) -> Option<&BufferDecl> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// The ops named `op_name` (`chunk.consume`, `chunk.produce`) whose
    /// `buffer` is `buffer`, in plan order.
    pub fn ops_on(&self, op_name: &str, buffer: &str) -> Vec<Op> {
        self.ops_named(op_name)
            .into_iter()
            .filter(|o| {
                ir::attr(*o, "buffer").and_then(ir::symbol_value).as_deref() == Some(buffer)
            })
            .collect()
    }

    /// The `chunk.produce` whose kernel tiles write buffer `name` (the
    /// plan verifier allows at most one).
    pub fn producer_of(&self, name: &str) -> Option<Op> {
        self.ops_on("chunk.produce", name).first().copied()
    }

    /// The first `chunk.consume` of buffer `name` (the one its flags are
    /// laid out for, see [`flag_layout`]).
    pub fn consumer_of(&self, name: &str) -> Option<Op> {
        self.ops_on("chunk.consume", name).first().copied()
    }

    /// [`Plan::kernel_in`] without the error: `None` where it would fail.
    pub fn find_kernel_in(&self, module: Op) -> Option<Op> {
        match &self.kernel {
            Some(kernel) => find_kernel(module, kernel),
            None => match ir::find_all(module, "tt.func").as_slice() {
                [only] => Some(*only),
                _ => None,
            },
        }
    }

    /// The plan's kernel (`tt.func`) in `module`, or an error at the plan.
    /// A plan without `kernel(@...)` fuses into the module's only `tt.func`.
    pub fn kernel_in(&self, module: Op) -> Result<Op, PassFailed> {
        let Some(kernel) = &self.kernel else {
            let funcs = ir::find_all(module, "tt.func");
            if let [only] = funcs.as_slice() {
                return Ok(*only);
            }
            Diagnostic::error(
                loc(self.op),
                format!(
                    "plan @{} names no kernel and the module has {} tt.func ops: add kernel(@name)",
                    self.name,
                    funcs.len()
                ),
            )
            .emit();
            return Err(PassFailed);
        };
        find_kernel(module, kernel).ok_or_else(|| {
            fail(
                self.op,
                format!(
                    "plan @{} fuses into @{kernel}, but the module has no tt.func of that name",
                    self.name
                ),
            )
        })
    }
}

fn read_buffer(op: Op) -> Option<BufferDecl> {
    let ty = ir::attr(op, "type").and_then(ir::type_attr_value)?;
    let text = ir::print_type(ty);
    let inner = text.strip_prefix("!chunk.buffer<")?.strip_suffix('>')?;
    let mut parts: Vec<&str> = inner.split('x').collect();
    let element = parts.pop()?.to_string();
    let shape = parts
        .iter()
        .map(|d| d.parse().ok())
        .collect::<Option<Vec<i64>>>()?;
    Some(BufferDecl {
        op,
        name: ir::str_attr(op, "sym_name")?,
        shape,
        element,
        arg: ir::int_attr(op, "arg").map(|a| a as usize),
        staging: ir::attr(op, STAGING_ATTR).is_some(),
        trace: ir::attr(op, TRACE_ATTR).is_some(),
    })
}

/// Builds `chunk.buffer @name : !chunk.buffer<shape x element>` with `b`,
/// carrying the unit attributes `markers` (e.g. [`STAGING_ATTR`]); an
/// internal error at `at` if MLIR refuses it.
pub fn build_buffer(
    b: &synco_ir::Builder,
    at: Op,
    name: &str,
    shape: &[i64],
    element: &str,
    markers: &[&str],
) -> Result<Op, PassFailed> {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    let text = format!("!chunk.buffer<{}x{element}>", dims.join("x"));
    let (Some(ty), Some(unit)) = (ir::parse_type(b.ctx, &text), ir::parse_attr(b.ctx, "unit"))
    else {
        return Err(internal(at, &format!("cannot build the type {text}")));
    };
    let mut attributes = vec![
        ("sym_name", ir::string_attr(b.ctx, name)),
        ("type", ir::type_attr(ty)),
    ];
    attributes.extend(markers.iter().map(|m| (*m, unit)));
    Ok(b.op("chunk.buffer", &[], &[], &attributes))
}

/// Declares `chunk.buffer @name` (see [`build_buffer`]) after the plan's
/// other buffers and appends its `synco_buffer_<name>` argument to
/// `kernel` (the ABI lists buffers in plan order); returns the argument.
/// Errors name `pass`.
pub fn declare_kernel_buffer(
    plan: &Plan,
    kernel: Op,
    name: &str,
    shape: &[i64],
    element: &str,
    markers: &[&str],
    pass: &str,
) -> Result<synco_ir::Value, PassFailed> {
    let ctx = ir::context_of(plan.op);
    let Some(body) = ir::regions(plan.op)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
    else {
        return Err(internal(plan.op, "a plan without a body"));
    };
    let last_buffer = ir::ops_in(body)
        .into_iter()
        .filter(|o| ir::op_name(*o) == "chunk.buffer")
        .last();
    let b = match last_buffer.and_then(ir::next_op) {
        Some(next) => synco_ir::Builder::before(next),
        None => synco_ir::Builder::at_end(ctx, body, ir::location_of(plan.op)),
    }
    .with_loc(ir::location_of(plan.op));
    build_buffer(&b, plan.op, name, shape, element, markers)?;
    crate::abi::append_buffer_args(kernel, &[(name, element)], pass)?;
    crate::abi::buffer_arg(kernel, name).ok_or_else(|| {
        internal(
            kernel,
            &format!("the argument of @{name} is not where the ABI says"),
        )
    })
}

/// The plan's kernel and its ABI arguments, or an error saying that
/// `chunk-bind-kernel` must run before `pass`.
pub fn bound_kernel(
    plan: &Plan,
    module: Op,
    pass: &str,
) -> Result<(Op, crate::abi::AbiArgs), PassFailed> {
    let kernel = plan.kernel_in(module)?;
    let abi = crate::abi::abi_args(kernel).ok_or_else(|| {
        fail(
            plan.op,
            format!("{pass}: the kernel has no ABI arguments; run chunk-bind-kernel first"),
        )
    })?;
    Ok((kernel, abi))
}

/// Every `chunk.plan` directly in `module`.
pub fn plans(module: Op) -> Vec<Plan> {
    ir::regions(module)
        .into_iter()
        .flat_map(ir::blocks)
        .flat_map(ir::ops_in)
        .filter(|o| ir::op_name(*o) == "chunk.plan")
        .filter_map(Plan::read)
        .collect()
}

pub fn find_kernel(module: Op, name: &str) -> Option<Op> {
    ir::find_all(module, "tt.func")
        .into_iter()
        .find(|f| ir::str_attr(*f, "sym_name").as_deref() == Some(name))
}

/// A melior location for diagnostics at `op`.
pub fn loc<'c>(op: Op) -> melior::ir::Location<'c> {
    // SAFETY: the op is live for the pass; locations are owned by the
    // context, which outlives the diagnostic.
    unsafe { melior::ir::Location::from_raw(ir::location_of(op)) }
}

/// Emits an error at `op` and returns the pass failure.
pub fn fail(op: Op, message: impl Into<String>) -> synco_chunk::PassFailed {
    Diagnostic::error(loc(op), message).emit();
    synco_chunk::PassFailed
}

/// Reports a broken invariant of the pass itself (an input the verifiers
/// should have refused) at `op`, instead of failing without a word.
pub fn internal(op: Op, what: &str) -> synco_chunk::PassFailed {
    fail(
        op,
        format!("internal error in Synco: {what}; please report it with this input"),
    )
}

/// What a range of flags counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagKind {
    /// A consumed buffer's chunks: a flag per chunk, set to the epoch when
    /// the chunk has arrived.
    Arrival,
    /// A reduced buffer's chunks (see `chunk-fuse-reductions`): on the
    /// chunk's owner, a counter of peer tiles whose partial is ready; on
    /// every other rank, a counter of the owner's tiles that consumed this
    /// rank's partial.
    Reduction,
    /// An output that kernel tiles produce and an all-gather sends to every
    /// peer (see `chunk-fuse-gathers`): per chunk, a counter of the rank's
    /// tiles that stored it (chunk `c` of rank `o`'s block, global chunk
    /// `g = o * chunks_per_rank + c`, is flag `base + g`). Nothing waits
    /// for its arrival on the peers but the end of their launch, which the
    /// runtime's streams order.
    Output,
}

/// Where a buffer's chunk flags live in the kernel's flag array.
#[derive(Clone, Debug)]
pub struct FlagRange {
    pub kind: FlagKind,
    /// Flags per chunk: 1, or 2 for an all-reduce (one-shot: arrivals, then
    /// acknowledgements; two-shot: the reduce-scatter's counters, then the
    /// gathered rows'), each a range of `W * chunks_per_rank`; `3 + W` for
    /// a reduce-scatter moved by the copy engine, `6 + W` for a two-shot
    /// all-reduce moved by it (see `chunk-fuse-reductions`); 1 for a
    /// gathered output ([`FlagKind::Output`]).
    pub counters_per_chunk: i64,
    pub buffer: String,
    /// The dimension chunks split.
    pub dim: usize,
    pub rows_per_chunk: i64,
    pub chunks_per_rank: i64,
    /// Index of the buffer's first chunk flag.
    pub base: i64,
    /// The dimension whose blocks the ranks own: `dim`, or another one for
    /// an all-gather whose chunks cut a different dimension (`split`).
    pub rank_dim: usize,
    /// Each rank's block along `rank_dim`.
    pub rank_block: i64,
}

impl FlagRange {
    pub fn count(&self, world_size: i64) -> i64 {
        self.chunks_per_rank * world_size * self.counters_per_chunk
    }

    /// The flag of the chunk whose box starts at `offsets` (chunks of rank
    /// `o` are flags `o * chunks_per_rank ..`, in order along `dim`).
    pub fn flag_at(&self, offsets: &[i64]) -> Option<i64> {
        let along = *offsets.get(self.dim)?;
        if self.rank_dim == self.dim {
            return Some(self.base + along / self.rows_per_chunk);
        }
        let owner = offsets.get(self.rank_dim)? / self.rank_block;
        Some(self.base + owner * self.chunks_per_rank + along / self.rows_per_chunk)
    }
}

/// The flag layout of a plan whose collectives were expanded: one flag per
/// chunk of every consumed buffer, buffers in the order of their
/// `chunk.consume` ops, chunks in row order; then the counters of every
/// reduced buffer that kernel tiles produce (in `chunk.produce` order);
/// then those of every produced buffer that an all-gather sends
/// ([`FlagKind::Output`]).
pub fn flag_layout(plan: &Plan) -> Result<Vec<FlagRange>, PassFailed> {
    let mut out: Vec<FlagRange> = Vec::new();
    let mut base = 0;
    for consume in plan.ops_named("chunk.consume") {
        let name = ir::attr(consume, "buffer")
            .and_then(ir::symbol_value)
            .unwrap_or_default();
        if out.iter().any(|r| r.buffer == name) {
            continue;
        }
        let dim = ir::int_attr(consume, "dim").unwrap_or(0) as usize;
        let transfers: Vec<Op> = plan
            .ops_named("chunk.transfer")
            .into_iter()
            .filter(|t| dst_buffer(*t).as_deref() == Some(&name))
            .collect();
        let Some(first) = transfers.first() else {
            return Err(fail(
                consume,
                format!(
                    "@{name} is consumed but no chunk.transfer writes it; run chunk-expand-collectives first"
                ),
            ));
        };
        let Some(buffer) = plan.buffer(&name) else {
            return Err(fail(consume, format!("no buffer @{name}")));
        };
        let sizes = region_sizes(*first).unwrap_or_default();
        let rows_per_chunk = sizes.get(dim).copied().unwrap_or(0);
        // Ranks own blocks of `dim`, unless the consumer reads every rank's
        // block (`source`): then the blocks lie along the dimension where
        // each chunk lands in its source rank's block (another one for an
        // all-gather's split).
        let rank_dim = if ir::attr(consume, "source").is_some() {
            source_block_dim(plan, &transfers, &buffer.shape).ok_or_else(|| {
                fail(
                    consume,
                    format!("the chunks of @{name} do not land in their source rank's block of any one dimension; it cannot be read per source"),
                )
            })?
        } else {
            dim
        };
        let block = if rank_dim == dim {
            buffer.shape[dim] / plan.world_size
        } else {
            buffer.shape[dim]
        };
        let rank_block = buffer.shape[rank_dim] / plan.world_size;
        // A tile waits for the one chunk holding its block of `dim`: the
        // chunk must hold everything else the tile reads, all of the other
        // dimensions (and all of the rank's block along `rank_dim`).
        let partial = (0..buffer.shape.len()).find(|d| {
            let full = if *d == rank_dim {
                rank_block
            } else {
                buffer.shape[*d]
            };
            *d != dim && sizes.get(*d) != Some(&full)
        });
        if let Some(d) = partial {
            let per_source = ir::attr(consume, "source").is_none()
                && source_block_dim(plan, &transfers, &buffer.shape).is_some_and(|b| b != dim);
            return Err(fail(
                consume,
                if per_source {
                    format!(
                        "@{name}'s chunks cut dimension {dim} of every rank's block (split): tiles read every rank's block, so they must wait per source: add source(\"<the kernel's loop over ranks>\")"
                    )
                } else {
                    format!(
                        "chunks of @{name} cut dimension {d} as well as {dim}: a tile would read several chunks but wait for one; consume it along the dimension the chunks cut"
                    )
                },
            ));
        }
        if rows_per_chunk <= 0 || block % rows_per_chunk != 0 {
            return Err(fail(
                *first,
                format!("chunks of @{name} do not split its per-rank blocks evenly"),
            ));
        }
        let range = FlagRange {
            kind: FlagKind::Arrival,
            counters_per_chunk: 1,
            buffer: name,
            dim,
            rows_per_chunk,
            chunks_per_rank: block / rows_per_chunk,
            base,
            rank_dim,
            rank_block,
        };
        base += range.count(plan.world_size);
        out.push(range);
    }
    let reduced = reduced_buffers(plan);
    for produce in plan.ops_named("chunk.produce") {
        let name = ir::attr(produce, "buffer")
            .and_then(ir::symbol_value)
            .unwrap_or_default();
        if !reduced.contains(&name) || out.iter().any(|r| r.buffer == name) {
            continue;
        }
        let dim = ir::int_attr(produce, "dim").unwrap_or(0) as usize;
        let Some(buffer) = plan.buffer(&name) else {
            return Err(fail(produce, format!("no buffer @{name}")));
        };
        let rows_per_chunk = plan
            .ops_named("chunk.transfer")
            .into_iter()
            .filter(|t| ir::attr(*t, "reduce").is_some())
            .filter_map(|t| ir::attr(t, "src").and_then(region_parts))
            .find(|(b, _, _)| *b == name)
            .and_then(|(_, _, sizes)| sizes.get(dim).copied())
            .unwrap_or(0);
        let block = buffer.shape.get(dim).copied().unwrap_or(0) / plan.world_size;
        if rows_per_chunk <= 0 || block % rows_per_chunk != 0 {
            return Err(fail(
                produce,
                format!("chunks of @{name} do not split its per-rank blocks evenly"),
            ));
        }
        let kind = reduction_kind(plan, &name);
        let counters_per_chunk = match kind {
            // Produced, consumed and copied counters per chunk, and an
            // arrival flag per chunk and source rank; a two-shot
            // all-reduce's reduced, sent and gathered too.
            _ if staged(plan, &name) => {
                let gather = if kind == Some(ReductionKind::AllReduceTwoShot) {
                    3
                } else {
                    0
                };
                3 + plan.world_size + gather
            }
            // A one-shot all-reduce's partials counter and the peers'
            // acknowledgements.
            Some(ReductionKind::AllReduce) => 2,
            // A two-shot all-reduce on SMs: those, the peers' sums (its
            // `gathered` counter) and the owner's tiles done with their sums
            // (`finished`, the last of which waits for the peers' sums).
            Some(ReductionKind::AllReduceTwoShot) => 3,
            _ => 1,
        };
        let range = FlagRange {
            kind: FlagKind::Reduction,
            counters_per_chunk,
            buffer: name,
            dim,
            rows_per_chunk,
            chunks_per_rank: block / rows_per_chunk,
            base,
            rank_dim: dim,
            rank_block: block,
        };
        base += range.count(plan.world_size);
        out.push(range);
    }
    let outputs = gathered_outputs(plan);
    for produce in plan.ops_named("chunk.produce") {
        let name = ir::attr(produce, "buffer")
            .and_then(ir::symbol_value)
            .unwrap_or_default();
        if !outputs.contains(&name) || out.iter().any(|r| r.buffer == name) {
            continue;
        }
        let dim = ir::int_attr(produce, "dim").unwrap_or(0) as usize;
        let Some(buffer) = plan.buffer(&name) else {
            return Err(fail(produce, format!("no buffer @{name}")));
        };
        let transfers: Vec<Op> = plan
            .ops_named("chunk.transfer")
            .into_iter()
            .filter(|t| dst_buffer(*t).as_deref() == Some(name.as_str()))
            .collect();
        let Some(rank_dim) = source_block_dim(plan, &transfers, &buffer.shape) else {
            return Err(fail(
                produce,
                format!(
                    "the chunks of @{name} do not land in their source rank's block of any one dimension"
                ),
            ));
        };
        let rank_block = buffer.shape[rank_dim] / plan.world_size;
        let extent = if dim == rank_dim {
            rank_block
        } else {
            buffer.shape.get(dim).copied().unwrap_or(0)
        };
        let rows_per_chunk = transfers
            .first()
            .and_then(|t| region_sizes(*t))
            .and_then(|sizes| sizes.get(dim).copied())
            .unwrap_or(0);
        if rows_per_chunk <= 0 || extent % rows_per_chunk != 0 {
            return Err(fail(
                produce,
                format!(
                    "the all-gather's chunks of @{name} do not cut dimension {dim}, along which its tiles are produced, into equal parts of each rank's block"
                ),
            ));
        }
        let range = FlagRange {
            kind: FlagKind::Output,
            counters_per_chunk: 1,
            buffer: name,
            dim,
            rows_per_chunk,
            chunks_per_rank: extent / rows_per_chunk,
            base,
            rank_dim,
            rank_block,
        };
        base += range.count(plan.world_size);
        out.push(range);
    }
    Ok(out)
}

/// Buffers that kernel tiles produce and non-reducing transfers send to
/// other ranks (an all-gather of a kernel's output).
pub fn gathered_outputs(plan: &Plan) -> Vec<String> {
    let produced: Vec<String> = plan
        .ops_named("chunk.produce")
        .into_iter()
        .filter_map(|p| ir::attr(p, "buffer").and_then(ir::symbol_value))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for t in plan.ops_named("chunk.transfer") {
        if let Some(name) = plain_send_source(t)
            && produced.contains(&name)
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// A transfer's mode (`push`, `pull` or `local`).
pub fn transfer_mode(t: Op) -> Option<attrs::TransferMode> {
    ir::int_attr(t, "mode").and_then(attrs::TransferMode::from_value)
}

/// Whether transfer `t` copies within one rank (mode `local`).
pub fn is_local(t: Op) -> bool {
    transfer_mode(t) == Some(attrs::TransferMode::Local)
}

/// The buffer that transfer `t` reads when it sends data unchanged to
/// another rank (a gather's chunk; not a reduction's, nor a copy within a
/// rank), or `None`.
pub fn plain_send_source(t: Op) -> Option<String> {
    if is_local(t) || ir::attr(t, "reduce").is_some() {
        return None;
    }
    ir::attr(t, "src")
        .and_then(region_parts)
        .map(|(name, _, _)| name)
}

/// The dimension `d` along which every transfer of `transfers` writes into
/// the block (`shape[d] / W` wide) of the rank it reads from: where a
/// gathered buffer keeps each source rank's block.
fn source_block_dim(plan: &Plan, transfers: &[Op], shape: &[i64]) -> Option<usize> {
    let placed: Vec<(i64, Vec<i64>)> = transfers
        .iter()
        .map(|t| {
            let offsets = region_offsets(ir::attr(*t, "dst")?, 0)?;
            Some((rank_at(*t, "src_rank", 0)?, offsets))
        })
        .collect::<Option<_>>()?;
    (0..shape.len()).find(|d| {
        let block = shape[*d] / plan.world_size;
        block > 0
            && placed
                .iter()
                .all(|(src, offsets)| offsets.get(*d).is_some_and(|o| o / block == *src))
    })
}

/// The staging buffer of reduced `buffer`: its name ([`staging_name`]) and
/// shape (`buffer`'s, with `rows` along `dim`), for `pass` to declare; an
/// error at `at` if the plan already has a buffer of that name.
pub fn staging_decl(
    plan: &Plan,
    buffer: &str,
    dim: usize,
    rows: i64,
    at: Op,
    pass: &str,
) -> Result<(String, Vec<i64>, String), PassFailed> {
    let name = staging_name(buffer);
    if plan.buffer(&name).is_some() {
        return Err(fail(
            at,
            format!(
                "{pass}: the staging buffer @{name} would clash with the plan's buffer of that name"
            ),
        ));
    }
    let Some(partial) = plan.buffer(buffer) else {
        return Err(internal(at, "a reduced buffer that is not in the plan"));
    };
    let mut shape = partial.shape.clone();
    let Some(along) = shape.get_mut(dim) else {
        return Err(internal(at, "a reduced buffer without that dimension"));
    };
    *along = rows;
    Ok((name, shape, partial.element.clone()))
}

/// The buffer where the copy engine lands the peers' partials of a
/// reduce-scatter of `buffer` (declared by `chunk-expand-collectives`).
pub fn staging_name(buffer: &str) -> String {
    format!("{buffer}_staging")
}

/// Where rank `rank`'s staging buffer holds source `source`'s partial, in
/// blocks: the `W - 1` peers after `rank`, in rank-rotated order.
pub fn staging_slot(source: i64, rank: i64, world_size: i64) -> i64 {
    (source - rank - 1).rem_euclid(world_size)
}

/// Plan attribute (array of buffer names): reductions of these buffers are
/// staged (see [`staged`]) although their transfers say `ldst`: the SM copy
/// programs of `chunk-fuse-reductions{mode=stage}` move their partials.
pub const STAGED_ATTR: &str = "synco.staged";

/// Whether `buffer`'s partials travel through their owners' staging buffer:
/// tiles store and count them locally, then the copy engine or SM copy
/// programs move each finished chunk (the flag layout is then the copy
/// engine's, see `chunk-fuse-reductions`).
pub fn staged(plan: &Plan, buffer: &str) -> bool {
    reduced_by_copy_engine(plan, buffer) || staged_on_sms(plan).iter().any(|n| n == buffer)
}

/// Whether the plan's reductions are staged and moved by the kernel's SM
/// copy programs (`chunk-fuse-reductions{mode=stage}` marked it).
pub fn stages_on_sms(plan: &Plan) -> bool {
    !staged_on_sms(plan).is_empty()
}

/// The buffers [`STAGED_ATTR`] names.
fn staged_on_sms(plan: &Plan) -> Vec<String> {
    ir::attr(plan.op, STAGED_ATTR)
        .and_then(ir::array_value)
        .unwrap_or_default()
        .into_iter()
        .filter_map(ir::str_value)
        .collect()
}

/// Whether the copy engine moves `buffer`'s partials between ranks (the
/// reducing transfers that cross ranks have backend `copy_engine`).
pub fn reduced_by_copy_engine(plan: &Plan, buffer: &str) -> bool {
    plan.ops_named("chunk.transfer").into_iter().any(|t| {
        ir::attr(t, "reduce").is_some()
            && !is_local(t)
            && ir::int_attr(t, "backend").and_then(attrs::Backend::from_value)
                == Some(attrs::Backend::CopyEngine)
            && ir::attr(t, "src")
                .and_then(region_parts)
                .is_some_and(|(b, _, _)| b == buffer)
    })
}

/// The collective that reduces a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReductionKind {
    ReduceScatter,
    /// A one-shot all-reduce (every rank reduces every rank's partial).
    AllReduce,
    /// A two-shot all-reduce (reduce-scatter, then all-gather).
    AllReduceTwoShot,
}

/// What reduces `buffer`, from the group of its reducing transfers.
pub fn reduction_kind(plan: &Plan, buffer: &str) -> Option<ReductionKind> {
    let t = plan.ops_named("chunk.transfer").into_iter().find(|t| {
        ir::attr(*t, "reduce").is_some()
            && ir::attr(*t, "src")
                .and_then(region_parts)
                .is_some_and(|(b, _, _)| b == buffer)
    })?;
    let group = ir::str_attr(t, "group").unwrap_or_default();
    Some(if group.starts_with("reduce_scatter") {
        ReductionKind::ReduceScatter
    } else if group.ends_with("_rs") {
        ReductionKind::AllReduceTwoShot
    } else {
        ReductionKind::AllReduce
    })
}

/// Buffers that reducing transfers read: the partials of a reduce-scatter
/// or all-reduce.
pub fn reduced_buffers(plan: &Plan) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in plan.ops_named("chunk.transfer") {
        if ir::attr(t, "reduce").is_none() {
            continue;
        }
        if let Some((name, _, _)) = ir::attr(t, "src").and_then(region_parts)
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// The destination buffer of a `chunk.transfer`.
pub fn dst_buffer(transfer: Op) -> Option<String> {
    region_parts(ir::attr(transfer, "dst")?).map(|(b, _, _)| b)
}

/// The sizes of a transfer's destination region.
pub fn region_sizes(transfer: Op) -> Option<Vec<i64>> {
    region_parts(ir::attr(transfer, "dst")?).map(|(_, _, s)| s)
}

/// The raw `attr` as a melior attribute, for the dialect's readers.
fn as_attribute<'c>(attr: ir::Attr) -> melior::ir::Attribute<'c> {
    // SAFETY: attributes handed to the passes belong to the live module's
    // context, which outlives the pass that reads them.
    unsafe { melior::ir::Attribute::from_raw(attr) }
}

/// `attr` as a `#chunk.region`, if it is one.
fn region_of<'c>(attr: ir::Attr) -> Option<attrs::Region<'c>> {
    attrs::Region::from_attribute(as_attribute(attr))
}

/// `(buffer, offsets map, sizes)` of a `#chunk.region` attribute.
pub fn region_parts<'c>(attr: ir::Attr) -> Option<(String, AffineMap<'c>, Vec<i64>)> {
    let region = region_of(attr)?;
    Some((region.buffer(), region.offsets(), region.sizes()))
}

/// A `#chunk.region`'s offsets on `rank`, by the dialect's own evaluator
/// (the one the plan verifier checks bounds with).
pub fn region_offsets(attr: ir::Attr, rank: i64) -> Option<Vec<i64>> {
    region_of(attr)?.offsets_on(rank)
}

/// A transfer's rank map (`key`: `src_rank` or `dst_rank`).
pub fn rank_map<'c>(t: Op, key: &str) -> Option<AffineMap<'c>> {
    attrs::affine_map_of(as_attribute(ir::attr(t, key)?))
}

/// A transfer's rank map (`key`) evaluated on rank `r`, by the dialect's
/// own evaluator.
pub fn rank_at(t: Op, key: &str, r: i64) -> Option<i64> {
    attrs::evaluate_on_rank(rank_map(t, key)?, r)?
        .first()
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plans of `text` (a module), in a context with the chunk dialect.
    fn with_plans(text: &str, check: impl FnOnce(Vec<Plan>)) {
        let context = synco_chunk::create_context();
        let module = melior::ir::Module::parse(&context, text).expect("parses");
        check(plans(module.as_operation().to_raw()));
    }

    /// An expanded 2-rank plan whose partial @P is reduced by `group`.
    fn reduced_plan(group: &str) -> String {
        format!(
            r#"chunk.plan @p world_size(2) {{
              chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
              chunk.buffer @C : !chunk.buffer<512x64xbf16>
              chunk.produce @tiles @P dim(0) tile(128)
              chunk.transfer @C_p0_c0 local ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) {{group = "{group}"}}
              chunk.transfer @C_p0_c1 local ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) {{group = "{group}"}}
              chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) {{group = "{group}"}}
              chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) {{group = "{group}"}}
            }}"#
        )
    }

    #[test]
    fn chunks_split_across_rank_blocks_number_by_rank_then_column() {
        // B [2 x 64, 512] gathered by rows (a block per rank), chunks of 128
        // columns: rank 1's chunk of columns [256, 384) is flag 4 + 2.
        let text = r#"chunk.plan @p world_size(2) {
              chunk.buffer @B : !chunk.buffer<128x512xbf16> bind(1)
              chunk.transfer @B_p1_c2 push copy_engine from <@B[(d0) -> (((d0 + 1) mod 2) * 64, 256)] [64, 128]> on (d0) -> ((d0 + 1) mod 2) to <@B[(d0) -> (((d0 + 1) mod 2) * 64, 256)] [64, 128]> on (d0) -> (d0) order(6)
              chunk.consume @B dim(1) tile(128) source("src")
            }"#;
        with_plans(text, |plans| {
            let layout = flag_layout(&plans[0]).expect("a layout");
            let [range] = &layout[..] else {
                panic!("one range, got {layout:?}")
            };
            assert_eq!((range.dim, range.rank_dim, range.rank_block), (1, 0, 64));
            assert_eq!((range.rows_per_chunk, range.chunks_per_rank), (128, 4));
            assert_eq!(range.flag_at(&[64, 256]), Some(6));
            assert_eq!(range.flag_at(&[0, 384]), Some(3));
            assert_eq!(range.count(2), 8);
        });
    }

    #[test]
    fn reductions_get_counters_after_the_consumed_flags() {
        with_plans(&reduced_plan("reduce_scatter_C"), |plans| {
            let plan = &plans[0];
            assert_eq!(reduced_buffers(plan), vec!["P".to_string()]);
            assert_eq!(
                reduction_kind(plan, "P"),
                Some(ReductionKind::ReduceScatter)
            );
            let layout = flag_layout(plan).expect("a layout");
            let [range] = &layout[..] else {
                panic!("one range, got {layout:?}")
            };
            assert_eq!(range.kind, FlagKind::Reduction);
            assert_eq!((range.rows_per_chunk, range.chunks_per_rank), (256, 2));
            assert_eq!(range.count(2), 4);
        });
        // A one-shot all-reduce: arrival and acknowledgement counters.
        with_plans(&reduced_plan("all_reduce_C"), |plans| {
            assert_eq!(
                reduction_kind(&plans[0], "P"),
                Some(ReductionKind::AllReduce)
            );
            let layout = flag_layout(&plans[0]).expect("a layout");
            assert_eq!(layout[0].count(2), 8);
        });
        with_plans(&reduced_plan("all_reduce_C_rs"), |plans| {
            assert_eq!(
                reduction_kind(&plans[0], "P"),
                Some(ReductionKind::AllReduceTwoShot)
            );
        });
    }

    #[test]
    fn reads_regions_and_rank_maps_with_the_dialect_evaluator() {
        let text = r#"chunk.plan @p world_size(4) {
              chunk.buffer @A : !chunk.buffer<1024x64xbf16>
              chunk.transfer @t pull copy_engine from <@A[(r) -> (((r + 1) mod 4) * 256, 8)] [256, 56]> on (r) -> ((r + 1) mod 4) to <@A[(r) -> (((r + 1) mod 4) * 256, 8)] [256, 56]> on (r) -> (r) order(0)
            }"#;
        with_plans(text, |plans| {
            let [t] = plans[0].ops_named("chunk.transfer")[..] else {
                panic!("one transfer")
            };
            let src = ir::attr(t, "src").expect("a source region");
            let (buffer, offsets, sizes) = region_parts(src).expect("a region");
            assert_eq!(
                (buffer.as_str(), offsets.to_string().as_str(), sizes),
                ("A", "(d0) -> (((d0 + 1) mod 4) * 256, 8)", vec![256, 56])
            );
            assert_eq!(region_offsets(src, 3), Some(vec![0, 8]));
            assert_eq!(rank_at(t, "src_rank", 3), Some(0));
            assert_eq!(rank_at(t, "dst_rank", 3), Some(3));
            assert_eq!(
                rank_map(t, "src_rank").map(|m| m.to_string()).as_deref(),
                Some("(d0) -> ((d0 + 1) mod 4)")
            );
            // Not a region, not a map: nothing, not a panic.
            assert_eq!(
                region_offsets(ir::attr(t, "src_rank").expect("a map"), 0),
                None
            );
            assert_eq!(rank_at(t, "src", 0), None);
        });
    }
}
