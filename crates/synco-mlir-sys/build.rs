//! `mlir-sys` with `MLIR_SYS_LINK_SHARED=1` links `-lMLIR` and `-lMLIR-C`.
//! Debian ships `libMLIR.so` but the C API only as static archives
//! (`libMLIRCAPI*.a`), so this writes `libMLIR-C.so` as a linker script
//! that pulls the C API out of those archives, and points the linker at it.
//! Every crate that uses MLIR depends on this one, so every binary links.

use std::{env, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let llvm = PathBuf::from(
        env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into()),
    );
    let lib = llvm.join("lib");
    let mut archives: Vec<String> = fs::read_dir(&lib)
        .map_err(|e| {
            format!(
                "cannot read {}: {e} (install libmlir-22-dev)",
                lib.display()
            )
        })?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libMLIRCAPI") && n.ends_with(".a"))
        })
        .map(|path| path.display().to_string())
        .collect();
    if archives.is_empty() {
        return Err(format!(
            "no libMLIRCAPI*.a in {}: install libmlir-22-dev",
            lib.display()
        )
        .into());
    }
    archives.sort();
    fs::write(
        out_dir.join("libMLIR-C.so"),
        format!("GROUP ( {} )\n", archives.join(" ")),
    )?;
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    Ok(())
}
