//! A launch's arguments: the values a caller gives ([`Arg`]), checked
//! against the manifest's parameters and packed as `cuLaunchKernel`
//! reads them (a host tensor descriptor's map encoded, its parts filled).

use crate::descriptor::{self, TensorView};
use crate::error::{Result, RuntimeError};
use cudarc::driver::sys::{self, CUdeviceptr};
use synco_manifest::{LaunchManifest, Param, ParamRole, ScalarType};

/// One kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    Ptr(CUdeviceptr),
    I1(bool),
    I32(i32),
    I64(i64),
    F16(half::f16),
    BF16(half::bf16),
    F32(f32),
    F64(f64),
    /// A host tensor descriptor's view (see [`crate::TensorView`]).
    Descriptor(TensorView),
}

impl Arg {
    /// The value of an integer argument (`i32` or `i64`), else `None`.
    pub(crate) fn integer(&self) -> Option<i64> {
        match *self {
            Arg::I32(v) => Some(i64::from(v)),
            Arg::I64(v) => Some(v),
            _ => None,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Arg::Ptr(_) => "a pointer",
            Arg::I1(_) => "an i1",
            Arg::I32(_) => "an i32",
            Arg::I64(_) => "an i64",
            Arg::F16(_) => "an fp16",
            Arg::BF16(_) => "a bf16",
            Arg::F32(_) => "an fp32",
            Arg::F64(_) => "an fp64",
            Arg::Descriptor(_) => "a tensor descriptor",
        }
    }

    /// Whether it is a value of `param`'s type (a pointer for any pointer
    /// type; a signed or unsigned integer of the parameter's width).
    fn fits(&self, param: &Param) -> bool {
        use ScalarType as T;
        if param.descriptor.is_some() || matches!(self, Arg::Descriptor(_)) {
            return param.descriptor.is_some() && matches!(self, Arg::Descriptor(_));
        }
        let Ok(scalar) = param.scalar_type() else {
            return false;
        };
        match (self, scalar) {
            (Arg::Ptr(_), None) => true,
            (_, None) => false,
            (Arg::I1(_), Some(t)) => t == T::I1,
            (Arg::I32(_), Some(t)) => matches!(t, T::I32 | T::U32),
            (Arg::I64(_), Some(t)) => matches!(t, T::I64 | T::U64),
            (Arg::F16(_), Some(t)) => t == T::F16,
            (Arg::BF16(_), Some(t)) => t == T::BF16,
            (Arg::F32(_), Some(t)) => t == T::F32,
            (Arg::F64(_), Some(t)) => t == T::F64,
            (Arg::Ptr(_), Some(_)) | (Arg::Descriptor(_), _) => false,
        }
    }

    /// `Ok` if it is a value of parameter `index` of `m`, `param`; else
    /// the error that names the parameter.
    pub(crate) fn check_fits(&self, m: &LaunchManifest, index: usize, param: &Param) -> Result<()> {
        if self.fits(param) {
            return self.check_divisible(m, param);
        }
        Err(RuntimeError::ArgType {
            kernel: m.kernel.clone(),
            index,
            name: param.name.clone(),
            ty: param.ty.clone(),
            given: self.kind(),
        })
    }

    /// The value is a multiple of what the kernel was compiled to assume
    /// of it (`Param::divisible_by`), or the launch is refused.
    fn check_divisible(&self, m: &LaunchManifest, param: &Param) -> Result<()> {
        let Some(by) = param.divisible_by.filter(|by| *by > 1) else {
            return Ok(());
        };
        let value = match *self {
            Arg::Ptr(p) => i128::from(p),
            Arg::I32(v) => i128::from(v),
            Arg::I64(v) => i128::from(v),
            _ => return Ok(()),
        };
        if value % i128::from(by) == 0 {
            return Ok(());
        }
        Err(RuntimeError::NotDivisible {
            kernel: m.kernel.clone(),
            name: param.name.clone(),
            value: value as i64,
            by,
        })
    }

    /// The value as the launch's argument buffer holds it: its bytes first
    /// (the driver reads as many as the parameter takes).
    fn bytes(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        let mut put = |bytes: &[u8]| out[..bytes.len()].copy_from_slice(bytes);
        match *self {
            Arg::Ptr(p) => put(&p.to_ne_bytes()),
            Arg::I1(v) => put(&[u8::from(v)]),
            Arg::I32(v) => put(&v.to_ne_bytes()),
            Arg::I64(v) => put(&v.to_ne_bytes()),
            Arg::F16(v) => put(&v.to_bits().to_ne_bytes()),
            Arg::BF16(v) => put(&v.to_bits().to_ne_bytes()),
            Arg::F32(v) => put(&v.to_ne_bytes()),
            Arg::F64(v) => put(&v.to_ne_bytes()),
            Arg::Descriptor(view) => put(&view.base.to_ne_bytes()),
        }
        out
    }
}

/// One parameter's bytes as `cuLaunchKernel` reads them.
pub(crate) enum ParamValue {
    /// A pointer or scalar: its bytes first.
    Word([u8; 8]),
    /// A host tensor descriptor's map.
    TensorMap(Box<sys::CUtensorMap>),
}

impl ParamValue {
    pub(crate) fn as_mut_ptr(&mut self) -> *mut std::ffi::c_void {
        match self {
            ParamValue::Word(bytes) => bytes.as_mut_ptr().cast(),
            ParamValue::TensorMap(map) => std::ptr::from_mut(map.as_mut()).cast(),
        }
    }
}

/// Encodes a descriptor parameter's map from its view.
pub(crate) type EncodeTensorMap<'a> = dyn Fn(
        &LaunchManifest,
        &Param,
        &synco_manifest::TensorDescriptor,
        &TensorView,
    ) -> Result<sys::CUtensorMap>
    + 'a;

/// The launch's argument values, in the manifest's parameter order: the
/// user's values for `user` parameters (each descriptor's map, `encode`d,
/// and its parts after it), `abi(name)` for `synco` ones (rank, world
/// size, heap bases, flags, epoch, errors, plan buffers), then Triton's
/// scratch pointers. Each value must fit its parameter's type; an ABI
/// parameter `abi` does not know is an error.
pub(crate) fn kernel_params(
    m: &LaunchManifest,
    user: &[Arg],
    abi: &dyn Fn(&str) -> Option<Arg>,
    global_scratch: CUdeviceptr,
    encode: &EncodeTensorMap,
) -> Result<Vec<ParamValue>> {
    check_arg_count(m, user.len())?;
    let mut own = descriptor::expand(m, user)?.into_iter();
    m.params
        .iter()
        .enumerate()
        .map(|(index, param)| {
            let value = match param.role {
                ParamRole::User | ParamRole::DescriptorPart => own.next(),
                ParamRole::Synco => {
                    Some(
                        abi(&param.name).ok_or_else(|| RuntimeError::MissingAbiValue {
                            kernel: m.kernel.clone(),
                            name: param.name.clone(),
                        })?,
                    )
                }
                ParamRole::GlobalScratch => Some(Arg::Ptr(global_scratch)),
                ParamRole::ProfileScratch => Some(Arg::Ptr(0)),
            }
            .unwrap_or(Arg::I32(0));
            value.check_fits(m, index, param)?;
            Ok(match (value, &param.descriptor) {
                (Arg::Descriptor(view), Some(d)) => {
                    ParamValue::TensorMap(Box::new(encode(m, param, d, &view)?))
                }
                _ => ParamValue::Word(value.bytes()),
            })
        })
        .collect()
}

/// `given` user arguments are as many as `m`'s kernel takes of its own.
pub(crate) fn check_arg_count(m: &LaunchManifest, given: usize) -> Result<()> {
    let expected = m
        .params
        .iter()
        .filter(|p| p.role == ParamRole::User)
        .count();
    if given == expected {
        return Ok(());
    }
    Err(RuntimeError::ArgCount {
        kernel: m.kernel.clone(),
        expected,
        given,
    })
}

/// What a launch's index bounds depend on: its grid and, per rank, the
/// values of the kernel's integer arguments (a descriptor's shape and
/// strides among them).
pub(crate) type BoundsKey = ((u32, u32, u32), Vec<Vec<Option<i64>>>);

/// The key of a launch of `m` on `grid` with `args` on each of `ranks`.
pub(crate) fn bounds_key(
    m: &LaunchManifest,
    grid: (u32, u32, u32),
    ranks: std::ops::Range<usize>,
    args: &dyn Fn(usize) -> Vec<Arg>,
) -> Result<BoundsKey> {
    let integers = |rank: usize| -> Result<Vec<Option<i64>>> {
        Ok(descriptor::expand(m, &args(rank))?
            .iter()
            .map(Arg::integer)
            .collect())
    };
    Ok((grid, ranks.map(integers).collect::<Result<_>>()?))
}

#[cfg(test)]
pub(crate) mod test_support {
    use synco_manifest::{FORMAT, LaunchManifest, Param, ParamRole, Scratch, Target, VERSION};

    /// A manifest of kernel `k` with `params` (name, type, role).
    pub(crate) fn manifest(params: &[(&str, &str, ParamRole)]) -> LaunchManifest {
        LaunchManifest {
            format: FORMAT.into(),
            version: VERSION,
            kernel: "k".into(),
            cubin: "k.cubin".into(),
            target: Target::default(),
            num_warps: 4,
            num_ctas: 1,
            shared_mem_bytes: 0,
            params: params
                .iter()
                .map(|(name, ty, role)| Param {
                    name: (*name).into(),
                    ty: (*ty).into(),
                    role: *role,
                    divisible_by: None,
                    descriptor: None,
                })
                .collect(),
            global_scratch: Scratch::default(),
            profile_scratch: Scratch::default(),
            triton_version: "3.6.0".into(),
            fused: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::manifest;
    use super::*;

    /// Arguments the kernel was compiled to assume divisible by 16 (an
    /// address, an extent) are refused otherwise, naming them.
    #[test]
    fn values_assumed_divisible_are_checked() {
        let mut m = manifest(&[
            ("a_ptr", "*bf16", ParamRole::User),
            ("M", "i32", ParamRole::User),
        ]);
        for p in &mut m.params {
            p.divisible_by = Some(16);
        }
        let (ptr, extent) = (&m.params[0], &m.params[1]);
        assert!(Arg::Ptr(0x7f00_0000_1000).check_fits(&m, 0, ptr).is_ok());
        assert!(Arg::I32(4096).check_fits(&m, 1, extent).is_ok());
        for (arg, param, value) in [
            (Arg::Ptr(0x7f00_0000_1002), ptr, 0x7f00_0000_1002i64),
            (Arg::I32(100), extent, 100),
        ] {
            match arg.check_fits(&m, 0, param) {
                Err(e @ RuntimeError::NotDivisible { by: 16, .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains(&param.name) && text.contains(&value.to_string()),
                        "{text}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
        // Without the assumption, any value goes.
        m.params[1].divisible_by = None;
        assert!(Arg::I32(100).check_fits(&m, 1, &m.params[1]).is_ok());
    }

    const FUSED: &[(&str, &str, ParamRole)] = &[
        ("a_ptr", "*bf16", ParamRole::User),
        ("M", "i32", ParamRole::User),
        ("synco_rank", "i32", ParamRole::Synco),
        ("synco_heap_bases", "*i64", ParamRole::Synco),
        ("global_scratch", "*i8", ParamRole::GlobalScratch),
        ("profile_scratch", "*i8", ParamRole::ProfileScratch),
    ];

    /// A tensor map that records the view's address, in place of the
    /// driver's encoding.
    fn fake_encode(
        _: &LaunchManifest,
        _: &Param,
        _: &synco_manifest::TensorDescriptor,
        view: &TensorView,
    ) -> Result<sys::CUtensorMap> {
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        map.opaque[0] = view.base;
        Ok(map)
    }

    /// [`kernel_params`]' words (a descriptor's map: its first 8 bytes).
    fn words(
        m: &LaunchManifest,
        user: &[Arg],
        abi: &dyn Fn(&str) -> Option<Arg>,
        scratch: CUdeviceptr,
    ) -> Result<Vec<[u8; 8]>> {
        Ok(kernel_params(m, user, abi, scratch, &fake_encode)?
            .into_iter()
            .map(|v| match v {
                ParamValue::Word(bytes) => bytes,
                ParamValue::TensorMap(map) => map.opaque[0].to_ne_bytes(),
            })
            .collect())
    }

    /// A host tensor descriptor's map, then its parts (shape as i32s,
    /// strides as i64s) from the same view; the caller passes only the view.
    #[test]
    fn descriptors_are_encoded_and_followed_by_their_parts() {
        let mut m = manifest(&[
            ("desc", "tensordesc<bf16[64,128]>", ParamRole::User),
            ("desc_0", "i32", ParamRole::DescriptorPart),
            ("desc_1", "i32", ParamRole::DescriptorPart),
            ("desc_2", "i64", ParamRole::DescriptorPart),
            ("desc_3", "i64", ParamRole::DescriptorPart),
            ("n", "i32", ParamRole::User),
        ]);
        m.params[0].descriptor = Some(synco_manifest::TensorDescriptor {
            block: vec![64, 128],
            box_dims: vec![64, 64],
            swizzle: 3,
            data_type: 9,
            element_bytes: 2,
        });
        let view = TensorView::new(0x4000, &[16384, 128], &[128, 1]).unwrap();
        // A launch's index bounds depend on its descriptors' shapes too.
        let key = |view| {
            let args = move |_| vec![Arg::Descriptor(view), Arg::I32(5)];
            bounds_key(&m, (1, 1, 1), 0..1, &args).unwrap()
        };
        let taller = TensorView::new(0x4000, &[32768, 128], &[128, 1]).unwrap();
        assert_eq!(
            key(view).1,
            [[None, Some(16384), Some(128), Some(128), Some(1), Some(5)]]
        );
        assert_ne!(key(view), key(taller));
        let values = words(&m, &[Arg::Descriptor(view), Arg::I32(5)], &abi, 0).unwrap();
        assert_eq!(u64::from_ne_bytes(values[0]), 0x4000);
        let int = |v: [u8; 8]| i32::from_ne_bytes(v[..4].try_into().unwrap());
        assert_eq!((int(values[1]), int(values[2])), (16384, 128));
        assert_eq!(
            (i64::from_ne_bytes(values[3]), i64::from_ne_bytes(values[4])),
            (128, 1)
        );
        assert_eq!(int(values[5]), 5);
        let err = words(&m, &[Arg::Ptr(0x4000), Arg::I32(5)], &abi, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "argument 0 ('desc') of 'k' is tensordesc<bf16[64,128]>, but the value given is a pointer"
        );
        let huge = TensorView::new(0x4000, &[1 << 32, 128], &[128, 1]).unwrap();
        let err = words(&m, &[Arg::Descriptor(huge), Arg::I32(5)], &abi, 0).unwrap_err();
        assert!(err.to_string().contains("beyond an i32"), "{err}");
    }

    fn abi(name: &str) -> Option<Arg> {
        match name {
            "synco_rank" => Some(Arg::I32(1)),
            "synco_heap_bases" => Some(Arg::Ptr(0x2000)),
            _ => None,
        }
    }

    #[test]
    fn arguments_follow_the_manifest_order() {
        let m = manifest(FUSED);
        let values = words(&m, &[Arg::Ptr(0x1000), Arg::I32(7)], &abi, 0x3000).unwrap();
        assert_eq!(values.len(), 6);
        assert_eq!(u64::from_ne_bytes(values[0]), 0x1000);
        assert_eq!(i32::from_ne_bytes(values[1][..4].try_into().unwrap()), 7);
        assert_eq!(i32::from_ne_bytes(values[2][..4].try_into().unwrap()), 1);
        assert_eq!(u64::from_ne_bytes(values[3]), 0x2000);
        assert_eq!(u64::from_ne_bytes(values[4]), 0x3000);
        assert_eq!(u64::from_ne_bytes(values[5]), 0);
    }

    /// Every scalar type a Triton kernel takes, in either spelling, is
    /// packed as the driver reads it: its bytes first.
    #[test]
    fn scalars_of_every_triton_type_are_packed() {
        let m = manifest(&[
            ("sm_scale", "fp32", ParamRole::User),
            ("alpha", "f16", ParamRole::User),
            ("beta", "bf16", ParamRole::User),
            ("n", "i64", ParamRole::User),
            ("causal", "i1", ParamRole::User),
            ("eps", "fp64", ParamRole::User),
        ]);
        let args = [
            Arg::F32(0.125),
            Arg::F16(half::f16::from_f32(1.5)),
            Arg::BF16(half::bf16::from_f32(-2.0)),
            Arg::I64(1 << 40),
            Arg::I1(true),
            Arg::F64(1e-6),
        ];
        let values = words(&m, &args, &abi, 0).unwrap();
        assert_eq!(
            f32::from_ne_bytes(values[0][..4].try_into().unwrap()),
            0.125
        );
        assert_eq!(
            u16::from_ne_bytes(values[1][..2].try_into().unwrap()),
            0x3e00
        );
        assert_eq!(
            u16::from_ne_bytes(values[2][..2].try_into().unwrap()),
            0xc000
        );
        assert_eq!(i64::from_ne_bytes(values[3]), 1 << 40);
        assert_eq!(values[4], [1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(f64::from_ne_bytes(values[5]), 1e-6);
        let mut swapped = args;
        swapped.swap(1, 2);
        let err = words(&m, &swapped, &abi, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "argument 1 ('alpha') of 'k' is f16, but the value given is a bf16"
        );
    }

    #[test]
    fn wrong_counts_types_and_unknown_abi_values_are_errors() {
        let m = manifest(FUSED);
        let err = words(&m, &[Arg::Ptr(1)], &abi, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel 'k' takes 2 arguments of its own, 1 were given"
        );
        let err = words(&m, &[Arg::I32(1), Arg::I32(7)], &abi, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "argument 0 ('a_ptr') of 'k' is *bf16, but the value given is an i32"
        );
        let only_rank = |name: &str| (name == "synco_rank").then_some(Arg::I32(0));
        let err = words(&m, &[Arg::Ptr(1), Arg::I32(7)], &only_rank, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel 'k' takes ABI argument 'synco_heap_bases', which this launch cannot provide \
             (a plan buffer without a binding?)"
        );
        // A plain (unfused) kernel takes no ABI values.
        let plain = manifest(&[
            ("x", "*fp32", ParamRole::User),
            ("global_scratch", "*i8", ParamRole::GlobalScratch),
        ]);
        assert_eq!(words(&plain, &[Arg::Ptr(1)], &abi, 0).unwrap().len(), 2);
    }
}
