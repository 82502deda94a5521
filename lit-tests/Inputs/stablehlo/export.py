"""Exports the StableHLO modules the plan-import tests read: JAX
`shard_map` layers whose collectives sit beside their matmuls, lowered on
CPU with fake devices (`jax.jit(...).lower(...)`), in MLIR's generic form.

    python lit-tests/Inputs/stablehlo/export.py lit-tests/Inputs/stablehlo

Needs `jax[cpu]` (not in the project's venv: the modules are committed).
"""

import os
import sys

import numpy

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

try:
    from jax import shard_map
except ImportError:  # older JAX
    from jax.experimental.shard_map import shard_map

W = 4
MESH = Mesh(jax.devices()[:W], ("x",))
MESH_2X2 = Mesh(numpy.array(jax.devices()[:W]).reshape(2, 2), ("x", "y"))
M, K, N = 1024, 512, 1024
BF16 = jnp.bfloat16


def ag_matmul(a, b):
    """Each rank's rows of A gathered, times its columns of B."""
    return jax.lax.all_gather(a, "x", axis=0, tiled=True) @ b


def matmul_rs(a, b):
    """The partial products over each rank's K, reduced and scattered by rows."""
    return jax.lax.psum_scatter(a @ b, "x", scatter_dimension=0, tiled=True)


def matmul_ar(a, b):
    """The partial products over each rank's K, summed on every rank."""
    return jax.lax.psum(a @ b, "x")


def ag_alone(a):
    """An all-gather whose result nothing multiplies (each rank keeps a
    quarter of the doubled rows)."""
    rows = a.shape[0]
    gathered = jax.lax.all_gather(a, "x", axis=0, tiled=True) * 2
    return jax.lax.dynamic_slice_in_dim(gathered, jax.lax.axis_index("x") * rows, rows)


def ag_matmul_subgroup(a, b):
    """An all-gather over one axis of a 2 x 2 mesh: groups of 2 of the 4."""
    return jax.lax.all_gather(a, "x", axis=0, tiled=True) @ b


S, HEADS, KV_HEADS, HEAD_DIM = 1024, 8, 4, 64


def ulysses(q, k, v):
    """Ulysses attention: Q, K, V [tokens, heads, head_dim] re-sharded from
    tokens to heads, attention of the rank's heads over every token (K and
    V repeated for grouped heads), the output re-sharded back by tokens."""
    def to_heads(x):
        return jax.lax.all_to_all(x, "x", 1, 0, tiled=True)

    q, k, v = to_heads(q), to_heads(k), to_heads(v)
    groups = q.shape[1] // k.shape[1]
    k, v = jnp.repeat(k, groups, axis=1), jnp.repeat(v, groups, axis=1)
    scores = jnp.einsum("shd,thd->hst", q, k).astype(jnp.float32) * HEAD_DIM ** -0.5
    probs = jax.nn.softmax(scores, axis=-1).astype(BF16)
    out = jnp.einsum("hst,thd->shd", probs, v)
    return jax.lax.all_to_all(out, "x", 0, 1, tiled=True)


CASES = {
    "ag_matmul": (ag_matmul, MESH, (P("x", None), P(None, "x")), P(None, "x"),
                  [(M, K), (K, N)]),
    "matmul_rs": (matmul_rs, MESH, (P(None, "x"), P("x", None)), P("x", None),
                  [(M, K), (K, N)]),
    "matmul_ar": (matmul_ar, MESH, (P(None, "x"), P("x", None)), P(None, None),
                  [(M, K), (K, N)]),
    "ag_alone": (ag_alone, MESH, (P("x", None),), P("x", None), [(M, K)]),
    "ag_matmul_subgroup": (ag_matmul_subgroup, MESH_2X2, (P("x", None), P(None, "y")),
                           P(None, "y"), [(M, K), (K, N)]),
    "ulysses": (ulysses, MESH, (P("x", None, None),) * 3, P("x", None, None),
                [(S, HEADS, HEAD_DIM), (S, KV_HEADS, HEAD_DIM), (S, KV_HEADS, HEAD_DIM)]),
}


def main(out):
    for name, (fn, mesh, in_specs, out_specs, shapes) in CASES.items():
        mapped = shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                           check_vma=False)
        args = [jax.ShapeDtypeStruct(s, BF16) for s in shapes]
        module = jax.jit(mapped).lower(*args).compiler_ir("stablehlo")
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
        # Locations name this script by its path in the repository.
        text = text.replace(os.path.abspath(__file__), "lit-tests/Inputs/stablehlo/export.py")
        with open(os.path.join(out, f"{name}.mlir"), "w") as f:
            f.write(f"// {name}: exported by export.py with JAX {jax.__version__}\n{text}")
        print(f"wrote {name}.mlir")


if __name__ == "__main__":
    main(sys.argv[1])
