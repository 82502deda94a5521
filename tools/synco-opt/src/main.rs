//! `synco-opt`: MLIR's `mlir-opt` driver with Synco's `chunk` dialect and
//! passes registered. Every flag is mlir-opt's (`--help` lists them, with
//! Synco's passes under "Passes"); unregistered dialects such as Triton's
//! `tt` are allowed by default, since kernels arrive in generic form.

fn main() {
    synco_passes::register_all();
    std::process::exit(synco_chunk::opt_main(std::env::args()));
}
