//! What one reduction's fused code needs, read off the plan and the kernel:
//! the partials `@P` and the output `@C` with their kernel arguments
//! ([`Buffers`]), the tile store that writes `@P` ([`TileStore`]), and how
//! the partials travel ([`Site`]); each refused, with the reason, where the
//! fused code could not do what the plan says.

use super::{Mode, NAME};
use crate::{
    abi::{AbiArgs, buffer_arg},
    plan::{FlagRange, Plan, Produce, ReductionKind, Transfer, fail, internal, reduction_kind},
    tiles::{TILE_INDEX_ATTR, tile_store},
};
use synco_chunk::PassFailed;
use synco_ir::{self as ir, Op, Value};

/// One reduction to fuse: the plan's range of flags for its partials, its
/// buffers, the kernel's store of its tiles and the transport.
pub(super) struct Site<'a> {
    pub(super) plan: &'a Plan,
    pub(super) abi: AbiArgs,
    pub(super) range: &'a FlagRange,
    pub(super) world_size: i64,
    /// The pass's mode, or [`Mode::CopyEngine`] where the plan moves the
    /// partials by the copy engine.
    pub(super) mode: Mode,
    /// Where the copy engine (or the copy programs) land peers' partials
    /// ([`Mode::staged`]: `@P_staging`), else `@P` itself.
    pub(super) staging_ptr: Value,
    pub(super) buffers: Buffers<'a>,
    pub(super) tile: TileStore,
}

/// The reduction's buffers, as the plan declares them and the kernel
/// binds them.
pub(super) struct Buffers<'a> {
    /// The partials' buffer `@P`.
    pub(super) name: &'a str,
    /// The `chunk.produce` of `@P`: where the fused code is located.
    pub(super) produce: Produce,
    /// Rows per tile (`chunk.produce`'s `tile`).
    pub(super) tile: i64,
    /// `@P`'s kernel argument, and its index.
    pub(super) p_arg: Value,
    pub(super) p_index: Option<usize>,
    /// `@P` is `rows x cols`; each rank owns a `block` of its rows.
    pub(super) rows: i64,
    pub(super) cols: i64,
    pub(super) block: i64,
    pub(super) kind: Option<ReductionKind>,
    /// The output `@C` and its kernel argument.
    pub(super) out_name: String,
    pub(super) out_ptr: Value,
    pub(super) element_bytes: i64,
}

impl Buffers<'_> {
    /// A one-shot all-reduce: every rank sums every row.
    pub(super) fn all_reduce(&self) -> bool {
        self.kind == Some(ReductionKind::AllReduce)
    }

    /// A two-shot all-reduce: a reduce-scatter, then the owners' sums to
    /// every peer.
    pub(super) fn two_shot(&self) -> bool {
        self.kind == Some(ReductionKind::AllReduceTwoShot)
    }
}

/// The kernel's one store of a tile of `@P`, which the fused code replaces
/// or surrounds.
pub(super) struct TileStore {
    /// The op whose result is the tile index (`chunk-reorder-tiles`).
    pub(super) marked: Op,
    pub(super) store: Op,
    /// The store's pointers, value and mask, and the tile's shape.
    pub(super) ptrs: Value,
    pub(super) value: Value,
    pub(super) mask: Option<Value>,
    pub(super) shape: Vec<i64>,
    pub(super) tiles_per_chunk: i64,
    pub(super) element: ir::Type,
}

impl<'a> Site<'a> {
    /// The reduction of `range`'s partials, which `transfer` (one of its
    /// reducing transfers) says where to.
    pub(super) fn resolve(
        plan: &'a Plan,
        kernel: Op,
        abi: AbiArgs,
        range: &'a FlagRange,
        transfer: Transfer,
        mode: Mode,
    ) -> Result<Site<'a>, PassFailed> {
        let buffers = Buffers::resolve(plan, kernel, range, transfer)?;
        let tile = TileStore::resolve(kernel, range, &buffers)?;
        let name = buffers.name;
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
            buffers.p_arg
        };
        Ok(Site {
            plan,
            abi,
            range,
            world_size: plan.world_size,
            mode,
            staging_ptr,
            buffers,
            tile,
        })
    }
}

impl<'a> Buffers<'a> {
    fn resolve(
        plan: &Plan,
        kernel: Op,
        range: &'a FlagRange,
        transfer: Transfer,
    ) -> Result<Buffers<'a>, PassFailed> {
        let w = plan.world_size;
        let name = &range.buffer;
        let produce = plan
            .producer_of(name)
            .ok_or_else(|| internal(plan.op, "a reduction range without its chunk.produce"))?;
        let tile = produce.tile().unwrap_or(1);
        if range.dim != 0 {
            return Err(fail(
                produce,
                "chunk-fuse-reductions: only partials split along dim(0) (row blocks) are fused",
            ));
        }
        let partial = plan
            .buffer(name)
            .ok_or_else(|| internal(produce, "a produced buffer that is not in the plan"))?;
        let Some(arg) = partial.arg else {
            return Err(fail(
                produce,
                format!(
                    "@{name} is produced by kernel tiles but not bound to a kernel argument: add bind(i)"
                ),
            ));
        };
        // The partials' address: the bound argument, or the buffer's
        // `synco_buffer_<name>` where the kernel stores through a host
        // descriptor (`tiles::tile_store` makes that store one through
        // pointers).
        let p_arg = crate::abi::buffer_pointer(kernel, partial).ok_or_else(|| {
            fail(
                produce,
                format!(
                    "chunk-fuse-reductions: @{name} is bound to argument {arg}, a host tensor descriptor, and the kernel has no synco_buffer_{name} argument: run chunk-bind-kernel first"
                ),
            )
        })?;
        let [m, n] = partial.shape[..] else {
            return Err(fail(
                produce,
                format!("chunk-fuse-reductions: @{name} must be a 2D [M, N] partial"),
            ));
        };
        let out_name = transfer
            .dst_buffer()
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
        let out_ptr = crate::abi::buffer_pointer(kernel, out)
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
        Ok(Buffers {
            name,
            produce,
            tile,
            p_arg,
            p_index: partial.arg,
            rows: m,
            cols: n,
            block,
            kind,
            out_name,
            out_ptr,
            element_bytes,
        })
    }
}

impl TileStore {
    fn resolve(kernel: Op, range: &FlagRange, buffers: &Buffers) -> Result<TileStore, PassFailed> {
        let (name, produce, tile) = (buffers.name, buffers.produce, buffers.tile);
        let marked = ir::walk(kernel)
            .into_iter()
            .find(|op| ir::str_attr(*op, TILE_INDEX_ATTR).as_deref() == Some(name))
            .ok_or_else(|| {
                fail(
                    produce,
                    "chunk-fuse-reductions: no tile index for this buffer; run chunk-reorder-tiles first",
                )
            })?;
        let store = tile_store(
            kernel,
            buffers.p_index.unwrap_or(usize::MAX),
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
                format!(
                    "this store writes {tile_rows}-row tiles, but the plan produces tile({tile})"
                ),
            ));
        }
        let n = buffers.cols;
        let tiles_per_chunk = range.rows_per_chunk / tile * ((n + tile_cols - 1) / tile_cols);
        let element = ir::tensor_element(ir::type_of(value))
            .ok_or_else(|| internal(store, "a tensor without an element type"))?;
        Ok(TileStore {
            marked,
            store,
            ptrs,
            value,
            mask,
            shape,
            tiles_per_chunk,
            element,
        })
    }
}
