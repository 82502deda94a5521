//! The launch manifest: a JSON file written next to a cubin by
//! `synco compile`, read by the runtime. It says everything needed to launch
//! the kernel with no Python and no MLIR at run time.
//!
//! ```json
//! {
//!   "format": "synco-launch-manifest", "version": 1,
//!   "kernel": "matmul_kernel", "cubin": "matmul_kernel.cubin",
//!   "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
//!   "num_warps": 8, "num_ctas": 1, "shared_mem_bytes": 32768,
//!   "params": [
//!     {"name": "a_ptr", "type": "*bf16", "role": "user"}, ...,
//!     {"name": "global_scratch", "type": "*i8", "role": "global_scratch"},
//!     {"name": "profile_scratch", "type": "*i8", "role": "profile_scratch"}
//!   ],
//!   "global_scratch": {"size": 0, "align": 1},
//!   "profile_scratch": {"size": 0, "align": 1},
//!   "triton_version": "3.6.0"
//! }
//! ```
//!
//! Kernel parameters follow Triton 3.6's ABI: the kernel's own arguments in
//! order, then two pointers Triton appends (global scratch, profile
//! scratch). A scratch pointer may be null when its size is 0.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod bounds;
mod fused;
mod params;

pub use bounds::{IndexBound, IndexExpr, MAX_EVALUATED_PROGRAMS, Program};
pub use fused::{
    ChunkKind, ChunkLayout, Copy, CopyRows, FusedPlan, PlanBuffer, ReductionCopy, RingSteps,
    ScalarArg, ScalarRole,
};
pub use params::{
    Param, ParamRole, ScalarType, TENSOR_MAP_BYTES, TensorDescriptor, descriptor_type,
    triton_type_name,
};

pub const FORMAT: &str = "synco-launch-manifest";
pub const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub backend: String,
    pub arch: u32,
    pub warp_size: u32,
}

impl Default for Target {
    fn default() -> Self {
        Self {
            backend: "cuda".into(),
            arch: 90,
            warp_size: 32,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scratch {
    pub size: u64,
    pub align: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchManifest {
    pub format: String,
    pub version: u32,
    pub kernel: String,
    /// The cubin, relative to the manifest's directory.
    pub cubin: PathBuf,
    pub target: Target,
    pub num_warps: u32,
    pub num_ctas: u32,
    pub shared_mem_bytes: u32,
    pub params: Vec<Param>,
    pub global_scratch: Scratch,
    pub profile_scratch: Scratch,
    pub triton_version: String,
    /// For fused kernels: the plan's buffers, chunk flags and host transfer
    /// schedule (written by `chunk-lower-transfers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused: Option<FusedPlan>,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read manifest {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a launch manifest: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{path}: expected format '{FORMAT}' version {VERSION}, found '{format}' version {version}"
    )]
    Format {
        path: PathBuf,
        format: String,
        version: u32,
    },
    #[error("{path}: {what}")]
    Launch { path: PathBuf, what: String },
    #[error("parameter '{param}' has type '{ty}', which the runtime cannot pass")]
    UnsupportedType { param: String, ty: String },
    #[error("{path}: copy '{copy}' names rank {rank}, outside the plan's {world_size} ranks")]
    CopyRank {
        path: PathBuf,
        copy: String,
        rank: i64,
        world_size: i64,
    },
    #[error(
        "{path}: plan buffer @{buffer} of shape {shape:?} has a negative dimension or more bytes than an i64 counts"
    )]
    BufferSize {
        path: PathBuf,
        buffer: String,
        shape: Vec<i64>,
    },
    #[error("{path}: {what} names @{buffer}, which is not a buffer of the plan")]
    CopyBuffer {
        path: PathBuf,
        what: String,
        buffer: String,
    },
    #[error(
        "{path}: {what} reaches outside @{buffer} ({size} bytes, or its element size is unknown): {span}"
    )]
    CopyOutOfBounds {
        path: PathBuf,
        what: String,
        buffer: String,
        size: i64,
        /// The rows it copies, in words.
        span: String,
    },
    #[error("{path}: {what} names flag {flag}, outside the kernel's {num_flags} flags")]
    FlagIndex {
        path: PathBuf,
        what: String,
        flag: i64,
        num_flags: i64,
    },
    #[error(
        "{path}: {what} copies {count} rows of {bytes} bytes with pitches {src_pitch} / {dst_pitch}: rows would overlap"
    )]
    CopyRows {
        path: PathBuf,
        what: String,
        count: i64,
        bytes: i64,
        src_pitch: i64,
        dst_pitch: i64,
    },
}

impl LaunchManifest {
    /// Reads and checks a manifest.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.into(),
            source,
        })?;
        let manifest: Self =
            serde_json::from_str(&text).map_err(|source| ManifestError::Parse {
                path: path.into(),
                source,
            })?;
        manifest.check(path)?;
        Ok(manifest)
    }

    /// What [`LaunchManifest::load`] checks once it has parsed the file at
    /// `path` (named in the errors): what [`LaunchManifest::check_written`]
    /// does, and that the runtime can pass every parameter's type.
    pub fn check(&self, path: &Path) -> Result<(), ManifestError> {
        self.check_written(path)?;
        for param in &self.params {
            param.size_bytes()?;
        }
        Ok(())
    }

    /// What the compiler checks before it writes a manifest: the format
    /// and version, the launch shape, and the schedule's ranks, flags and
    /// copies. Not the parameters' types: emitting a kernel never depends
    /// on what the runtime can launch.
    pub fn check_written(&self, path: &Path) -> Result<(), ManifestError> {
        if self.format != FORMAT || self.version != VERSION {
            return Err(ManifestError::Format {
                path: path.into(),
                format: self.format.clone(),
                version: self.version,
            });
        }
        self.check_launch(path)?;
        self.check_descriptor_parts(path)?;
        if let Some(fused) = &self.fused {
            fused.check_schedule(path)?;
        }
        Ok(())
    }

    /// The launch shape the runtime can start: one CTA per program (it
    /// launches no thread-block clusters) of 1 to 32 warps, a power of two.
    fn check_launch(&self, path: &Path) -> Result<(), ManifestError> {
        let what = if self.num_ctas != 1 {
            format!(
                "the kernel was compiled for {} CTAs per program (num_ctas); the runtime \
                 launches one, without thread-block clusters",
                self.num_ctas
            )
        } else if !(self.num_warps.is_power_of_two() && self.num_warps <= 32) {
            format!(
                "num_warps {}: a program runs 1, 2, 4, 8, 16 or 32 warps",
                self.num_warps
            )
        } else {
            return Ok(());
        };
        Err(ManifestError::Launch {
            path: path.into(),
            what,
        })
    }

    /// Every host tensor descriptor parameter has its encoding and is
    /// followed by its parts, `rank` `i32`s then `rank` `i64`s, and every
    /// part follows its descriptor.
    fn check_descriptor_parts(&self, path: &Path) -> Result<(), ManifestError> {
        let mut i = 0;
        while let Some(param) = self.params.get(i) {
            let wrong = |what: String| ManifestError::Launch {
                path: path.into(),
                what: format!("parameter '{}': {what}", param.name),
            };
            if param.role == ParamRole::DescriptorPart {
                return Err(wrong(
                    "a descriptor's part that follows no descriptor".into(),
                ));
            }
            let Some(descriptor) = &param.descriptor else {
                if descriptor_type(&param.ty).is_some() {
                    return Err(wrong("a tensor descriptor without its encoding".into()));
                }
                i += 1;
                continue;
            };
            let rank = descriptor.block.len();
            if rank == 0 || rank > 5 || descriptor.box_dims.len() != rank {
                return Err(wrong(format!(
                    "a descriptor of {rank} dimensions with a box of {}: tensor maps have 1 to 5",
                    descriptor.box_dims.len()
                )));
            }
            for k in 0..2 * rank {
                let expected = if k < rank { "i32" } else { "i64" };
                match self.params.get(i + 1 + k) {
                    Some(p) if p.role == ParamRole::DescriptorPart && p.ty == expected => {}
                    _ => {
                        return Err(wrong(format!(
                            "a descriptor of {rank} dimensions must be followed by {rank} i32 and {rank} i64 parts"
                        )));
                    }
                }
            }
            i += 1 + 2 * rank;
        }
        Ok(())
    }

    /// The cubin's path, resolved against the manifest's directory.
    pub fn cubin_path(&self, manifest_path: &Path) -> PathBuf {
        manifest_path
            .parent()
            .unwrap_or(Path::new("."))
            .join(&self.cubin)
    }

    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LaunchManifest {
        LaunchManifest {
            format: FORMAT.into(),
            version: VERSION,
            kernel: "k".into(),
            cubin: "k.cubin".into(),
            target: Target::default(),
            num_warps: 4,
            num_ctas: 1,
            shared_mem_bytes: 1024,
            params: vec![
                Param {
                    name: "a".into(),
                    ty: "*bf16".into(),
                    role: ParamRole::User,
                    divisible_by: None,
                    descriptor: None,
                },
                Param {
                    name: "n".into(),
                    ty: "i32".into(),
                    role: ParamRole::User,
                    divisible_by: None,
                    descriptor: None,
                },
                Param {
                    name: "global_scratch".into(),
                    ty: "*i8".into(),
                    role: ParamRole::GlobalScratch,
                    divisible_by: None,
                    descriptor: None,
                },
            ],
            global_scratch: Scratch { size: 0, align: 1 },
            profile_scratch: Scratch { size: 0, align: 1 },
            triton_version: "3.6.0".into(),
            fused: None,
        }
    }

    #[test]
    fn round_trips_through_json_and_resolves_the_cubin() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.json");
        std::fs::write(&path, sample().to_json()).unwrap();
        let loaded = LaunchManifest::load(&path).unwrap();
        assert_eq!(loaded, sample());
        assert_eq!(loaded.cubin_path(&path), dir.join("k.cubin"));
        assert!(sample().to_json().contains(r#""role": "global_scratch""#));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_other_formats_and_unknown_types() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.json");
        let mut m = sample();
        m.version = 99;
        std::fs::write(&path, m.to_json()).unwrap();
        assert!(matches!(
            LaunchManifest::load(&path),
            Err(ManifestError::Format { .. })
        ));
        let mut m = sample();
        m.params[1].ty = "tensor".into();
        std::fs::write(&path, m.to_json()).unwrap();
        let err = LaunchManifest::load(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "parameter 'n' has type 'tensor', which the runtime cannot pass"
        );
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            LaunchManifest::load(&path),
            Err(ManifestError::Parse { .. })
        ));
        for (ctas, warps, says) in [(2, 4, "compiled for 2 CTAs"), (1, 6, "num_warps 6")] {
            let mut m = sample();
            m.num_ctas = ctas;
            m.num_warps = warps;
            std::fs::write(&path, m.to_json()).unwrap();
            let err = LaunchManifest::load(&path).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_copies_outside_the_plans_ranks() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-ranks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.json");
        let copy: Copy = serde_json::from_str(
            r#"{"name": "A_p1_c0", "order": 1, "src_rank": 2, "dst_rank": 0, "src_buffer": "A",
                "dst_buffer": "A", "src_offset": 0, "dst_offset": 0, "rows": 1, "row_elems": 8,
                "src_pitch": 8, "dst_pitch": 8, "flag": 2}"#,
        )
        .unwrap();
        let mut m = sample();
        m.fused = Some(
            serde_json::from_str(
                r#"{"plan": "p", "world_size": 2, "num_flags": 4, "buffers": [], "chunks": [], "copies": []}"#,
            )
            .unwrap(),
        );
        m.fused.as_mut().unwrap().copies = vec![vec![copy], vec![]];
        std::fs::write(&path, m.to_json()).unwrap();
        let err = LaunchManifest::load(&path).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("copy 'A_p1_c0' names rank 2, outside the plan's 2 ranks"),
            "{err}"
        );
        // A rank inside the plan, a flag outside the kernel's.
        let fused = m.fused.as_mut().unwrap();
        fused.copies[0][0].src_rank = 1;
        fused.copies[0][0].flag = Some(9);
        std::fs::write(&path, m.to_json()).unwrap();
        let err = LaunchManifest::load(&path).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("copy 'A_p1_c0' names flag 9, outside the kernel's 4 flags"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_reduction_copies_outside_the_plan() {
        let dir = std::env::temp_dir().join(format!("synco-manifest-rc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.json");
        const C: &str =
            r#"{"name": "C", "arg": 2, "shape": [4, 256], "element": "bf16", "element_bytes": 2}"#;
        let load = |copy: &str, completion: &str| {
            let mut m = sample();
            m.fused = Some(
                serde_json::from_str(&format!(
                    r#"{{"plan": "p", "world_size": 2, "num_flags": 8, "buffers": [{C}], "chunks": [], "copies": [],
                        "reduction_copies": [[{copy}], []], "completion": {completion}}}"#
                ))
                .unwrap(),
            );
            std::fs::write(&path, m.to_json()).unwrap();
            LaunchManifest::load(&path)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let copy = |owner: i64, arrived: i64, rows: &str| {
            format!(
                r#"{{"src_buffer": "C", "dst_buffer": "C", "owner": {owner}, "src_offset": 0, "dst_offset": 0,
                    "bytes": 256, "produced": [0, 4], "arrived": {arrived}, "copied": 6{rows}}}"#
            )
        };
        let rows = r#", "rows": {"count": 4, "src_pitch": 512, "dst_pitch": 512}"#;
        assert_eq!(load(&copy(1, 4, rows), "[[[4, 1]], [[5, 1]]]"), Ok(()));
        // @C holds 4 x 256 bf16 (2048 bytes): a fifth row would leave it.
        let err = load(&copy(1, 4, &rows.replace("4,", "5,")), "[]").unwrap_err();
        assert!(
            err.ends_with(
                "reduction copy 0 of rank 0 reaches outside @C (2048 bytes, or its element size is unknown): \
                 5 rows of 256 bytes, 512 bytes apart, from byte 0"
            ),
            "{err}"
        );
        let err = load(
            &copy(1, 4, "").replace(r#""dst_buffer": "C""#, r#""dst_buffer": "D""#),
            "[]",
        )
        .unwrap_err();
        assert!(
            err.ends_with("reduction copy 0 of rank 0 names @D, which is not a buffer of the plan"),
            "{err}"
        );
        // An older manifest's 1D copy has no rows.
        assert_eq!(load(&copy(1, 4, ""), "[]"), Ok(()));
        let err = load(&copy(2, 4, ""), "[]").unwrap_err();
        assert!(
            err.ends_with(
                "copy 'reduction copy 0 of rank 0' names rank 2, outside the plan's 2 ranks"
            ),
            "{err}"
        );
        let err = load(&copy(1, 8, ""), "[]").unwrap_err();
        assert!(
            err.ends_with("reduction copy 0 of rank 0 names flag 8, outside the kernel's 8 flags"),
            "{err}"
        );
        let err = load(&copy(1, 4, ""), "[[[9, 1]], []]").unwrap_err();
        assert!(
            err.ends_with("the completion of rank 0 names flag 9, outside the kernel's 8 flags"),
            "{err}"
        );
        // A copy that sets `copied` leaves the epochs to the kernel's flags;
        // one without leaves them to the runtime's streams.
        let plan = |copy: &str| -> FusedPlan {
            serde_json::from_str(&format!(
                r#"{{"plan": "p", "world_size": 2, "num_flags": 8, "buffers": [], "chunks": [], "copies": [],
                    "reduction_copies": [[{copy}], []]}}"#
            ))
            .unwrap()
        };
        assert!(!plan(&copy(1, 4, "")).copies_ordered_by_streams());
        assert!(
            plan(&copy(1, 4, "").replace(r#""copied": 6"#, r#""copied": null"#))
                .copies_ordered_by_streams()
        );
        // Copies without an arrival flag end their owner's launch through
        // the streams: rank 1 waits for ranks 0 and 2, rank 2 for nobody.
        let unflagged =
            |owner: i64| copy(owner, 4, "").replace(r#""arrived": 4"#, r#""arrived": null"#);
        let three: FusedPlan = serde_json::from_str(&format!(
            r#"{{"plan": "p", "world_size": 3, "num_flags": 8, "buffers": [], "chunks": [], "copies": [],
                "reduction_copies": [[{}, {}], [], [{}]]}}"#,
            unflagged(1),
            copy(2, 4, ""),
            unflagged(1)
        ))
        .unwrap();
        assert_eq!(three.sources_ordered_by_streams(1), vec![0, 2]);
        assert!(three.sources_ordered_by_streams(2).is_empty());
        assert!(three.sources_ordered_by_streams(0).is_empty());
        assert_eq!(load(&unflagged(1), "[]"), Ok(()));
        let overlapping = r#", "rows": {"count": 4, "src_pitch": 128, "dst_pitch": 512}"#;
        let err = load(&copy(1, 4, overlapping), "[]").unwrap_err();
        assert!(
            err.ends_with("copies 4 rows of 256 bytes with pitches 128 / 512: rows would overlap"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn copies_of_older_manifests_run_on_the_copy_stream() {
        let copy: Copy = serde_json::from_str(
            r#"{"name": "A_p1_c0", "order": 1, "src_rank": 1, "dst_rank": 0, "src_buffer": "A",
                "dst_buffer": "A", "src_offset": 0, "dst_offset": 0, "rows": 1, "row_elems": 8,
                "src_pitch": 8, "dst_pitch": 8, "flag": 2}"#,
        )
        .unwrap();
        assert!(!copy.before_kernel);
        assert_eq!(copy.flag, Some(2));
    }

    #[test]
    fn parameter_sizes() {
        let p = |ty: &str| Param {
            name: "p".into(),
            ty: ty.into(),
            role: ParamRole::User,
            divisible_by: None,
            descriptor: None,
        };
        assert_eq!(p("*fp32").size_bytes().unwrap(), 8);
        assert_eq!(p("i32").size_bytes().unwrap(), 4);
        assert_eq!(p("i64").size_bytes().unwrap(), 8);
        assert_eq!(p("bf16").size_bytes().unwrap(), 2);
        assert_eq!(p("fp16").size_bytes().unwrap(), 2);
        assert_eq!(p("i1").size_bytes().unwrap(), 1);
        assert_eq!(p("f32").scalar_type().unwrap(), Some(ScalarType::F32));
        assert_eq!(p("*f32").scalar_type().unwrap(), None);
        assert!(p("tensor").size_bytes().is_err());
        assert_eq!(triton_type_name("f32"), "fp32");
        assert_eq!(triton_type_name("*f16"), "*fp16");
        assert_eq!(triton_type_name("*bf16"), "*bf16");
        assert_eq!(triton_type_name("i1"), "i1");
    }
}
