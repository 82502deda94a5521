//! The plan model the passes share: `chunk.plan` ops read into [`Plan`]s,
//! and what every pass derives from a plan the same way.
//!
//! * this file: plans and their buffers, the plan's kernel, diagnostics;
//! * [`flags`]: the flag and counter layout of a fused kernel;
//! * [`collectives`]: which collective moves or reduces each buffer, and
//!   how (staged reductions, gathered outputs);
//! * [`ops`]: typed views of the transfers, consumers and producers;
//! * [`records`]: what a pass records for later passes and the manifest,
//!   as registered `chunk` attributes;
//! * [`regions`]: `#chunk.region`s and rank maps, read with the dialect's
//!   own evaluator;
//! * [`slots`]: a ring's gathered blocks kept in two slots.

use synco_chunk::{Diagnostic, PassFailed};
use synco_ir::{self as ir, Op};

pub mod collectives;
pub mod flags;
pub mod ops;
pub mod records;
pub mod regions;
pub mod slots;
#[cfg(test)]
mod tests;

pub use collectives::*;
pub use flags::*;
pub use ops::{AsOp, Collective, Consume, Produce, TileMap, Transfer};
pub use regions::*;

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
    /// The slots a ring's gathered blocks rotate through
    /// ([`slots::SLOTS_ATTR`]): the kernel runs once per ring step.
    pub slots: Option<i64>,
}

/// The most per-rank copies (transfers x world size) a plan may expand
/// into (`chunk-expand-collectives`) or a staged reduction may record
/// (`chunk-fuse-reductions`): the plan verifier and the later passes check
/// every transfer on every rank, and the launch manifest lists every
/// rank's copies, so time and memory grow with this product. An all-gather of `world_size(1024)`
/// in one chunk per rank sits at the limit: the whole synco-ag-gemm
/// pipeline takes 33 s and 3.4 GB on a 2-core machine (2^18 copies: 6 s,
/// 0.9 GB); 2^23, the limit before, would take about 27 GB.
pub const MAX_RANK_COPIES: i64 = 1 << 20;

/// Discardable unit attribute on a `chunk.buffer` that a pass declared as
/// the fused operation's scratch (the copy engine's staging buffer of a
/// reduction): the launch manifest marks it, and the runtime allocates it
/// with the kernel.
pub const STAGING_ATTR: &str = "chunk.staging";

/// Discardable unit attribute on the `chunk.buffer` that holds the kernel's
/// trace records (see `chunk-trace-tiles`).
pub const TRACE_ATTR: &str = "chunk.trace";

impl BufferDecl {
    pub fn element_bytes(&self) -> Option<i64> {
        element_bytes_of(&self.element)
    }
}

/// Bytes of one element of the number type MLIR prints as `element`
/// (`bf16`), if it is one a buffer holds.
pub fn element_bytes_of(element: &str) -> Option<i64> {
    Some(match element {
        "i8" => 1,
        "bf16" | "f16" | "i16" => 2,
        "f32" | "i32" => 4,
        "f64" | "i64" => 8,
        _ => return None,
    })
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

    /// The plan's `chunk.transfer`s, in plan order.
    pub fn transfers(&self) -> Vec<Transfer> {
        self.ops_named("chunk.transfer")
            .into_iter()
            .map(Transfer)
            .collect()
    }

    /// The transfers that write buffer `name`, in plan order.
    pub fn transfers_into(&self, name: &str) -> Vec<Transfer> {
        self.transfers()
            .into_iter()
            .filter(|t| t.dst_buffer().as_deref() == Some(name))
            .collect()
    }

    /// The reducing transfers that read buffer `name` (its partials), in
    /// plan order.
    pub fn reductions_of(&self, name: &str) -> Vec<Transfer> {
        self.transfers()
            .into_iter()
            .filter(|t| t.reduces() && t.src_buffer().as_deref() == Some(name))
            .collect()
    }

    /// The plan's collectives as written (before
    /// `chunk-expand-collectives`), in plan order.
    pub fn collectives(&self) -> Vec<Collective> {
        self.body_ops()
            .into_iter()
            .filter_map(Collective::of)
            .collect()
    }

    /// The plan's `chunk.consume`s, in plan order.
    pub fn consumes(&self) -> Vec<Consume> {
        self.ops_named("chunk.consume")
            .into_iter()
            .map(Consume)
            .collect()
    }

    /// The buffers its transfers, collectives, consumers and producers
    /// name (a buffer it only declares is not among them).
    pub fn named_buffers(&self) -> Vec<String> {
        let transfers = self
            .transfers()
            .into_iter()
            .flat_map(|t| [t.src_buffer(), t.dst_buffer()]);
        let collectives = self
            .collectives()
            .into_iter()
            .flat_map(|c| [c.src(), c.dst()]);
        let tiles = self
            .consumes()
            .into_iter()
            .map(|c| c.buffer())
            .chain(self.produces().into_iter().map(|p| p.buffer()));
        let mut names: Vec<String> = transfers
            .chain(collectives)
            .chain(tiles)
            .flatten()
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The plan's `chunk.produce`s, in plan order.
    pub fn produces(&self) -> Vec<Produce> {
        self.ops_named("chunk.produce")
            .into_iter()
            .map(Produce)
            .collect()
    }

    pub fn buffer(&self, name: &str) -> Option<&BufferDecl> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// How many dimensions buffer `name` has (0 if it is not declared).
    pub fn rank_of(&self, name: &str) -> usize {
        self.buffer(name).map_or(0, |b| b.shape.len())
    }

    /// The transfers `t` forwards rows of: those of its `after` list that
    /// are transfers (a ring's earlier step, which brought the rows to the
    /// rank `t` reads from); the rest of the list are producers.
    pub fn forwarded_by(&self, t: Transfer) -> Vec<Transfer> {
        let producers: Vec<String> = self.produces().iter().filter_map(|p| p.name()).collect();
        let after: Vec<String> = t
            .after()
            .into_iter()
            .filter(|a| !producers.contains(a))
            .collect();
        if after.is_empty() {
            return Vec::new();
        }
        self.transfers()
            .into_iter()
            .filter(|u| u.name().is_some_and(|n| after.contains(&n)))
            .collect()
    }

    /// The `chunk.produce` whose kernel tiles write buffer `name` (the
    /// plan verifier allows at most one).
    pub fn producer_of(&self, name: &str) -> Option<Produce> {
        self.produces()
            .into_iter()
            .find(|p| p.buffer().as_deref() == Some(name))
    }

    /// The `chunk.consume`s of buffer `name`, in plan order.
    pub fn consumers_of(&self, name: &str) -> Vec<Consume> {
        self.consumes()
            .into_iter()
            .filter(|c| c.buffer().as_deref() == Some(name))
            .collect()
    }

    /// The first `chunk.consume` of buffer `name` (the one its flags are
    /// laid out for, see [`flag_layout`]).
    pub fn consumer_of(&self, name: &str) -> Option<Consume> {
        self.consumers_of(name).first().copied()
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

    /// The plan's kernel (`tt.func`) in `module`, if the module has it (a
    /// plan without `kernel(@...)`: the module's only `tt.func`).
    pub fn kernel_op_in(&self, module: Op) -> Option<Op> {
        match &self.kernel {
            Some(kernel) => find_kernel(module, kernel),
            None => match ir::find_all(module, "tt.func")[..] {
                [only] => Some(only),
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
        slots: ir::int_attr(op, slots::SLOTS_ATTR),
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
pub fn loc<'c>(op: impl AsOp) -> melior::ir::Location<'c> {
    // SAFETY: the op is live for the pass; locations are owned by the
    // context, which outlives the diagnostic.
    unsafe { melior::ir::Location::from_raw(ir::location_of(op.op())) }
}

/// Emits an error at `op` and returns the pass failure.
pub fn fail(op: impl AsOp, message: impl Into<String>) -> synco_chunk::PassFailed {
    Diagnostic::error(loc(op), message).emit();
    synco_chunk::PassFailed
}

/// Reports a broken invariant of the pass itself (an input the verifiers
/// should have refused) at `op`, instead of failing without a word.
pub fn internal(op: impl AsOp, what: &str) -> synco_chunk::PassFailed {
    fail(
        op,
        format!("internal error in Synco: {what}; please report it with this input"),
    )
}
