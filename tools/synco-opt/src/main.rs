//! `synco-opt`: MLIR's `mlir-opt` driver with Synco's `chunk` dialect and
//! passes registered. Every flag is mlir-opt's (`--help` lists them, with
//! Synco's passes under "Passes"); unregistered dialects such as Triton's
//! `tt` are allowed by default, since kernels arrive in generic form.
//!
//! Before MLIR runs, the streams it would read and write are checked
//! (`synco_chunk::streams`: a closed stdin or stdout, an input file that
//! cannot be read), and it runs on a large stack (deeply nested input).

// `main` comes from the C runtime (see `synco_chunk::c_main!`).
#![cfg_attr(not(test), no_main)]

use std::path::Path;
use synco_chunk::streams;

synco_chunk::c_main!(run);

fn run() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    if let Err(message) = check_streams(&args) {
        eprintln!("synco-opt: error: {message}");
        return 1;
    }
    synco_passes::register_all();
    streams::with_large_stack(move || synco_chunk::opt_main(args), 1)
}

/// The inputs (positional arguments naming files) and the output (`-o`)
/// of the command line, checked: stdin when no input file is named (or
/// `-`), stdout when no `-o` (or `-o -`).
fn check_streams(args: &[String]) -> Result<(), String> {
    let mut inputs = Vec::new();
    let mut output: Option<&str> = None;
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        if arg == "-o" {
            output = rest.next().map(String::as_str);
        } else if let Some(path) = arg.strip_prefix("-o=").or(arg.strip_prefix("--o=")) {
            output = Some(path);
        } else if arg == "-" || !arg.starts_with('-') {
            inputs.push(arg.as_str());
        }
    }
    if args
        .iter()
        .any(|a| matches!(a.as_str(), "--help" | "-h" | "--version"))
    {
        return Ok(());
    }
    if inputs.is_empty() || inputs.contains(&"-") {
        streams::check_stdin()?;
    }
    for input in inputs
        .iter()
        .filter(|i| **i != "-" && Path::new(i).exists())
    {
        streams::check_readable(Path::new(input))?;
    }
    if output.is_none_or(|o| o == "-") {
        streams::check_stdout()?;
    }
    Ok(())
}
