//! The `chunk` dialect's enums and attributes, from Rust.
//!
//! The enums mirror the `I32EnumAttr`s of `ChunkAttrs.td` (same names, same
//! values; a unit test checks every case against the C++ parser), and
//! convert to the `i32` integer attributes that the ops store.
//!
//! [`Region`] and [`evaluate_on_rank`] read `#chunk.region`s and rank
//! maps through the dialect's C API, with the plan verifier's own
//! arithmetic, so a pass never disagrees with the verifier about a rank.

use crate::ffi;
use melior::{
    Context,
    ir::{
        AffineMap, Attribute,
        attribute::{AttributeLike, IntegerAttribute},
        r#type::IntegerType,
    },
};

macro_rules! chunk_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:literal => $keyword:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $value),+
        }

        impl $name {
            /// Every case, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The keyword used in the pretty syntax.
            pub const fn keyword(self) -> &'static str {
                match self { $($name::$variant => $keyword),+ }
            }

            /// Parses the pretty-syntax keyword.
            pub fn from_keyword(keyword: &str) -> Option<Self> {
                match keyword { $($keyword => Some($name::$variant),)+ _ => None }
            }

            /// Decodes the value stored in the op's attribute.
            pub fn from_value(value: i64) -> Option<Self> {
                match value { $($value => Some($name::$variant),)+ _ => None }
            }

            /// The attribute the op stores (an `i32` integer attribute).
            pub fn attribute<'c>(self, context: &'c Context) -> Attribute<'c> {
                IntegerAttribute::new(IntegerType::new(context, 32).into(), self as i64).into()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.keyword())
            }
        }
    };
}

chunk_enum! {
    /// How a chunk is moved.
    Backend {
        CopyEngine = 0 => "copy_engine",
        Tma = 1 => "tma",
        Ldst = 2 => "ldst",
        Nvshmem = 3 => "nvshmem",
        NcclDevice = 4 => "nccl_device",
        Auto = 5 => "auto",
    }
}

chunk_enum! {
    /// Which rank drives a transfer.
    TransferMode {
        Pull = 0 => "pull",
        Push = 1 => "push",
        Local = 2 => "local",
    }
}

chunk_enum! {
    /// How a transfer combines with its destination.
    Reduction {
        Sum = 0 => "sum",
        Max = 1 => "max",
        Min = 2 => "min",
    }
}

chunk_enum! {
    /// The collective a transfer was expanded from.
    CollectiveKind {
        AllGather = 0 => "all_gather",
        ReduceScatter = 1 => "reduce_scatter",
        AllReduce = 2 => "all_reduce",
        AllToAll = 3 => "all_to_all",
    }
}

chunk_enum! {
    /// The phase of a two-shot all-reduce a transfer belongs to.
    CollectivePhase {
        ReduceScatter = 0 => "reduce_scatter",
        AllGather = 1 => "all_gather",
    }
}

chunk_enum! {
    /// How a collective is split into chunks.
    Algorithm {
        Direct = 0 => "direct",
        Ring = 1 => "ring",
        OneShot = 2 => "one_shot",
        TwoShot = 3 => "two_shot",
    }
}

chunk_enum! {
    /// Which blocks of a gathered dimension each rank owns.
    BlockLayout {
        Contiguous = 0 => "contiguous",
        Zigzag = 1 => "zigzag",
    }
}

chunk_enum! {
    /// Memory ordering of a flag access (Triton's encoding).
    MemSemantic {
        Relaxed = 1 => "relaxed",
        Acquire = 2 => "acquire",
        Release = 3 => "release",
        AcqRel = 4 => "acq_rel",
    }
}

chunk_enum! {
    /// Visibility of a flag access (Triton's encoding).
    MemScope {
        Gpu = 1 => "gpu",
        Cta = 2 => "cta",
        Sys = 3 => "sys",
    }
}

/// `i64` words per record of the trace buffer `chunk.trace` writes (see
/// the op for the layout): one timestamp per [`TraceEvent`], and the tile.
pub const TRACE_RECORD_WORDS: i64 = 8;

chunk_enum! {
    /// A point of a tile that `chunk.trace` records (the index of its
    /// timestamp in a trace record).
    TraceEvent {
        TileBegin = 0 => "tile_begin",
        WaitBegin = 1 => "wait_begin",
        WaitEnd = 2 => "wait_end",
        Signal = 3 => "signal",
        TileEnd = 4 => "tile_end",
    }
}

/// `#chunk.region<@buffer[offsets] [sizes]>`: a box of `buffer` whose
/// offsets on rank `r` are `offsets` (affine expressions in `r`, one per
/// dimension, e.g. `["r * 1024", "0"]`).
///
/// Returns `None` if MLIR refuses the attribute (its diagnostic says why).
pub fn region<'c>(
    context: &'c Context,
    buffer: &str,
    offsets: &[String],
    sizes: &[i64],
) -> Option<Attribute<'c>> {
    let sizes: Vec<String> = sizes.iter().map(i64::to_string).collect();
    Attribute::parse(
        context,
        &format!(
            "#chunk.region<@{buffer}[(r) -> ({})] [{}]>",
            offsets.join(", "),
            sizes.join(", ")
        ),
    )
}

/// `(r) -> (expr)`: an affine map of the rank with one result, as the rank
/// maps of `chunk.transfer` use.
pub fn rank_map<'c>(context: &'c Context, expr: &str) -> Option<Attribute<'c>> {
    Attribute::parse(context, &format!("affine_map<(r) -> ({expr})>"))
}

/// A `#chunk.region` attribute, read through the dialect's C API.
#[derive(Clone, Copy, Debug)]
pub struct Region<'c> {
    attribute: Attribute<'c>,
}

impl<'c> Region<'c> {
    /// `attribute` as a region, or `None` if it is not a `#chunk.region`.
    pub fn from_attribute(attribute: Attribute<'c>) -> Option<Self> {
        // SAFETY: `attribute` is a live attribute of a live context.
        let is_region = unsafe { ffi::syncoAttributeIsAChunkRegion(attribute.to_raw()) };
        is_region.then_some(Region { attribute })
    }

    /// The buffer's symbol name (`A` for `@A`).
    pub fn buffer(&self) -> String {
        // SAFETY: a live region; the string lives as long as its context.
        unsafe {
            let name = ffi::syncoChunkRegionGetBuffer(self.attribute.to_raw());
            let bytes = std::slice::from_raw_parts(name.data as *const u8, name.length);
            String::from_utf8_lossy(bytes).into_owned()
        }
    }

    /// The offsets map: one dimension (the rank), one result per buffer
    /// dimension.
    pub fn offsets(&self) -> AffineMap<'c> {
        // SAFETY: a live region's offsets map lives as long as its context.
        unsafe { AffineMap::from_raw(ffi::syncoChunkRegionGetOffsets(self.attribute.to_raw())) }
    }

    /// The box's sizes, one per buffer dimension.
    pub fn sizes(&self) -> Vec<i64> {
        let raw = self.attribute.to_raw();
        // SAFETY: a live region, and every `pos` is below its size count.
        unsafe {
            (0..ffi::syncoChunkRegionGetNumSizes(raw))
                .map(|pos| ffi::syncoChunkRegionGetSize(raw, pos))
                .collect()
        }
    }

    /// The box's offsets on `rank` (see [`evaluate_on_rank`]).
    pub fn offsets_on(&self, rank: i64) -> Option<Vec<i64>> {
        evaluate_on_rank(self.offsets(), rank)
    }
}

/// The map of an `affine_map<...>` attribute (a transfer's `src_rank` or
/// `dst_rank`), or `None` if `attribute` is not one.
pub fn affine_map_of(attribute: Attribute) -> Option<AffineMap> {
    let raw = attribute.to_raw();
    // SAFETY: a live attribute; its map lives as long as its context.
    unsafe {
        mlir_sys::mlirAttributeIsAAffineMap(raw)
            .then(|| AffineMap::from_raw(mlir_sys::mlirAffineMapAttrGetValue(raw)))
    }
}

/// The results of `map` (one dimension, no symbols: a rank map or a
/// region's offsets) on `rank`, computed by the dialect's `evaluateOnRank`,
/// the plan verifier's own arithmetic. `None` where the map has symbols,
/// divides by a value that is not positive, or overflows.
pub fn evaluate_on_rank(map: AffineMap, rank: i64) -> Option<Vec<i64>> {
    let mut results = vec![0i64; map.result_count()];
    // SAFETY: `map` is live and `results` has room for each of its results.
    let evaluated =
        unsafe { ffi::syncoChunkEvaluateOnRank(map.to_raw(), rank, results.as_mut_ptr()) };
    evaluated.then_some(results)
}
