//! Typed views of a plan's ops after `chunk-expand-collectives`: what the
//! passes read of a `chunk.transfer`, `chunk.consume` or `chunk.produce`,
//! by the attribute names `ChunkOps.td` gives them (read here, and only
//! here), as the dialect's enums and `#chunk.region`s.
//!
//! A view is a `Copy` handle on a live op, like the [`Op`] it wraps; every
//! diagnostic helper takes one ([`AsOp`]).

use super::regions::{rank_at, region_offsets, region_parts};
use melior::ir::AffineMap;
use synco_chunk::attrs::{
    Algorithm, Backend, BlockLayout, CollectiveKind, CollectivePhase, Reduction, TransferMode,
};
use synco_ir::{self as ir, Attr, Op};

/// Anything that names an op (for diagnostics at it).
pub trait AsOp: Copy {
    fn op(self) -> Op;
}

impl AsOp for Op {
    fn op(self) -> Op {
        self
    }
}

/// A `chunk.transfer`.
#[derive(Clone, Copy)]
pub struct Transfer(pub Op);

/// A `chunk.consume`: kernel tiles read `buffer` in tiles of `tile` rows
/// along `dim`.
#[derive(Clone, Copy)]
pub struct Consume(pub Op);

/// A `chunk.produce`: kernel tiles write `buffer` in tiles of `tile` rows
/// along `dim`.
#[derive(Clone, Copy)]
pub struct Produce(pub Op);

macro_rules! as_op {
    ($($view:ident),*) => {$(
        impl AsOp for $view {
            fn op(self) -> Op {
                self.0
            }
        }
    )*};
}
/// A `chunk.consume` or `chunk.produce`: what the two share (the buffer
/// kernel tiles walk, along `dim`, in tiles of `tile`).
#[derive(Clone, Copy)]
pub struct TileMap(pub Op);

as_op!(Transfer, Consume, Produce, TileMap);

impl From<Consume> for TileMap {
    fn from(c: Consume) -> TileMap {
        TileMap(c.0)
    }
}

impl From<Produce> for TileMap {
    fn from(p: Produce) -> TileMap {
        TileMap(p.0)
    }
}

impl Transfer {
    /// Its symbol (`@A_p1_c0`).
    pub fn name(self) -> Option<String> {
        ir::str_attr(self.0, "sym_name")
    }

    pub fn mode(self) -> Option<TransferMode> {
        ir::int_attr(self.0, "mode").and_then(TransferMode::from_value)
    }

    /// A copy within one rank (mode `local`).
    pub fn is_local(self) -> bool {
        self.mode() == Some(TransferMode::Local)
    }

    pub fn backend(self) -> Option<Backend> {
        ir::int_attr(self.0, "backend").and_then(Backend::from_value)
    }

    /// Whether the fused kernel's copy programs move it (`ldst` or `tma`).
    pub fn copied_by_sms(self) -> bool {
        matches!(self.backend(), Some(Backend::Ldst | Backend::Tma))
    }

    /// Its place in the copy streams' order.
    pub fn order(self) -> i64 {
        ir::int_attr(self.0, "order").unwrap_or(0)
    }

    /// The `#chunk.region` it reads.
    pub fn src(self) -> Option<Attr> {
        ir::attr(self.0, "src")
    }

    /// The `#chunk.region` it writes.
    pub fn dst(self) -> Option<Attr> {
        ir::attr(self.0, "dst")
    }

    /// The buffer it reads.
    pub fn src_buffer(self) -> Option<String> {
        region_parts(self.src()?).map(|(b, _, _)| b)
    }

    /// The buffer it writes.
    pub fn dst_buffer(self) -> Option<String> {
        region_parts(self.dst()?).map(|(b, _, _)| b)
    }

    /// The sizes of the box it writes (those of the box it reads).
    pub fn sizes(self) -> Option<Vec<i64>> {
        region_parts(self.dst()?).map(|(_, _, s)| s)
    }

    /// Where the box it reads starts, as executed on rank `r`.
    pub fn src_offsets_on(self, r: i64) -> Option<Vec<i64>> {
        region_offsets(self.src()?, r)
    }

    /// Where the box it writes starts, as executed on rank `r`.
    pub fn dst_offsets_on(self, r: i64) -> Option<Vec<i64>> {
        region_offsets(self.dst()?, r)
    }

    /// The rank it reads from, as executed on rank `r`.
    pub fn src_rank_on(self, r: i64) -> Option<i64> {
        rank_at(self.0, "src_rank", r)
    }

    /// The rank it writes to, as executed on rank `r`.
    pub fn dst_rank_on(self, r: i64) -> Option<i64> {
        rank_at(self.0, "dst_rank", r)
    }

    /// Its source rank map, `(r) -> (the rank it reads from on r)`.
    pub fn src_rank_map<'c>(self) -> Option<AffineMap<'c>> {
        super::regions::rank_map(self.0, "src_rank")
    }

    /// Whether it adds into its destination (`reduce(...)`).
    pub fn reduces(self) -> bool {
        ir::attr(self.0, "reduce").is_some()
    }

    /// The symbols it waits for (`after [@a, @b]`), in order.
    pub fn after(self) -> Vec<String> {
        ir::attr(self.0, "after")
            .and_then(ir::array_value)
            .unwrap_or_default()
            .into_iter()
            .filter_map(ir::symbol_value)
            .collect()
    }

    /// The collective it implements and, for a two-shot all-reduce, its
    /// phase.
    pub fn collective(self) -> Option<(CollectiveKind, Option<CollectivePhase>)> {
        let kind = ir::int_attr(self.0, "collective").and_then(CollectiveKind::from_value)?;
        let phase = ir::int_attr(self.0, "phase").and_then(CollectivePhase::from_value);
        Some((kind, phase))
    }

    /// Whether a pass lowered it into the kernel ([`super::records::FUSED_ATTR`]).
    pub fn is_fused(self) -> bool {
        ir::attr(self.0, super::records::FUSED_ATTR).is_some()
    }

    /// The buffer whose flags imply its chunk's arrival
    /// ([`super::records::IMPLIED_ATTR`]), if any.
    pub fn implied_by(self) -> Option<String> {
        ir::str_attr(self.0, super::records::IMPLIED_ATTR)
    }
}

/// The parts `chunk.consume` and `chunk.produce` share.
macro_rules! tile_map {
    ($view:ident) => {
        impl $view {
            pub fn buffer(self) -> Option<String> {
                ir::attr(self.0, "buffer").and_then(ir::symbol_value)
            }

            /// The dimension its tiles walk.
            pub fn dim(self) -> usize {
                ir::int_attr(self.0, "dim").unwrap_or(0) as usize
            }

            /// Rows per tile along `dim`.
            pub fn tile(self) -> Option<i64> {
                ir::int_attr(self.0, "tile")
            }

            /// The kernel value it names as the tile index (`index("...")`).
            pub fn index(self) -> Option<String> {
                ir::str_attr(self.0, "index")
            }
        }
    };
}
tile_map!(Consume);
tile_map!(Produce);
tile_map!(TileMap);

impl TileMap {
    /// A consumer's loop over source ranks (`source("...")`); a producer
    /// has none.
    pub fn source(self) -> Option<String> {
        ir::str_attr(self.0, "source")
    }

    /// The kernel loop whose variable walks a consumer's blocks
    /// (`loop("...")`); a producer has none.
    pub fn loop_var(self) -> Option<String> {
        ir::str_attr(self.0, "loop")
    }
}

impl Consume {
    /// The kernel's loop over source ranks (`source("...")`): tiles read
    /// every rank's block and wait per source.
    pub fn source(self) -> Option<String> {
        ir::str_attr(self.0, "source")
    }

    pub fn reads_per_source(self) -> bool {
        ir::attr(self.0, "source").is_some()
    }

    /// The kernel loop whose variable walks the blocks (`loop("...")`).
    pub fn loop_var(self) -> Option<String> {
        ir::str_attr(self.0, "loop")
    }
}

impl Produce {
    /// Its symbol, which transfers wait for (`after [@tiles]`).
    pub fn name(self) -> Option<String> {
        ir::str_attr(self.0, "sym_name")
    }
}

/// A collective as written, before `chunk-expand-collectives`:
/// `chunk.all_gather` (of `buffer`), `chunk.all_to_all`,
/// `chunk.reduce_scatter` or `chunk.all_reduce` (from `src` into `dst`).
#[derive(Clone, Copy)]
pub struct Collective(pub Op);
as_op!(Collective);

impl Collective {
    /// `op` as a collective, if it is one.
    pub fn of(op: Op) -> Option<Collective> {
        Collective::kind_of(op).map(|_| Collective(op))
    }

    fn kind_of(op: Op) -> Option<CollectiveKind> {
        Some(match ir::op_name(op).as_str() {
            "chunk.all_gather" => CollectiveKind::AllGather,
            "chunk.all_to_all" => CollectiveKind::AllToAll,
            "chunk.reduce_scatter" => CollectiveKind::ReduceScatter,
            "chunk.all_reduce" => CollectiveKind::AllReduce,
            _ => return None,
        })
    }

    pub fn kind(self) -> CollectiveKind {
        Collective::kind_of(self.0).unwrap_or(CollectiveKind::AllGather)
    }

    /// The buffer it reads (an all-gather's `buffer`, else `src`).
    pub fn src(self) -> Option<String> {
        ["buffer", "src"]
            .into_iter()
            .find_map(|key| ir::attr(self.0, key).and_then(ir::symbol_value))
    }

    /// The buffer it lands in (an all-gather's `buffer`, else `dst`).
    pub fn dst(self) -> Option<String> {
        ["buffer", "dst"]
            .into_iter()
            .find_map(|key| ir::attr(self.0, key).and_then(ir::symbol_value))
    }

    /// The dimension ranks' blocks stack along.
    pub fn dim(self) -> usize {
        ir::int_attr(self.0, "dim").unwrap_or(0) as usize
    }

    /// The dimension its chunks cut, if it says (`split(d)`).
    pub fn split(self) -> Option<usize> {
        ir::int_attr(self.0, "split").map(|d| d as usize)
    }

    /// The dimension its chunks cut (`split(d)`; `dim` without it).
    pub fn chunk_dim(self) -> usize {
        self.split().unwrap_or(self.dim())
    }

    /// Its chunks per rank (`chunks(n)`), once chosen.
    pub fn chunks(self) -> Option<i64> {
        ir::int_attr(self.0, "chunks")
    }

    /// Chooses its chunks per rank (`chunk-select-chunk-size`).
    pub fn set_chunks(self, n: i64) {
        let ctx = ir::context_of(self.0);
        ir::set_attr(self.0, "chunks", ir::int_attr_of(ir::i64_type(ctx), n));
    }

    pub fn backend(self) -> Option<Backend> {
        ir::int_attr(self.0, "backend").and_then(Backend::from_value)
    }

    /// Chooses its backend (`chunk-select-backend`).
    pub fn set_backend(self, backend: Backend) {
        let ctx = ir::context_of(self.0);
        ir::set_attr(
            self.0,
            "backend",
            ir::int_attr_of(ir::i32_type(ctx), backend as i64),
        );
    }

    pub fn algorithm(self) -> Option<Algorithm> {
        ir::int_attr(self.0, "algorithm").and_then(Algorithm::from_value)
    }

    /// The dimension of `dst` an all-to-all stacks its sources' blocks
    /// along (`to(t)`), where it differs from `dim` (a re-shard).
    pub fn reshard_to(self) -> Option<usize> {
        ir::int_attr(self.0, "to")
            .map(|d| d as usize)
            .filter(|t| *t != self.dim())
    }

    /// The slots a ring keeps its gathered blocks in (`slots(n)`).
    pub fn slots(self) -> Option<i64> {
        ir::int_attr(self.0, "slots")
    }

    /// Which blocks each rank owns (`blocks(...)`; contiguous without it).
    pub fn blocks(self) -> BlockLayout {
        ir::int_attr(self.0, "blocks")
            .and_then(BlockLayout::from_value)
            .unwrap_or(BlockLayout::Contiguous)
    }

    /// What a reducing collective adds with (`reduce(...)`).
    pub fn reduction(self) -> Option<Reduction> {
        ir::int_attr(self.0, "reduce").and_then(Reduction::from_value)
    }
}
