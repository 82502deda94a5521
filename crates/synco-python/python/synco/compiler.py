"""Compiling a Triton kernel with a plan through the `synco` command,
cached on disk by everything the result depends on, the way Triton's JIT
caches: the kernel's source file (and, for a `@triton.jit` function,
Triton's own key, which covers the functions it calls), its name, the
plan, the signature and constexprs, the pipeline and options, and the
`synco` binary itself. A
second call with the same inputs reads the cache; ranks that compile the
same kernel at once each build into their own folder and the first to
finish wins (an atomic rename), so nobody sees half a result.
"""

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ._native import Manifest, descriptor_type


class CompileError(RuntimeError):
    """`synco import` or `synco compile` refused the kernel or the plan;
    the message is theirs (with the source locations)."""


@dataclass(frozen=True)
class Compiled:
    """A compiled kernel: its folder in the cache and its launch manifest."""

    folder: Path
    manifest: Manifest
    #: Whether this call found it in the cache.
    cached: bool

    @staticmethod
    def load(folder, kernel):
        """A kernel compiled before, from its folder (e.g. one built on
        another machine) and name."""
        return _cached(folder, kernel)

    def check_args(self, rank, args, grid=None):
        """The runtime's check of a launch's user arguments on `rank`, and
        with `grid` of the values the kernel computes from them (see
        `Manifest.check_args`)."""
        if grid is not None:
            grid = tuple(grid) + (1,) * (3 - len(grid))
        self.manifest.check_args(rank, list(args), grid)


def kernel_arg(signature, position):
    """The kernel argument (the index a plan's `bind(i)` names) that
    runtime parameter `position` of `signature` is: each host tensor
    descriptor before it (`tensordesc<bf16[64,128]>`) counts its shape and
    strides too, which Triton passes as arguments of their own."""
    index = 0
    for ty in signature[:position]:
        descriptor = descriptor_type(ty)
        index += 1 + (2 * len(descriptor[1]) if descriptor else 0)
    return index


def compile(kernel, *, signature, plan=None, pipeline="synco-fuse", constexprs=None,
            divisible=(), target="sm_90a", num_warps=None, num_stages=None, cache_dir=None):
    """Compiles `kernel` (a `@triton.jit` function, or `(path, name)` of
    one) for `signature` (Triton's types of its runtime parameters, a
    comma-separated string or a list), with `plan` (a chunk plan's text,
    e.g. from `synco.plans`) fused by `pipeline` (a pass pipeline
    registered with `synco-opt`, such as `synco-ag-gemm`), into the cache
    (`cache_dir`, else `$SYNCO_CACHE_DIR`, else `~/.cache/synco`)."""
    path, name = _kernel_source(kernel)
    root = Path(cache_dir or os.environ.get("SYNCO_CACHE_DIR") or Path.home() / ".cache" / "synco")
    identity = _binary_identity(root)
    if isinstance(signature, (list, tuple)):
        signature = ",".join(signature)
    constexprs = dict(constexprs or {})
    inputs = {
        "source": Path(path).read_text(),
        "triton_key": getattr(kernel, "cache_key", None),
        "kernel": name,
        "signature": signature,
        "constexprs": {k: constexprs[k] for k in sorted(constexprs)},
        "divisible": sorted(divisible),
        "plan": plan,
        "pipeline": pipeline if plan is not None else None,
        "target": target,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "synco": identity,
    }
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]
    folder = root / key
    manifest = folder / f"{name}.json"
    if manifest.exists():
        return Compiled.load(folder, name)
    root.mkdir(parents=True, exist_ok=True)
    _write_atomically(root / IDENTITY, json.dumps(identity))
    building = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        _build(building, path, name, signature, constexprs, divisible, plan, pipeline, target,
               num_warps, num_stages)
        try:
            os.rename(building, folder)
        except OSError:
            if not manifest.exists():  # (Another rank's build won.)
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return Compiled(folder, Manifest.load(manifest), cached=False)


def _cached(folder, name):
    return Compiled(Path(folder), Manifest.load(Path(folder) / f"{name}.json"), cached=True)


def _build(out, path, name, signature, constexprs, divisible, plan, pipeline, target, num_warps,
           num_stages):
    imported = out / "kernel.mlir"
    command = [synco_binary(), "import", str(path), "--kernel", name, "--signature", signature,
               "-o", str(imported)]
    for key in sorted(constexprs):
        command += ["--constexpr", f"{key}={constexprs[key]}"]
    if divisible:
        command += ["--divisible", ",".join(divisible)]
    _run(command)
    command = [synco_binary(), "compile", str(imported), "--emit=cubin",
               "-o", str(out / f"{name}.cubin"), "--out-dir", str(out), "--target", target]
    if plan is not None:
        (out / "plan.mlir").write_text(plan)
        command += ["--plan", str(out / "plan.mlir"),
                    f"--pass-pipeline=builtin.module({pipeline})"]
    if num_warps is not None:
        command += ["--num-warps", str(num_warps)]
    if num_stages is not None:
        command += ["--num-stages", str(num_stages)]
    _run(command)


def _run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise CompileError(done.stderr.strip() or f"{command[:2]} exited with {done.returncode}")


def _kernel_source(kernel):
    """The file and name of a `@triton.jit` function, or of `(path, name)`."""
    if isinstance(kernel, tuple):
        path, name = kernel
        return str(path), name
    fn = getattr(kernel, "fn", kernel)  # (triton.JITFunction wraps the function.)
    if not callable(fn):
        raise TypeError(f"kernel must be a @triton.jit function or (path, name), not {kernel!r}")
    return inspect.getsourcefile(fn), fn.__name__


def import_plans(stablehlo, *, tile_rows=128):
    """Chunk plans for the collectives of a partitioned StableHLO module
    (generic form, e.g. `jax.jit(f).lower(...)` of shard_map code) that sit
    beside a matrix product: `{plan name: plan text}`, from `synco
    import-plan` (its remarks and warnings, one per collective, go to
    stderr). Each plan is one `compile(..., plan=...)` takes."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([synco_binary(), "import-plan", str(stablehlo), "--tile-rows",
                               str(tile_rows), "--out-dir", out], capture_output=True, text=True)
        if done.returncode != 0:
            raise CompileError(done.stderr.strip() or f"synco import-plan exited with "
                               f"{done.returncode}")
        sys.stderr.write(done.stderr)
        return {p.stem: p.read_text() for p in sorted(Path(out).glob("*.mlir"))}


def synco_binary():
    """The `synco` command: `$SYNCO_BIN`, else the one on `PATH`."""
    found = os.environ.get("SYNCO_BIN") or shutil.which("synco")
    if not found:
        raise CompileError("no `synco` command: build the repository (tools/dev setup) and put "
                           "target/debug on PATH, or set SYNCO_BIN")
    return found


def _binary_identity(root):
    """What changes when the compiler does: its path, size and time. On a
    machine without the compiler (a GPU machine given a cache built
    elsewhere), the identity of the one that filled the cache at `root`,
    so that only its results are found."""
    try:
        binary = synco_binary()
    except CompileError:
        recorded = root / IDENTITY
        if not recorded.exists():
            raise CompileError("no `synco` command (set SYNCO_BIN or put it on PATH), and no "
                               f"cache built by one at {root}") from None
        return json.loads(recorded.read_text())
    stat = Path(binary).stat()
    return [binary, stat.st_size, stat.st_mtime_ns]


def _write_atomically(path, text):
    """`text` into `path` by a rename, so that a process reading it (another
    rank on the same cache) sees the old text or the new, never an empty
    file (it did: a rank failed with a JSON error reading the identity)."""
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(partial, path)


#: The file in a cache's root naming the compiler that last built into it.
IDENTITY = "synco-identity.json"
