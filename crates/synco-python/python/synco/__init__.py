"""Synco from Python: compile a Triton kernel with a chunk plan (or a plan
template), cached on disk, and check a launch's arguments as the runtime
does.

    import synco
    plan = synco.plans.all_gather_matmul(world_size=2, m=8192, k=4096, n=7168)
    kernel = synco.compile(matmul_kernel_grouped, plan=plan, pipeline="synco-ag-gemm",
                           signature="*bf16,*bf16,*bf16,i32,i32,i32,i32,i32,i32",
                           constexprs={"stride_ak": 1, "stride_bn": 1, "stride_cn": 1,
                                       "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                                       "GROUP_M": 8})
    kernel.check_args(rank, [a_ptr, b_ptr, c_ptr, M, N, K, 4096, 7168, 7168])

On a PyTorch job (one process per rank, after `dist.init_process_group`):

    group = synco.Group()
    c = synco.ops.all_gather_matmul(a_shard, b, group)

or any kernel with a plan: `group.load(kernel)` and call it on tensors
(see `synco.runtime`).

Compiling runs the `synco` command (it needs LLVM/MLIR 22 and Triton, as
the repository's set-up installs them); loading a compiled kernel and
checking its arguments need only this package.
"""

from . import plans
from ._native import LaunchError, Manifest, ManifestError, WatchdogError
from .compiler import CompileError, Compiled, compile, import_plans

__all__ = [
    "CompileError",
    "Compiled",
    "Group",
    "import_plans",
    "LaunchError",
    "Manifest",
    "ManifestError",
    "WatchdogError",
    "compile",
    "kernels",
    "ops",
    "plans",
]


def __getattr__(name):
    """`Group`, `ops` and `kernels` on first use: they need PyTorch (and
    Triton), which compiling and checking arguments do not."""
    import importlib

    if name == "Group":
        return importlib.import_module(".runtime", __name__).Group
    if name in ("ops", "kernels", "runtime"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'synco' has no attribute {name!r}")
