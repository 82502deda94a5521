# lit configuration for Synco's FileCheck tests.
#
# Run through `tools/dev test`, or directly: `.venv/bin/lit -sv lit-tests`.
# Tools are looked up in $SYNCO_BUILD_DIR (default: target/debug) and in
# LLVM 22's bin directory (FileCheck, not, split-file, mlir-opt).

import os
import shutil
import tempfile

import lit.formats

config.name = "Synco"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".test", ".py"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

repo_root = os.path.dirname(config.test_source_root)
build_dir = os.environ.get("SYNCO_BUILD_DIR", os.path.join(repo_root, "target", "debug"))
llvm_bin = os.environ.get("SYNCO_LLVM_BIN", "/usr/lib/llvm-22/bin")
venv_bin = os.path.join(repo_root, ".venv", "bin")

for tool in ["synco-opt", "synco"]:
    if not os.path.exists(os.path.join(build_dir, tool)):
        lit_config.fatal(f"{tool} not found in {build_dir}: run `cargo build` (or tools/dev setup)")
for tool in ["FileCheck", "not", "split-file", "mlir-opt"]:
    if not os.path.exists(os.path.join(llvm_bin, tool)):
        lit_config.fatal(f"{tool} not found in {llvm_bin}: install llvm-22-tools and mlir-22-tools")

config.environment["PATH"] = os.pathsep.join(
    [build_dir, llvm_bin, venv_bin, config.environment.get("PATH", os.environ["PATH"])]
)
# Keep diagnostics and printing deterministic.
config.environment["LC_ALL"] = "C"

config.substitutions.append(("%repo", repo_root))
config.substitutions.append(("%synco_bin", os.path.join(build_dir, "synco")))
# A scratch folder outside the repository (no .venv above it), one per run.
config.substitutions.append(("%outside", tempfile.mkdtemp(prefix="synco-lit-")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%chunk_plugin", os.path.join(build_dir, "libSyncoChunkPlugin.so")))
config.substitutions.append(("%mlir_tblgen", os.path.join(llvm_bin, "mlir-tblgen")))
config.substitutions.append(("%mlir-opt", os.path.join(llvm_bin, "mlir-opt")))
python = os.path.join(venv_bin, "python")
config.substitutions.append(("%python", python if os.path.exists(python) else shutil.which("python3")))

# Tests that need Triton (the bridge) say `REQUIRES: triton`.
if os.path.exists(os.path.join(venv_bin, "python")) and any(
    os.path.isdir(os.path.join(d, "triton"))
    for d in __import__("glob").glob(os.path.join(repo_root, ".venv", "lib", "python3*", "site-packages"))
):
    config.available_features.add("triton")

# PyTorch in the venv (the set-up installs it): tests of the package's
# torch side say `REQUIRES: torch`.
if any(
    os.path.isdir(os.path.join(d, "torch"))
    for d in __import__("glob").glob(os.path.join(repo_root, ".venv", "lib", "python3*", "site-packages"))
):
    config.available_features.add("torch")

# Tests of the Python package (crates/synco-python, which the set-up builds
# and installs into the venv) say `REQUIRES: synco-python`.
if any(
    os.path.isdir(os.path.join(d, "synco"))
    for d in __import__("glob").glob(os.path.join(repo_root, ".venv", "lib", "python3*", "site-packages"))
):
    config.available_features.add("synco-python")
