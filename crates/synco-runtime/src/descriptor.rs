//! Host tensor descriptors: a kernel parameter Triton compiled to read
//! through a `CUtensorMap` (`tensordesc<bf16[64,128]>`), which the runtime
//! encodes at each launch from a view of a tensor (its address, shape and
//! strides) and the encoding the manifest records. Triton passes the
//! view's shape and strides again after the map, as the descriptor's parts.

use crate::args::Arg;
use crate::error::{Result, RuntimeError};
use cudarc::driver::sys::{self, CUdeviceptr};
use synco_manifest::{LaunchManifest, Param, ParamRole, TensorDescriptor};

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;

/// A tensor as a descriptor views it: its address, and per dimension its
/// extent and stride in elements (row-major: the last stride 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorView {
    pub base: CUdeviceptr,
    rank: usize,
    shape: [i64; MAX_RANK],
    strides: [i64; MAX_RANK],
}

impl TensorView {
    /// `None` unless `shape` and `strides` have the same 1 to 5 dimensions.
    pub fn new(base: CUdeviceptr, shape: &[i64], strides: &[i64]) -> Option<Self> {
        let rank = shape.len();
        if rank == 0 || rank > MAX_RANK || strides.len() != rank {
            return None;
        }
        let mut view = TensorView {
            base,
            rank,
            shape: [0; MAX_RANK],
            strides: [0; MAX_RANK],
        };
        view.shape[..rank].copy_from_slice(shape);
        view.strides[..rank].copy_from_slice(strides);
        Some(view)
    }

    pub fn shape(&self) -> &[i64] {
        &self.shape[..self.rank]
    }

    pub fn strides(&self) -> &[i64] {
        &self.strides[..self.rank]
    }
}

/// The launch's values of the kernel's own parameters, in parameter order:
/// the caller's `user` values, each descriptor followed by its parts (its
/// shape as `i32`s, its strides as `i64`s). Index `i` is the kernel's
/// argument `i`, as a plan's `bind(i)` and the manifest's fixed scalars
/// count them. A value that is not what its parameter takes is left for
/// the type check to name.
pub(crate) fn expand(m: &LaunchManifest, user: &[Arg]) -> Result<Vec<Arg>> {
    let mut values = Vec::with_capacity(user.len());
    let mut user = user.iter();
    let mut view: Option<TensorView> = None;
    let mut part = 0;
    for param in &m.params {
        match param.role {
            ParamRole::User => {
                let Some(value) = user.next().copied() else {
                    break;
                };
                view = match value {
                    Arg::Descriptor(v) => Some(v),
                    _ => None,
                };
                part = 0;
                values.push(value);
            }
            ParamRole::DescriptorPart => {
                values.push(descriptor_part(m, param, view.as_ref(), part)?);
                part += 1;
            }
            _ => {}
        }
    }
    Ok(values)
}

/// Part `k` of the descriptor `view` (its shape, then its strides).
fn descriptor_part(
    m: &LaunchManifest,
    param: &Param,
    view: Option<&TensorView>,
    k: usize,
) -> Result<Arg> {
    let Some(view) = view else {
        return Ok(Arg::I32(0));
    };
    if k < view.rank {
        let extent = view.shape[k];
        return i32::try_from(extent)
            .map(Arg::I32)
            .map_err(|_| RuntimeError::Descriptor {
                kernel: m.kernel.clone(),
                name: param.name.clone(),
                what: format!("dimension {k} has {extent} elements, beyond an i32"),
            });
    }
    Ok(Arg::I64(
        view.strides.get(k - view.rank).copied().unwrap_or(0),
    ))
}

/// The `CUtensorMap` of `view` for parameter `param` (encoded as
/// `descriptor` says), or an error naming the parameter and what the view
/// lacks.
pub(crate) fn encode(
    m: &LaunchManifest,
    param: &Param,
    descriptor: &TensorDescriptor,
    view: &TensorView,
) -> Result<sys::CUtensorMap> {
    let refuse = |what: String| RuntimeError::Descriptor {
        kernel: m.kernel.clone(),
        name: param.name.clone(),
        what,
    };
    let (dims, strides) = tensor_map_geometry(descriptor, view).map_err(refuse)?;
    let rank = view.rank;
    let boxes: Vec<u32> = descriptor.box_dims.iter().rev().copied().collect();
    let element_strides = [1u32; MAX_RANK];
    let data_type = data_type(descriptor.data_type).ok_or_else(|| {
        refuse(format!(
            "data type {} is not one of CUDA's",
            descriptor.data_type
        ))
    })?;
    let swizzle = swizzle(descriptor.swizzle).ok_or_else(|| {
        refuse(format!(
            "swizzle {} is not one of CUDA's",
            descriptor.swizzle
        ))
    })?;
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: every array holds `rank` values (strides `rank - 1`); the
    // driver writes the map.
    let code = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            data_type,
            rank as u32,
            view.base as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if code != sys::CUresult::CUDA_SUCCESS {
        return Err(refuse(format!(
            "the driver cannot encode it ({code:?}): shape {:?}, strides {:?}, box {:?}",
            view.shape(),
            view.strides(),
            descriptor.box_dims
        )));
    }
    // SAFETY: the driver wrote the map.
    Ok(unsafe { map.assume_init() })
}

/// A tensor map's extents (innermost first) and byte strides of its outer
/// dimensions, for `view` read as `descriptor` says; else why a bulk copy
/// cannot read it (what `cuTensorMapEncodeTiled` would refuse, said in the
/// view's terms).
fn tensor_map_geometry(
    descriptor: &TensorDescriptor,
    view: &TensorView,
) -> std::result::Result<(Vec<u64>, Vec<u64>), String> {
    let rank = view.rank;
    if descriptor.block.len() != rank {
        return Err(format!(
            "the view has {rank} dimensions, the kernel reads blocks of {}",
            descriptor.block.len()
        ));
    }
    let bytes = u64::from(descriptor.element_bytes);
    if !view.base.is_multiple_of(16) {
        return Err(format!(
            "its address {:#x} is not 16-byte aligned",
            view.base
        ));
    }
    if view.strides[rank - 1] != 1 {
        return Err(format!(
            "its last dimension has stride {}: a bulk copy reads rows of contiguous elements",
            view.strides[rank - 1]
        ));
    }
    let mut dims = Vec::with_capacity(rank);
    for d in (0..rank).rev() {
        let extent = view.shape[d];
        if extent <= 0 {
            return Err(format!("dimension {d} has {extent} elements"));
        }
        dims.push(extent as u64);
    }
    let mut strides = Vec::with_capacity(rank.saturating_sub(1));
    for d in (0..rank - 1).rev() {
        let stride = u64::try_from(view.strides[d])
            .ok()
            .and_then(|s| s.checked_mul(bytes))
            .filter(|s| s % 16 == 0)
            .ok_or_else(|| {
                format!(
                    "dimension {d}'s stride, {} elements, is not a positive multiple of 16 bytes",
                    view.strides[d]
                )
            })?;
        strides.push(stride);
    }
    Ok((dims, strides))
}

fn data_type(value: u32) -> Option<sys::CUtensorMapDataType> {
    use sys::CUtensorMapDataType as T;
    [
        T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
        T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
    ]
    .into_iter()
    .find(|t| *t as u32 == value)
}

fn swizzle(value: u32) -> Option<sys::CUtensorMapSwizzle> {
    use sys::CUtensorMapSwizzle as S;
    [
        S::CU_TENSOR_MAP_SWIZZLE_NONE,
        S::CU_TENSOR_MAP_SWIZZLE_32B,
        S::CU_TENSOR_MAP_SWIZZLE_64B,
        S::CU_TENSOR_MAP_SWIZZLE_128B,
    ]
    .into_iter()
    .find(|s| *s as u32 == value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor() -> TensorDescriptor {
        TensorDescriptor {
            block: vec![64, 128],
            box_dims: vec![64, 64],
            swizzle: 3,
            data_type: 9,
            element_bytes: 2,
        }
    }

    #[test]
    fn a_row_major_view_gives_the_maps_extents_and_byte_strides() {
        let view = TensorView::new(0x1000, &[16384, 128], &[128, 1]).unwrap();
        let (dims, strides) = tensor_map_geometry(&descriptor(), &view).unwrap();
        assert_eq!(dims, [128, 16384]);
        assert_eq!(strides, [256]);
    }

    #[test]
    fn views_a_bulk_copy_cannot_read_are_refused_with_the_reason() {
        let refused = |base, shape: &[i64], strides: &[i64]| {
            let view = TensorView::new(base, shape, strides).unwrap();
            tensor_map_geometry(&descriptor(), &view).unwrap_err()
        };
        assert!(refused(0x1008, &[64, 128], &[128, 1]).contains("not 16-byte aligned"));
        assert!(refused(0x1000, &[64, 128], &[1, 64]).contains("stride 64"));
        assert!(refused(0x1000, &[64, 128], &[129, 1]).contains("129 elements"));
        assert!(refused(0x1000, &[0, 128], &[128, 1]).contains("dimension 0 has 0"));
        let view = TensorView::new(0x1000, &[4, 64, 128], &[8192, 128, 1]).unwrap();
        assert!(
            tensor_map_geometry(&descriptor(), &view)
                .unwrap_err()
                .contains("3 dimensions")
        );
        assert!(TensorView::new(0, &[1; 6], &[1; 6]).is_none());
    }

    #[test]
    fn cuda_enums_are_read_by_value() {
        assert_eq!(
            data_type(9),
            Some(sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)
        );
        assert_eq!(data_type(99), None);
        assert_eq!(
            swizzle(3),
            Some(sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B)
        );
        assert_eq!(swizzle(7), None);
    }
}
