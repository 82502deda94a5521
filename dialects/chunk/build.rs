//! Builds the C++ half of the `chunk` dialect:
//!
//! 1. runs `mlir-tblgen` on the ODS files in `include/` (declarations,
//!    definitions, the pass classes and the Markdown references) into
//!    `$OUT_DIR`;
//! 2. generates, from `ChunkPasses.td`'s records, the pass classes' final
//!    halves, the Rust option structs and the options `synco-fuse` forwards
//!    to its passes (`build/pass_glue.rs`);
//! 3. compiles the dialect, its passes, its C API and the driver shim into a
//!    static library linked into every Rust crate that uses MLIR (the
//!    binaries, and `tools/synco-plugin`, the plugin for upstream
//!    `mlir-opt`).
//!
//! (Linking MLIR's C API is `synco-mlir-sys`'s job.)

#[path = "build/pass_glue.rs"]
mod pass_glue;

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

/// ODS inputs and the generator flags run on each; outputs land in
/// `$OUT_DIR/include/synco/Dialect/Chunk/<output>`.
const TBLGEN_JOBS: &[(&str, &[&str], &str)] = &[
    (
        "ChunkOps.td",
        &["-gen-dialect-decls", "--dialect=chunk"],
        "ChunkDialect.h.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-dialect-defs", "--dialect=chunk"],
        "ChunkDialect.cpp.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-op-decls", "--dialect=chunk"],
        "ChunkOps.h.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-op-defs", "--dialect=chunk"],
        "ChunkOps.cpp.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-typedef-decls", "--dialect=chunk"],
        "ChunkTypes.h.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-typedef-defs", "--dialect=chunk"],
        "ChunkTypes.cpp.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-attrdef-decls", "--dialect=chunk"],
        "ChunkAttrs.h.inc",
    ),
    (
        "ChunkOps.td",
        &["-gen-attrdef-defs", "--dialect=chunk"],
        "ChunkAttrs.cpp.inc",
    ),
    ("ChunkOps.td", &["-gen-enum-decls"], "ChunkEnums.h.inc"),
    ("ChunkOps.td", &["-gen-enum-defs"], "ChunkEnums.cpp.inc"),
    (
        "ChunkOps.td",
        &["-gen-dialect-doc", "--dialect=chunk"],
        "ChunkDialect.md",
    ),
    (
        "ChunkPasses.td",
        &["-gen-pass-decls", "-name", "Chunk"],
        "ChunkPasses.h.inc",
    ),
    (
        "ChunkPasses.td",
        &["-gen-enum-decls"],
        "ChunkPassEnums.h.inc",
    ),
    (
        "ChunkPasses.td",
        &["-gen-enum-defs"],
        "ChunkPassEnums.cpp.inc",
    ),
    ("ChunkPasses.td", &["-gen-pass-doc"], "ChunkPasses.md"),
];

/// The dialect, its passes, its C API and the opt driver.
const SOURCES: &[&str] = &[
    "lib/ChunkDialect.cpp",
    "lib/ChunkOps.cpp",
    "lib/PlanVerifier.cpp",
    "lib/CAPI.cpp",
    "lib/ChunkPasses.cpp",
    "lib/ChunkPipelines.cpp",
    "lib/OptMain.cpp",
    "lib/Diagnostics.cpp",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let llvm = PathBuf::from(
        env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into()),
    );
    let llvm_include = llvm.join("include");
    let src_include = manifest_dir.join("include");
    let gen_include = out_dir.join("include");
    let gen_dir = gen_include.join("synco/Dialect/Chunk");
    fs::create_dir_all(&gen_dir)?;

    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    // For `melior::dialect!` in src/ops.rs, which reads the same ODS.
    println!(
        "cargo:rustc-env=SYNCO_CHUNK_TD_INCLUDE={}",
        src_include.display()
    );
    for dir in ["include", "lib", "build"] {
        rerun_if_tree_changed(&manifest_dir.join(dir))?;
    }

    let tblgen = llvm.join("bin/mlir-tblgen");
    for (td, flags, output) in TBLGEN_JOBS {
        let status = Command::new(&tblgen)
            .args(*flags)
            .arg("-I")
            .arg(&llvm_include)
            .arg("-I")
            .arg(&src_include)
            .arg(src_include.join("synco/Dialect/Chunk").join(td))
            .arg("-o")
            .arg(gen_dir.join(output))
            .status()
            .map_err(|e| format!("cannot run {}: {e}", tblgen.display()))?;
        if !status.success() {
            return Err(format!("mlir-tblgen {flags:?} {td} failed").into());
        }
    }
    generate_pass_glue(&llvm, &src_include, &gen_dir, &out_dir)?;

    // The C++ must be compiled by the clang that built Debian's libMLIR.so:
    // MLIR resolves some TypeIDs (trait checks such as
    // `hasTrait<OpTrait::SymbolTable>`) by the compiler's spelling of a type
    // name, and GCC spells them differently, so with GCC a plan inside a
    // module fails "symbol's parent must have the SymbolTable trait".
    let clang = llvm.join("bin/clang++");
    if !clang.exists() {
        return Err(format!(
            "{} not found: install clang-22 (tools/setup.sh does)",
            clang.display()
        )
        .into());
    }
    let mut build = cc::Build::new();
    build
        .compiler(&clang)
        .cpp(true)
        .std("c++17")
        .flag("-fno-exceptions")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-comment")
        .flag_if_supported("-Wno-deprecated-declarations")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .include(&src_include)
        .include(&gen_include)
        .include(&llvm_include)
        .pic(true)
        .cargo_metadata(false);
    let compile = |sources: &[&str]| {
        build
            .clone()
            .files(sources.iter().map(|source| manifest_dir.join(source)))
            .compile_intermediates()
    };
    let objects = compile(SOURCES);

    // Static library for the Rust side.
    let archive = out_dir.join("libsynco_chunk_cxx.a");
    let _ = fs::remove_file(&archive);
    run(Command::new("ar").arg("crs").arg(&archive).args(&objects))?;
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-lib=static=synco_chunk_cxx");
    println!("cargo:rustc-link-lib=dylib=stdc++");

    // $OUT_DIR is target/<profile>/build/<pkg>-<hash>/out.
    if let Some(profile_dir) = out_dir.ancestors().nth(3) {
        fs::copy(
            gen_dir.join("ChunkDialect.md"),
            profile_dir.join("ChunkDialect.generated.md"),
        )?;
        fs::copy(
            gen_dir.join("ChunkPasses.md"),
            profile_dir.join("ChunkPasses.generated.md"),
        )?;
    }
    Ok(())
}

/// Reads `ChunkPasses.td`'s records and writes the C++ pass classes and
/// the Rust option structs that connect each declared pass to its body, and
/// the options of `synco-fuse` that go to its passes.
fn generate_pass_glue(
    llvm: &Path,
    src_include: &Path,
    gen_dir: &Path,
    out_dir: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let output = Command::new(llvm.join("bin/llvm-tblgen"))
        .arg("--dump-json")
        .arg("-I")
        .arg(llvm.join("include"))
        .arg("-I")
        .arg(src_include)
        .arg(src_include.join("synco/Dialect/Chunk/ChunkPasses.td"))
        .output()
        .map_err(|e| format!("cannot run llvm-tblgen: {e} (install llvm-22-tools)"))?;
    if !output.status.success() {
        return Err(format!(
            "llvm-tblgen --dump-json ChunkPasses.td failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let records: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let decls = pass_glue::read(&records)?;
    fs::write(
        gen_dir.join("ChunkPassImpls.cpp.inc"),
        pass_glue::cpp(&decls),
    )?;
    fs::write(
        gen_dir.join("ChunkPassParsers.h.inc"),
        pass_glue::cpp_parsers(&decls),
    )?;
    fs::write(out_dir.join("pass_options.rs"), pass_glue::rust(&decls)?)?;
    let fuse_forwards = pass_glue::read_forwards(&records, "SyncoFuseForwards", &decls)?;
    fs::write(
        gen_dir.join("SyncoFuseOptions.h.inc"),
        pass_glue::cpp_forwarded_options(&decls, "synco-fuse", &fuse_forwards),
    )?;
    Ok(())
}

fn run(command: &mut Command) -> Result<(), Box<dyn std::error::Error>> {
    let status = command.status()?;
    if !status.success() {
        return Err(format!("command failed ({status}): {command:?}").into());
    }
    Ok(())
}

fn rerun_if_tree_changed(dir: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rerun_if_tree_changed(&path)?;
        } else {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Ok(())
}
