//! A kernel's parameters as the manifest lists them: what each is for, and
//! its type in Triton's spelling ([`ScalarType`] for the scalars).

use crate::ManifestError;
use serde::{Deserialize, Serialize};

/// What a parameter is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamRole {
    /// An argument of the user's kernel.
    User,
    /// An argument that Synco's passes added to the fused kernel.
    Synco,
    /// Triton's trailing global scratch pointer.
    GlobalScratch,
    /// Triton's trailing profile scratch pointer.
    ProfileScratch,
    /// The shape (`i32`s) and strides (`i64`s) Triton passes after a host
    /// tensor descriptor, in that order: the runtime fills them from the
    /// descriptor's value.
    DescriptorPart,
}

/// How a host tensor descriptor parameter is encoded (a `CUtensorMap`), as
/// Triton compiled the kernel to read it (its `tensordesc_meta`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorDescriptor {
    /// The block one load or store moves, per dimension (the parameter
    /// type's).
    pub block: Vec<u32>,
    /// The box one bulk copy moves, per dimension: the block, its last
    /// dimension cut to the swizzle's width (Triton's `block_size`).
    pub box_dims: Vec<u32>,
    /// `CUtensorMapSwizzle`'s value.
    pub swizzle: u32,
    /// `CUtensorMapDataType`'s value.
    pub data_type: u32,
    pub element_bytes: u32,
}

/// Bytes a `CUtensorMap` takes (and its alignment in the parameters).
pub const TENSOR_MAP_BYTES: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    /// Triton's spelling: `*bf16`, `i32`, `fp32`, ...
    #[serde(rename = "type")]
    pub ty: String,
    pub role: ParamRole,
    /// Triton compiled the kernel assuming the value (an address, or an
    /// integer) is a multiple of this (`tt.divisibility`, as its JIT
    /// specialises): the runtime refuses a launch with another value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divisible_by: Option<u32>,
    /// For a host tensor descriptor (`tensordesc<bf16[64,128]>`): its
    /// encoding. The `2 * rank` parameters after it are its parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descriptor: Option<TensorDescriptor>,
}

impl Param {
    /// Bytes the parameter takes in the launch's argument buffer.
    pub fn size_bytes(&self) -> Result<usize, ManifestError> {
        if self.descriptor.is_some() {
            return Ok(TENSOR_MAP_BYTES);
        }
        Ok(match self.scalar_type()? {
            None => 8,
            Some(scalar) => scalar.size_bytes(),
        })
    }

    /// The scalar type of the parameter, `None` for a pointer.
    pub fn scalar_type(&self) -> Result<Option<ScalarType>, ManifestError> {
        if self.ty.starts_with('*') {
            return Ok(None);
        }
        ScalarType::parse(&self.ty)
            .map(Some)
            .ok_or_else(|| ManifestError::UnsupportedType {
                param: self.name.clone(),
                ty: self.ty.clone(),
            })
    }
}

/// The scalar types a Triton kernel takes as arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarType {
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl ScalarType {
    const ALL: [ScalarType; 13] = [
        ScalarType::I1,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F32,
        ScalarType::F64,
    ];

    /// Triton's spelling (`fp32`), the manifest's.
    pub fn triton_name(self) -> &'static str {
        match self {
            ScalarType::I1 => "i1",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::F16 => "fp16",
            ScalarType::BF16 => "bf16",
            ScalarType::F32 => "fp32",
            ScalarType::F64 => "fp64",
        }
    }

    /// MLIR's spelling of the same type (`f32`; unsigned types are
    /// signless there).
    fn mlir_name(self) -> &'static str {
        match self {
            ScalarType::F16 => "f16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            other => other.triton_name(),
        }
    }

    /// A type in Triton's spelling or MLIR's (`fp32` or `f32`).
    pub fn parse(spelling: &str) -> Option<ScalarType> {
        Self::ALL
            .into_iter()
            .find(|t| t.triton_name() == spelling || t.mlir_name() == spelling)
    }

    /// Bytes it takes in the launch's argument buffer.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::I1 | ScalarType::I8 | ScalarType::U8 => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 | ScalarType::F64 => 8,
        }
    }
}

/// A parameter type in Triton's spelling, whichever spelling it came in
/// (a `.ttir` kernel's signature spells its types as MLIR does: `f32`,
/// `*f16`); types it does not know are kept as they are.
pub fn triton_type_name(ty: &str) -> String {
    if let Some((block, element)) = descriptor_type(ty) {
        let dims: Vec<String> = block.iter().map(u32::to_string).collect();
        return format!(
            "tensordesc<{}[{}]>",
            triton_type_name(&element),
            dims.join(",")
        );
    }
    let (pointer, scalar) = match ty.strip_prefix('*') {
        Some(element) => ("*", element),
        None => ("", ty),
    };
    match ScalarType::parse(scalar) {
        Some(t) => format!("{pointer}{}", t.triton_name()),
        None => ty.to_string(),
    }
}

/// The block and element type of a tensor descriptor type, in MLIR's
/// spelling (`!tt.tensordesc<tensor<64x128xbf16>>`) or Triton's
/// (`tensordesc<bf16[64,128]>`).
pub fn descriptor_type(ty: &str) -> Option<(Vec<u32>, String)> {
    if let Some(inner) = ty
        .strip_prefix("!tt.tensordesc<tensor<")
        .and_then(|t| t.strip_suffix(">>"))
    {
        let mut parts: Vec<&str> = inner.split('x').collect();
        let element = parts.pop()?.to_string();
        let block = parts
            .iter()
            .map(|d| d.parse().ok())
            .collect::<Option<Vec<u32>>>()?;
        return (!block.is_empty()).then_some((block, element));
    }
    let inner = ty.strip_prefix("tensordesc<")?.strip_suffix("]>")?;
    let (element, dims) = inner.split_once('[')?;
    let block = dims
        .split(',')
        .map(|d| d.trim().parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    (!block.is_empty()).then_some((block, element.to_string()))
}
