//! The `chunk` dialect's enums and attributes, from Rust.
//!
//! The enums mirror the `I32EnumAttr`s of `ChunkAttrs.td` (same names, same
//! values; a unit test checks every case against the C++ parser), and
//! convert to the `i32` integer attributes that the ops store.

use melior::{
    Context,
    ir::{Attribute, attribute::IntegerAttribute, r#type::IntegerType},
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
    /// How a collective is split into chunks.
    Algorithm {
        Direct = 0 => "direct",
        Ring = 1 => "ring",
        OneShot = 2 => "one_shot",
        TwoShot = 3 => "two_shot",
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
