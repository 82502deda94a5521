//! `synco`: import a Triton kernel, compile a (fused) kernel to PTX/cubin.
//!
//! ```text
//! synco import examples/ag_gemm/matmul.py --kernel matmul_kernel \
//!     --signature '*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32,i32,i32,i32' \
//!     --constexpr BLOCK_M=128 --constexpr BLOCK_N=128 --constexpr BLOCK_K=64 -o gemm.mlir
//! synco compile gemm.mlir --emit=ptx -o gemm.ptx
//! synco compile gemm.mlir --emit=cubin --out-dir build/gemm   # every stage + manifest
//! synco import-plan layer.stablehlo.mlir -o plan.mlir            # plans from StableHLO
//! ```

// `main` comes from the C runtime (see `synco_chunk::c_main!`).
#![cfg_attr(not(test), no_main)]

use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use melior::{ir::Module, pass::PassManager, utility::parse_pass_pipeline};
use serde_json::{Map, Value};
use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
};
use synco_chunk::streams;
use synco_triton::{Bridge, ImportRequest, Options, parse_target};

#[derive(Parser)]
#[command(
    name = "synco",
    version,
    about = "Fuse multi-GPU communication into Triton kernels"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import a @triton.jit kernel (.py) or Triton IR (.ttir) as generic MLIR.
    ///
    /// A .py file is run by Python, as Triton does: its top-level code
    /// executes (import only files you would run).
    Import(ImportArgs),
    /// Compile generic TTIR (optionally through Synco's passes) to a stage.
    Compile(CompileArgs),
    /// Write chunk plans for the collectives of a partitioned StableHLO
    /// module (generic form) that sit beside a matrix product
    /// (chunk-import-stablehlo): one plan per match, a warning for every
    /// collective not imported.
    ImportPlan(ImportPlanArgs),
}

#[derive(Args)]
struct ImportPlanArgs {
    /// The StableHLO module (e.g. from `jax.jit(f).lower(...)` of
    /// shard_map code), in MLIR's generic form.
    input: PathBuf,
    /// Rows of the GEMM kernel's row tiles (its BLOCK_M).
    #[arg(long, default_value_t = 128)]
    tile_rows: u32,
    /// Output file for every plan (default: stdout).
    #[arg(short, long, conflicts_with = "out_dir")]
    output: Option<PathBuf>,
    /// Write each plan to <DIR>/<plan>.mlir instead (one per file, as
    /// `synco compile --plan` takes them).
    #[arg(long)]
    out_dir: Option<PathBuf>,
}

#[derive(Args)]
struct TritonArgs {
    /// CUDA target: sm_90a (default), sm_80, ...
    #[arg(long, default_value = "sm_90a")]
    target: String,
    /// Triton's num_warps.
    #[arg(long)]
    num_warps: Option<u32>,
    /// Triton's num_stages (software pipelining depth).
    #[arg(long)]
    num_stages: Option<u32>,
    /// Any other Triton option, as NAME=VALUE (VALUE is JSON, or a string).
    #[arg(long = "triton-option", value_name = "NAME=VALUE")]
    triton_options: Vec<String>,
}

#[derive(Args)]
struct ImportArgs {
    /// The kernel: a .py file with @triton.jit kernels, or a .ttir file.
    input: PathBuf,
    /// Which @triton.jit function (optional if the file has one).
    #[arg(long)]
    kernel: Option<String>,
    /// Types of the runtime parameters, in order: '*bf16,*bf16,i32,...'
    /// (a host tensor descriptor as Triton spells it:
    /// 'tensordesc<bf16[64,128]>').
    #[arg(long, value_parser = parse_signature)]
    signature: Option<Signature>,
    /// Value of a tl.constexpr parameter, or of any parameter to specialise
    /// on (a unit stride), as NAME=VALUE (repeatable).
    #[arg(long = "constexpr", value_name = "NAME=VALUE")]
    constexprs: Vec<String>,
    /// Parameters whose values are multiples of 16 (pointers, sizes,
    /// strides), as Triton's JIT would specialise them: '--divisible
    /// a_ptr,b_ptr,M'. Without it loads are not vectorised.
    #[arg(long, value_delimiter = ',')]
    divisible: Vec<String>,
    /// Output file (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    triton: TritonArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// Generic MLIR after the pass pipeline (no Triton).
    Mlir,
    Ttir,
    Ttgir,
    Llir,
    Ptx,
    Cubin,
}

#[derive(Args)]
struct CompileArgs {
    /// Generic-form MLIR: a Triton kernel, possibly with chunk ops.
    input: PathBuf,
    /// A chunk plan (.mlir) to fuse into the kernel: its ops are added to the
    /// kernel's module before the passes run.
    #[arg(long)]
    plan: Option<PathBuf>,
    /// Passes to run first, e.g. 'builtin.module(synco-ag-gemm)'.
    /// canonicalize and cse always run last, since Triton skips the cleanup
    /// of the stage it starts from.
    #[arg(long)]
    pass_pipeline: Option<String>,
    /// What to write to -o.
    #[arg(long, value_enum, default_value = "ptx")]
    emit: Emit,
    /// Where to write the emitted stage (default: stdout; required for cubin).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Keep every stage and the launch manifest (<kernel>.json) here.
    #[arg(long)]
    out_dir: Option<PathBuf>,
    #[command(flatten)]
    triton: TritonArgs,
}

synco_chunk::c_main!(run);

/// The command line's command, run; the process's exit code.
fn run() -> i32 {
    let cli = parse_cli();
    let result = streams::with_large_stack(
        move || {
            check_streams(&cli.command).map_err(anyhow::Error::msg)?;
            match cli.command {
                Command::Import(args) => import(args),
                Command::Compile(args) => compile(args),
                Command::ImportPlan(args) => import_plan(args),
            }
        },
        Err(anyhow::anyhow!(
            "synco panicked (a bug: please report it with this input)"
        )),
    );
    match result {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("synco: error: {error:#}");
            1
        }
    }
}

/// The streams a command reads and writes, checked before it runs (see
/// `synco_chunk::streams`).
fn check_streams(command: &Command) -> Result<(), String> {
    let (input, output) = match command {
        Command::Import(args) => (&args.input, args.output.as_deref()),
        Command::Compile(args) => (&args.input, args.output.as_deref()),
        Command::ImportPlan(args) => (&args.input, args.output.as_deref()),
    };
    if input == Path::new("-") {
        streams::check_stdin()?;
    } else if input.exists() {
        streams::check_readable(input)?;
    }
    // `compile --emit=cubin` writes only under --out-dir without -o.
    let to_stdout = match command {
        Command::Compile(args) => args.emit != Emit::Cubin || args.output.is_some(),
        Command::Import(_) => true,
        Command::ImportPlan(args) => args.out_dir.is_none(),
    };
    if to_stdout && output.is_none_or(|o| o == Path::new("-")) {
        streams::check_stdout()?;
    }
    Ok(())
}

/// `NAME=VALUE` pairs into a JSON map; VALUE is JSON if it parses, else a
/// string.
fn parse_assignments(pairs: &[String], what: &str) -> Result<Map<String, Value>> {
    let mut map = Map::new();
    for pair in pairs {
        let Some((name, value)) = pair.split_once('=') else {
            bail!("{what} '{pair}' is not NAME=VALUE");
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        map.insert(name.trim().into(), value);
    }
    Ok(map)
}

fn triton_options(args: &TritonArgs) -> Result<Options> {
    if let Some(warps) = args.num_warps
        && !(warps.is_power_of_two() && warps <= 32)
    {
        // A CTA holds at most 1024 threads (32 warps); Triton's layouts
        // need a power of two.
        bail!("--num-warps {warps}: a kernel runs 1, 2, 4, 8, 16 or 32 warps per program");
    }
    Ok(Options {
        num_warps: args.num_warps,
        num_stages: args.num_stages,
        extra: parse_assignments(&args.triton_options, "--triton-option")?,
    })
}

fn write_output(path: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match path {
        Some(path) if path != Path::new("-") => {
            std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
        }
        _ => std::io::stdout()
            .write_all(bytes)
            .context("cannot write to stdout"),
    }
}

/// A kernel's parameter types, in order.
#[derive(Clone, Debug)]
struct Signature(Vec<String>);

/// Splits a signature at the commas between types, not those inside a
/// type (`tensordesc<bf16[64,128]>`).
fn parse_signature(text: &str) -> Result<Signature, String> {
    let mut types = vec![String::new()];
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '<' | '[' => depth += 1,
            '>' | ']' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return Err(format!("unbalanced '{c}' in '{text}'"));
        }
        match (c, types.last_mut()) {
            (',', _) if depth == 0 => types.push(String::new()),
            (c, Some(current)) => current.push(c),
            (_, None) => {}
        }
    }
    if depth != 0 {
        return Err(format!("unclosed '<' or '[' in '{text}'"));
    }
    let types: Vec<String> = types.into_iter().map(|t| t.trim().to_string()).collect();
    match types.iter().position(String::is_empty) {
        Some(i) => Err(format!("type {} of '{text}' is empty", i + 1)),
        None => Ok(Signature(types)),
    }
}

fn import(args: ImportArgs) -> Result<()> {
    let bridge = Bridge::locate()?;
    let imported = bridge.import(&ImportRequest {
        path: args.input.clone(),
        kernel: args.kernel.clone(),
        signature: args.signature.clone().map(|s| s.0).unwrap_or_default(),
        constexprs: parse_assignments(&args.constexprs, "--constexpr")?,
        divisible: args.divisible.clone(),
        target: parse_target(&args.triton.target)?,
        options: triton_options(&args.triton)?,
    })?;
    // Write the kernel as MLIR 22 prints it (so synco-opt round-trips the
    // file byte for byte). Where that differs from Triton's text (location
    // alias numbering, say), Triton must still read it as the same module.
    let context = synco_chunk::create_context();
    let module = Module::parse(&context, &imported.generic_mlir).with_context(|| {
        format!(
            "MLIR 22 cannot parse the generic form of '{}' (diagnostics above)",
            imported.kernel
        )
    })?;
    let printed = synco_chunk::print_generic(&module.as_operation());
    if printed != imported.generic_mlir {
        bridge
            .verify_same_module(&imported, &printed)
            .with_context(|| {
                format!(
                    "MLIR 22's print of '{}' is not the module Triton imported",
                    imported.kernel
                )
            })?;
    }
    write_output(args.output.as_deref(), printed.as_bytes())
}

fn compile(args: CompileArgs) -> Result<()> {
    if args.emit == Emit::Cubin
        && args.output.as_deref().is_none_or(|p| p == Path::new("-"))
        && args.out_dir.is_none()
    {
        bail!("--emit=cubin writes a binary: give -o FILE or --out-dir DIR");
    }
    synco_passes::register_all();
    let context = synco_chunk::create_context();
    synco_chunk::print_diagnostics_like_mlir_opt(&context);
    let parsed = if args.input == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read stdin")?;
        Module::parse(&context, &text)
    } else {
        if !args.input.exists() {
            bail!("{}: no such file", args.input.display());
        }
        synco_chunk::parse_file(&context, &args.input)
    };
    let mut module = parsed
        .with_context(|| format!("cannot parse {} (diagnostics above)", args.input.display()))?;
    if let Some(plan_path) = &args.plan {
        let plan = synco_chunk::parse_file(&context, plan_path)
            .with_context(|| format!("cannot parse {} (diagnostics above)", plan_path.display()))?;
        synco_chunk::move_module_body(&plan, &module);
    }

    let pass_manager = PassManager::new(&context);
    let mut pipeline = args.pass_pipeline.clone().unwrap_or_default();
    pipeline = match pipeline.trim() {
        "" => "builtin.module(canonicalize,cse)".into(),
        user => {
            let inner = user
                .strip_prefix("builtin.module(")
                .and_then(|rest| rest.strip_suffix(')'))
                .with_context(|| {
                    format!("--pass-pipeline must look like 'builtin.module(...)', got '{user}'")
                })?;
            format!("builtin.module({inner},canonicalize,cse)")
        }
    };
    parse_pass_pipeline(pass_manager.as_operation_pass_manager(), &pipeline)
        .with_context(|| format!("bad pass pipeline '{pipeline}'"))?;
    pass_manager
        .run(&mut module)
        .with_context(|| format!("pass pipeline '{pipeline}' failed (diagnostics above)"))?;
    let fused = take_host_schedule(&module)?;
    let generic = synco_chunk::print_generic(&module.as_operation());

    if args.emit == Emit::Mlir {
        return write_output(args.output.as_deref(), generic.as_bytes());
    }
    if generic.contains("\"chunk.") {
        bail!(
            "chunk ops remain after '{pipeline}': lower them before compiling for Triton \
             (or use --emit=mlir to see the IR)"
        );
    }
    let kernels = synco_ir::find_all(module.as_operation().to_raw(), "tt.func").len();
    if kernels != 1 {
        bail!(
            "{} holds {kernels} tt.func ops; Triton compiles a module of exactly one kernel",
            args.input.display()
        );
    }

    let bridge = Bridge::locate()?;
    let scratch;
    let out_dir = match &args.out_dir {
        Some(dir) => dir.clone(),
        None => {
            scratch = tempfile::tempdir().context("cannot create a temporary directory")?;
            scratch.path().to_path_buf()
        }
    };
    let compiled = bridge.compile(
        &generic,
        &out_dir,
        &parse_target(&args.triton.target)?,
        &triton_options(&args.triton)?,
        fused,
    )?;
    let artifact = match args.emit {
        Emit::Ttir => &compiled.ttir,
        Emit::Ttgir => &compiled.ttgir,
        Emit::Llir => &compiled.llir,
        Emit::Ptx => &compiled.ptx,
        Emit::Cubin | Emit::Mlir => &compiled.cubin,
    };
    if args.output.is_some() || args.emit != Emit::Cubin {
        let bytes = std::fs::read(artifact)
            .with_context(|| format!("cannot read {}", artifact.display()))?;
        write_output(args.output.as_deref(), &bytes)?;
    }
    if let Some(dir) = &args.out_dir {
        eprintln!(
            "synco: compiled '{}' into {} (manifest {}.json)",
            compiled.kernel,
            dir.display(),
            compiled.kernel
        );
    }
    Ok(())
}

/// `synco import-plan`: runs chunk-import-stablehlo on the input and
/// writes the plans it appended (nothing else of the module).
fn import_plan(args: ImportPlanArgs) -> Result<()> {
    synco_passes::register_all();
    let context = synco_chunk::create_context();
    synco_chunk::print_diagnostics_like_mlir_opt(&context);
    if !args.input.exists() {
        bail!("{}: no such file", args.input.display());
    }
    let mut module = synco_chunk::parse_file(&context, &args.input)
        .with_context(|| format!("cannot parse {} (diagnostics above)", args.input.display()))?;
    let pipeline = format!(
        "builtin.module(chunk-import-stablehlo{{tile-rows={}}})",
        args.tile_rows
    );
    let pass_manager = PassManager::new(&context);
    parse_pass_pipeline(pass_manager.as_operation_pass_manager(), &pipeline)
        .with_context(|| format!("bad pass pipeline '{pipeline}'"))?;
    pass_manager.run(&mut module).with_context(|| {
        format!(
            "{} was not imported (diagnostics above)",
            args.input.display()
        )
    })?;
    let plans = synco_ir::find_all(module.as_operation().to_raw(), "chunk.plan");
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for plan in &plans {
            let name = synco_ir::str_attr(*plan, "sym_name").unwrap_or_default();
            let path = dir.join(format!("{name}.mlir"));
            write_output(
                Some(&path),
                format!("{}\n", synco_ir::print_op(*plan)).as_bytes(),
            )?;
            eprintln!("synco: wrote {}", path.display());
        }
        return Ok(());
    }
    let text: String = plans
        .iter()
        .map(|plan| format!("{}\n", synco_ir::print_op(*plan)))
        .collect();
    write_output(args.output.as_deref(), text.as_bytes())
}

/// The command line, with `--help` saying which Python runs Triton (and
/// that `synco import` runs the kernel file's Python).
fn parse_cli() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let python = match Bridge::interpreter() {
        (Some(path), why) => format!("{} ({why})", path.display()),
        (None, searched) => format!("none found (looked for {searched} and $SYNCO_PYTHON)"),
    };
    let help = format!(
        "Triton runs in: {python}.\n`synco import FILE.py` runs FILE.py's Python, as Triton does: its top-level code executes; import only files you would run."
    );
    let matches = Cli::command().after_help(help).get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Moves the host transfer schedule that `chunk-lower-transfers` left on the
/// module (for the launch manifest) off it, so Triton never sees it.
fn take_host_schedule(module: &Module) -> Result<Option<synco_manifest::FusedPlan>> {
    synco_passes::plan::records::take_host_schedule(module.as_operation().to_raw())
        .map_err(|_| anyhow::anyhow!("the module's host schedule is malformed (diagnostic above)"))
}
