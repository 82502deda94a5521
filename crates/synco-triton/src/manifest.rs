//! The launch manifest of a kernel Triton compiled: its parameters (host
//! tensor descriptors with their encodings and parts) and launch shape,
//! from the bridge's answer.

use crate::BridgeError;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use synco_manifest::{LaunchManifest, Param, ParamRole, Scratch, Target};

/// How Triton compiled the kernel to read a host tensor descriptor
/// parameter (an entry of its `tensordesc_meta`, with the data type as the
/// host's `CUtensorMapDataType`), in the order of the parameters.
#[derive(Debug, serde::Deserialize)]
pub struct DescriptorMeta {
    pub swizzle: u32,
    pub elem_size: u32,
    pub data_type: u32,
    pub block_size: Vec<u32>,
    pub fp4_padded: bool,
}

/// Gives each host tensor descriptor parameter its encoding (`metas`, in
/// order) and marks the shape and strides Triton passes after it as its
/// parts.
fn describe_descriptors(
    params: &mut [Param],
    metas: &[Option<DescriptorMeta>],
) -> Result<(), BridgeError> {
    let mut metas = metas.iter();
    let mut i = 0;
    while i < params.len() {
        let Some((block, _)) = synco_manifest::descriptor_type(&params[i].ty) else {
            i += 1;
            continue;
        };
        let name = params[i].name.clone();
        let meta = metas.next().and_then(Option::as_ref).ok_or_else(|| {
            BridgeError::Internal(format!(
                "Triton compiled tensor descriptor '{name}' without a tensor map (no tensordesc_meta): the runtime passes descriptors as tensor maps only"
            ))
        })?;
        if meta.fp4_padded {
            return Err(BridgeError::Internal(format!(
                "tensor descriptor '{name}' holds padded fp4, which the runtime does not encode"
            )));
        }
        let rank = block.len();
        params[i].descriptor = Some(synco_manifest::TensorDescriptor {
            block,
            box_dims: meta.block_size.clone(),
            swizzle: meta.swizzle,
            data_type: meta.data_type,
            element_bytes: meta.elem_size,
        });
        for part in params.iter_mut().skip(i + 1).take(2 * rank) {
            part.role = ParamRole::DescriptorPart;
        }
        i += 1 + 2 * rank;
    }
    Ok(())
}

pub(crate) fn build_manifest(
    kernel: &str,
    cubin: &Path,
    target: &Target,
    metadata: &Map<String, Value>,
    signature: &[String],
    names: &[String],
    descriptors: &[Option<DescriptorMeta>],
) -> Result<LaunchManifest, BridgeError> {
    let int = |key: &str| -> Result<u64, BridgeError> {
        metadata.get(key).and_then(Value::as_u64).ok_or_else(|| {
            BridgeError::Internal(format!("Triton's metadata has no integer '{key}'"))
        })
    };
    let mut params: Vec<Param> = signature
        .iter()
        .zip(names)
        .map(|(ty, name)| Param {
            name: name.clone(),
            ty: synco_manifest::triton_type_name(ty),
            role: if name.starts_with("synco_") {
                ParamRole::Synco
            } else {
                ParamRole::User
            },
            divisible_by: None,
            descriptor: None,
        })
        .collect();
    describe_descriptors(&mut params, descriptors)?;
    params.push(Param {
        name: "global_scratch".into(),
        ty: "*i8".into(),
        role: ParamRole::GlobalScratch,
        divisible_by: None,
        descriptor: None,
    });
    params.push(Param {
        name: "profile_scratch".into(),
        ty: "*i8".into(),
        role: ParamRole::ProfileScratch,
        divisible_by: None,
        descriptor: None,
    });
    Ok(LaunchManifest {
        format: synco_manifest::FORMAT.into(),
        version: synco_manifest::VERSION,
        kernel: kernel.into(),
        cubin: cubin
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| cubin.to_path_buf()),
        target: target.clone(),
        num_warps: int("num_warps")? as u32,
        num_ctas: int("num_ctas")? as u32,
        shared_mem_bytes: int("shared")? as u32,
        params,
        global_scratch: Scratch {
            size: int("global_scratch_size")?,
            align: int("global_scratch_align")?,
        },
        profile_scratch: Scratch {
            size: int("profile_scratch_size")?,
            align: int("profile_scratch_align")?,
        },
        triton_version: metadata
            .get("triton_version")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .into(),
        fused: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_from_metadata() {
        let metadata: Map<String, Value> = serde_json::from_str(
            r#"{"num_warps": 8, "num_ctas": 1, "shared": 1024, "global_scratch_size": 0,
                "global_scratch_align": 1, "profile_scratch_size": 0, "profile_scratch_align": 1,
                "triton_version": "3.6.0"}"#,
        )
        .unwrap();
        let m = build_manifest(
            "k",
            Path::new("/x/k.cubin"),
            &Target::default(),
            &metadata,
            &["*bf16".into(), "i32".into()],
            &["a_ptr".into(), "synco_rank".into()],
            &[],
        )
        .unwrap();
        assert_eq!(m.cubin, PathBuf::from("k.cubin"));
        assert_eq!(m.params.len(), 4);
        assert_eq!(m.params[1].role, ParamRole::Synco);
        assert_eq!(m.params[3].role, ParamRole::ProfileScratch);
        let mut missing = metadata.clone();
        missing.remove("shared");
        assert!(
            build_manifest(
                "k",
                Path::new("k.cubin"),
                &Target::default(),
                &missing,
                &[],
                &[],
                &[]
            )
            .is_err()
        );
    }

    #[test]
    fn host_descriptors_get_their_encoding_and_parts() {
        let metadata: Map<String, Value> = serde_json::from_str(
            r#"{"num_warps": 4, "num_ctas": 1, "shared": 1024, "global_scratch_size": 0,
                "global_scratch_align": 1, "profile_scratch_size": 0, "profile_scratch_align": 1}"#,
        )
        .unwrap();
        let signature: Vec<String> = [
            "!tt.tensordesc<tensor<64x128xbf16>>",
            "i32",
            "i32",
            "i64",
            "i64",
            "i32",
        ]
        .map(String::from)
        .to_vec();
        let names: Vec<String> = ["desc", "desc_0", "desc_1", "desc_2", "desc_3", "n"]
            .map(String::from)
            .to_vec();
        let meta = || DescriptorMeta {
            swizzle: 3,
            elem_size: 2,
            data_type: 9,
            block_size: vec![64, 64],
            fp4_padded: false,
        };
        let build = |metas: &[Option<DescriptorMeta>]| {
            build_manifest(
                "k",
                Path::new("k.cubin"),
                &Target::default(),
                &metadata,
                &signature,
                &names,
                metas,
            )
        };
        let m = build(&[Some(meta())]).unwrap();
        assert_eq!(m.params[0].ty, "tensordesc<bf16[64,128]>");
        let d = m.params[0].descriptor.as_ref().unwrap();
        assert_eq!(
            (d.block.clone(), d.box_dims.clone()),
            (vec![64, 128], vec![64, 64])
        );
        let roles: Vec<ParamRole> = m.params[1..6].iter().map(|p| p.role).collect();
        assert_eq!(
            roles,
            [
                [ParamRole::DescriptorPart; 4].as_slice(),
                &[ParamRole::User]
            ]
            .concat()
        );
        m.check(Path::new("k.json")).unwrap();
        let error = build(&[None]).unwrap_err().to_string();
        assert!(error.contains("'desc' without a tensor map"), "{error}");
    }
}
