"""The operators Synco fuses, on torch tensors, one call each:

    group = synco.Group()
    c = synco.ops.all_gather_matmul(a_shard, b, group)     # all_gather(A) @ B
    c = synco.ops.matmul_reduce_scatter(a, b, group)       # reduce_scatter(A @ B)
    c = synco.ops.matmul_all_reduce(a, b, group)           # all_reduce(A @ B)
    o = synco.ops.all_gather_attention(q, k, v, group, head_dim=128)  # context parallel
    o = synco.ops.all_gather_sdpa(q, k, v, group, is_causal=True)     # the same, SDPA's layout

and Ulysses (head-parallel) attention and the GEMMs around a re-shard
between tokens and heads:

    o = synco.ops.ulysses_attention(q, k, v, group, head_dim=128)
    h = synco.ops.matmul_all_to_all(x, w_qkv, group)   # tokens -> heads
    y = synco.ops.all_to_all_matmul(o, w_o, group)     # heads -> tokens

(classes `UlyssesAttention`, `MatmulAllToAll`, `AllToAllMatmul`).

Each call compiles its fused kernel once per shape, dtype and options (the
plan written by `synco.plans`, the result cached on disk by
`synco.compile`), allocates its symmetric buffers once in the group's
heap, and launches on torch's current stream. The classes behind them
(`AllGatherMatmul`, ...) take any kernel with the arguments of
`synco.kernels.matmul` and expose the symmetric buffers, so a producer
can write its output straight into `AllGatherMatmul.shard` instead of
having it copied there.

The functions are registered as `torch.library` custom ops
(`torch.ops.synco.all_gather_matmul`, ...; a process group's name
identifies the group), so `torch.compile` traces them; their results are
fresh tensors. Calls may be captured in CUDA graphs (`torch.cuda.graph`,
or Inductor's under `torch.compile(mode="reduce-overhead")`) once each
operator has run eagerly (a warm-up, which both do).
"""

import math
from typing import Optional

import torch

from . import kernels, plans
from .compiler import compile, kernel_arg
from .runtime import GROUPS, LaunchError, descriptor_type, rows_view

#: Triton's and the plans' names of the element types the operators take.
ELEMENTS = {torch.bfloat16: ("bf16", "bf16"), torch.float16: ("fp16", "f16")}

#: The default tile configuration (an H200's bf16 GEMM at 8192 x 7168 x 4096).
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
NUM_WARPS, NUM_STAGES = 8, 4


class _GemmOperator:
    """What the three operators share: the compiled kernel, its grid, and
    the checks of the operands no plan buffer carries. `compile` alone
    needs no GPU (to fill a cache on a build machine)."""

    #: Arguments compiled as multiples of 16, as Triton's JIT specialises
    #: them (vectorised, pipelined loads); the runtime refuses a launch
    #: that breaks it.
    DIVISIBLE = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"]

    @classmethod
    def signature(cls, *, dtype=torch.bfloat16, config=None, descriptors=False):
        """Triton's types of the kernel's runtime parameters and the ones
        that are multiples of 16: pointers to A, B and C and six i32s, or
        with `descriptors` A, B and C as host tensor descriptors (blocks of
        [BLOCK_M, BLOCK_K], [BLOCK_K, BLOCK_N], [BLOCK_M, BLOCK_N])."""
        triton_type, _ = ELEMENTS[dtype]
        if not descriptors:
            return [f"*{triton_type}"] * 3 + ["i32"] * 6, cls.DIVISIBLE
        m, n, k = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
        blocks = ((m, k), (k, n), (m, n))
        tensors = [f"tensordesc<{triton_type}[{r},{c}]>" for r, c in blocks]
        return tensors + ["i32"] * 6, [d for d in cls.DIVISIBLE if not d.endswith("_ptr")]

    @classmethod
    def compile(cls, world_size, *, m, k, n, dtype=torch.bfloat16, kernel=kernels.matmul,
                config=None, chunks="auto", backend="auto", descriptors=False,
                num_warps=NUM_WARPS, num_stages=NUM_STAGES, cache_dir=None, plan=None,
                **plan_options):
        """The fused kernel for `world_size` ranks, compiled or cached;
        `plan`: a plan's text to fuse instead of the template's (e.g. one
        of `synco.import_plans`); `descriptors`: the kernel takes A, B and
        C as host tensor descriptors (see `signature`)."""
        if dtype not in ELEMENTS:
            raise LaunchError(f"dtype must be one of {list(ELEMENTS)}, not {dtype}")
        _, element = ELEMENTS[dtype]
        config = dict(config) if config else _default_config(m, world_size)
        signature, divisible = cls.signature(dtype=dtype, config=config, descriptors=descriptors)
        if plan is None:
            args = {name: kernel_arg(signature, i) for name, i in cls.PLAN_ARGS.items()}
            plan = cls._plan(world_size=world_size, m=m, k=k, n=n, dtype=element,
                             block_m=config["BLOCK_M"], chunks=chunks, backend=backend,
                             **args, **plan_options)
        if kernel in (kernels.matmul, kernels.matmul_k_indexed):
            _check_whole_tiles(m=m, k=k, n=n, config=config)
        return compile(kernel, signature=signature, plan=plan, pipeline="synco-fuse",
                       constexprs=config, divisible=divisible, num_warps=num_warps,
                       num_stages=num_stages, cache_dir=cache_dir)

    def __init__(self, group, *, m, k, n, dtype=torch.bfloat16, config=None, **options):
        self.group, self.m, self.k, self.n, self.dtype = group, m, k, n, dtype
        self.config = dict(config) if config else _default_config(m, group.world_size)
        compiled = self.compile(group.world_size, m=m, k=k, n=n, dtype=dtype, config=config,
                                **options)
        self.kernel = group.load(compiled)
        block_m, block_n = self.config["BLOCK_M"], self.config["BLOCK_N"]
        self.grid = (-(-m // block_m) * -(-n // block_n),)
        # The heap bindings of the operator's own buffers, from the first
        # launch's full check (see `_launch`).
        self._bindings = None
        # What later launches pass for a, b and c: their addresses, or the
        # views of their rows a kernel of host descriptors reads.
        self._blocks = [(descriptor_type(ty) or (None, None))[1]
                        for _, ty in self.kernel.manifest.user_params[:3]]

    #: Which of the kernel's tensor arguments (a, b, c) are the operator's
    #: own symmetric buffers, the same on every call.
    OWN_ARGS = ()
    #: The plan template's arguments that name the kernel argument a
    #: buffer binds, by the position of the tensor (a, b, c) it is.
    PLAN_ARGS = {}

    def _check(self, name, tensor, shape):
        _check_operand(name, tensor, shape, self.dtype, self.group.device)

    def _launch(self, a, b, c, buffers=None):
        """Launches on a, b and c, the ones the caller passes checked by
        `_check` (shape, dtype, device, layout). Every argument is checked
        in full on the first call; later calls reuse its heap bindings
        when the plan binds only the operator's own buffers (`OWN_ARGS`,
        and `buffers`), which do not change (a plan that binds an operand,
        as an imported one may, has every call checked in full)."""
        m, n, k = self.m, self.n, self.k
        if self._bindings is None:
            values, bindings = self.kernel.arguments((a, b, c, m, n, k, k, n, n), buffers)
            if set(self.kernel.arguments.bound_args) <= set(self.OWN_ARGS):
                self._bindings = bindings
        else:
            values = [t.data_ptr() if block is None else rows_view(t, block)
                      for t, block in zip((a, b, c), self._blocks)] + [m, n, k, k, n, n]
            bindings = self._bindings
        self.kernel.launch_checked(self.grid, values, bindings)


class AllGatherMatmul(_GemmOperator):
    """C[m, n] = all_gather(A)[m, k] @ B[k, n], A's rows split evenly
    across the ranks: each rank's tiles wait only for the chunk of A they
    read. Options: `kernel` (a GEMM with `synco.kernels.matmul`'s
    arguments; with `descriptors=True`, A, B and C host tensor
    descriptors, as `examples/ag_gemm/matmul.py`'s
    `matmul_kernel_tma_host` takes them), `config` (its constexprs),
    `chunks`, `backend`, `algorithm` (`direct` or `ring`), `num_warps`,
    `num_stages`, `cache_dir`."""

    OWN_ARGS = (0,)  # the gathered A
    PLAN_ARGS = {"a_arg": 0}

    @staticmethod
    def _plan(**shape):
        return plans.all_gather_matmul(**shape, c_arg=None)

    def __init__(self, group, *, m, k, n, dtype=torch.bfloat16, **options):
        super().__init__(group, m=m, k=k, n=n, dtype=dtype, **options)
        #: The gathered A, symmetric; `shard` is this rank's rows of it.
        self.gathered = group.empty((m, k), dtype)
        rows = m // group.world_size
        self.shard = self.gathered[group.rank * rows:(group.rank + 1) * rows]

    def __call__(self, b, a_shard=None, out=None):
        """C for this rank's shard `a_shard` (copied into `shard` unless it
        is `shard`; None: `shard` holds it already), into `out` if given."""
        if a_shard is not None:
            self._check("a_shard", a_shard, self.shard.shape)
            if a_shard.data_ptr() != self.shard.data_ptr():
                self.shard.copy_(a_shard)
        self._check("b", b, (self.k, self.n))
        if out is None:
            out = torch.empty((self.m, self.n), dtype=self.dtype, device=self.group.device)
        self._check("out", out, (self.m, self.n))
        self._launch(self.gathered, b, out)
        return out


class AllToAllMatmul(_GemmOperator):
    """C[m, n] = A[m, k] @ B[k, n] where A is re-sharded by an all-to-all:
    each rank holds X [m * W, k / W] (every token of its share of A's
    columns, e.g. Ulysses attention's head-sharded output) and gets its m
    tokens of all of A's columns, rank s's block from rank s, inside the
    GEMM: its loop over k (default kernel `synco.kernels.matmul_k_indexed`)
    reads the rank's own column block first and waits for each peer chunk
    before its blocks. Options as `AllGatherMatmul`'s (`chunks` per rank,
    default 1; `backend` `copy_engine`, `ldst` or `tma`)."""

    OWN_ARGS = (0,)  # the re-sharded A
    PLAN_ARGS = {"a_arg": 0}

    @classmethod
    def compile(cls, world_size, *, m, k, n, kernel=kernels.matmul_k_indexed, chunks=1,
                backend="copy_engine", config=None, **options):
        config = dict(config) if config else _default_config(m, world_size)
        return super().compile(world_size, m=m, k=k, n=n, kernel=kernel, chunks=chunks,
                               backend=backend, config=config, block_k=config["BLOCK_K"],
                               **options)

    @staticmethod
    def _plan(**shape):
        return plans.all_to_all_matmul(**shape)

    def __init__(self, group, *, m, k, n, dtype=torch.bfloat16, **options):
        if k % group.world_size != 0:
            raise LaunchError(f"k ({k}) must be a multiple of the group's {group.world_size} "
                              "ranks: each holds k / W of A's columns")
        super().__init__(group, m=m, k=k, n=n, dtype=dtype, **options)
        #: X, this rank's columns of every token's A, and A, its tokens of
        #: every column, both symmetric.
        self.by_columns = group.empty((m * group.world_size, k // group.world_size), dtype)
        self.by_rows = group.empty((m, k), dtype)

    def __call__(self, x, b, out=None):
        """C for this rank's `x` [m * W, k / W] (copied into `by_columns`
        unless it is it), into `out` if given."""
        self._check("x", x, self.by_columns.shape)
        if x.data_ptr() != self.by_columns.data_ptr():
            self.by_columns.copy_(x)
        self._check("b", b, (self.k, self.n))
        if out is None:
            out = torch.empty((self.m, self.n), dtype=self.dtype, device=self.group.device)
        self._check("out", out, (self.m, self.n))
        self._launch(self.by_rows, b, out, buffers={"X": self.by_columns})
        return out


class MatmulAllToAll(_GemmOperator):
    """C[m, n] = A[m, k] @ B[k, n] on each rank (its m tokens), re-sharded
    by an all-to-all into [m * W, n / W] (every rank's tokens of this
    rank's n / W columns, e.g. a QKV projection by tokens into heads): the
    kernel's tiles count each rank's columns they finish (in `chunks`
    chunks of them, default 1) and the copy engine sends each as soon as
    it is done (`backend` `copy_engine`), or the destination's copy
    programs pull it (`ldst`, `tma`). Options as `AllGatherMatmul`'s."""

    OWN_ARGS = (2,)  # the product by rows
    PLAN_ARGS = {"c_arg": 2}

    @classmethod
    def compile(cls, world_size, *, m, k, n, chunks=1, backend="copy_engine", config=None,
                **options):
        config = dict(config) if config else _default_config(m * world_size, world_size)
        return super().compile(world_size, m=m, k=k, n=n, chunks=chunks, backend=backend,
                               config=config, block_n=config["BLOCK_N"], **options)

    @staticmethod
    def _plan(**shape):
        return plans.matmul_all_to_all(**shape)

    def __init__(self, group, *, m, k, n, dtype=torch.bfloat16, **options):
        if n % group.world_size != 0:
            raise LaunchError(f"n ({n}) must be a multiple of the group's {group.world_size} "
                              "ranks: each gets n / W of the columns")
        super().__init__(group, m=m, k=k, n=n, dtype=dtype, **options)
        #: C, this rank's tokens of every column, and the re-sharded
        #: result, every rank's tokens of its columns (valid until the
        #: next call), both symmetric.
        self.by_rows = group.empty((m, n), dtype)
        self.by_columns = group.empty((m * group.world_size, n // group.world_size), dtype)

    def __call__(self, a, b):
        """`by_columns` for this rank's `a` [m, k]."""
        self._check("a", a, (self.m, self.k))
        self._check("b", b, (self.k, self.n))
        self._launch(a, b, self.by_rows, buffers={"Y": self.by_columns})
        return self.by_columns


class _ReducedMatmul(_GemmOperator):
    """A GEMM whose partial sums P[m, n] (symmetric) are reduced across the
    ranks into `result` (symmetric, valid until the next call)."""

    OWN_ARGS = (2,)  # the partial sums
    PLAN_ARGS = {"p_arg": 2}

    def __init__(self, group, *, m, k, n, dtype=torch.bfloat16, **options):
        super().__init__(group, m=m, k=k, n=n, dtype=dtype, **options)
        self.partials = group.empty((m, n), dtype)
        self.result = group.empty((self._result_rows(m, group.world_size), n), dtype)

    def __call__(self, a, b, out=None):
        """The reduced product of this rank's `a` [m, k] and `b` [k, n]:
        `result` itself, or a copy in `out`."""
        self._check("a", a, (self.m, self.k))
        self._check("b", b, (self.k, self.n))
        self._launch(a, b, self.partials, buffers={"C": self.result})
        if out is None:
            return self.result
        self._check("out", out, self.result.shape)
        return out.copy_(self.result)


class MatmulReduceScatter(_ReducedMatmul):
    """Rank r's rows [r m / W, (r + 1) m / W) of the sum over ranks of
    A @ B (options as `AllGatherMatmul`'s)."""

    @staticmethod
    def _plan(k, **shape):
        return plans.matmul_reduce_scatter(**shape)

    @staticmethod
    def _result_rows(m, world_size):
        return m // world_size


class MatmulAllReduce(_ReducedMatmul):
    """The sum over ranks of A @ B, on every rank (`algorithm`: `one_shot`
    or `two_shot`; other options as `AllGatherMatmul`'s)."""

    @staticmethod
    def _plan(k, **shape):
        return plans.matmul_all_reduce(**shape)

    @staticmethod
    def _result_rows(m, world_size):
        return m


class AllGatherAttention:
    """Context-parallel attention with K and V all-gathered along the
    sequence: each rank holds `seq / W` tokens of Q, K and V ([tokens,
    heads, head_dim] with batch 1, rank r the r-th slice), and its output
    rows attend to the whole sequence (or, `causal`, to the tokens up to
    theirs). The all-gather is fused into the attention kernel (default
    `synco.kernels.attention`): its loop over the keys and values reads the
    rank's own chunks first and waits for each peer chunk before its
    blocks; a causal rank never waits for chunks past its tokens. Options:
    `config` (BLOCK_M, BLOCK_N), `chunks` per rank (default 1: each
    chunk is its own pipelined loop, see `benches/attention/README.md`),
    `backend`
    (`copy_engine`, `ldst` or `tma`), `algorithm` (`direct`, or `ring`: each rank
    forwards the blocks it received to rank r - 1, and reads them in the
    order they come, r + 1 first, as with `direct`), `num_warps`, `num_stages`,
    `cache_dir`, `present_path` (`arrival`, the default: a program that
    finds every peer chunk already there reads them without waits, in the
    same order, so with the same sums; `none`: chunk by chunk, as when
    chunks are missing).

    `zigzag`: the load-balanced sharding of causal attention. The sequence
    is cut in 2W parts and rank r holds parts r and 2W - 1 - r (its q,
    k_shard, v_shard and output rows are those two parts, in that order),
    so that every rank's queries see as many keys; the kernel (default
    `synco.kernels.attention_zigzag`) takes the rank as its last
    argument.

    `layout`: `"bshd"` (the default) holds each tensor as [tokens, heads *
    head_dim]; `"bhsd"` as [heads, tokens, head_dim], the layout of
    PyTorch's `scaled_dot_product_attention` (batch 1) and of Triton's
    fused-attention tutorial, whose K and V the plan gathers along their
    second dimension. The kernel gets the layout's strides either way.

    `slots=2`: ring attention over a fixed pair of buffers (with
    `algorithm="ring"`, the copy engine or `ldst`, one chunk per rank,
    "bshd"). Each rank holds its own K and V block and two slots, 3 blocks
    instead of W, and a call runs the kernel once per ring step: step s on
    the block of rank r + s while the copy engine (or the kernel's copy
    programs) brings the next into the other slot; the softmax state waits
    in memory between the steps. A CUDA graph captures the call's W
    launches.

    `descriptors`: the kernel takes Q, K, V and Out as host tensor
    descriptors (Triton's `TensorDescriptor`, as the fused-attention
    tutorial passes them on Hopper) instead of pointers; the op makes each
    over its tensor's rows (`synco.runtime.rows_view`), K's and V's over
    the gathered sequence."""

    CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64}
    SIGNATURE = ["*bf16"] * 4 + ["fp32"] + ["i32"] * 16
    #: Arguments that are multiples of 16 (vectorised, pipelined loads).
    DIVISIBLE = ["Q", "K", "V", "Out"] + [f"stride_{t}{d}" for t in "qkvo"
                                            for d in ("z", "h", "m" if t in "qo" else "n")] \
        + ["N_CTX_Q", "N_CTX_KV"]

    @classmethod
    def signature(cls, *, head_dim, config=None, descriptors=False, zigzag=False):
        """Triton's types of the kernel's runtime parameters and the ones
        that are multiples of 16: `SIGNATURE` and `DIVISIBLE`, or with
        `descriptors` Q, K, V and Out as host tensor descriptors (blocks of
        [BLOCK_M or BLOCK_N, head_dim]); the rank last with `zigzag`."""
        config = {**cls.CONFIG, **(config or {})}
        signature = cls.SIGNATURE + (["i32"] if zigzag else [])
        if not descriptors:
            return signature, cls.DIVISIBLE
        rows = (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_N"], config["BLOCK_M"])
        tensors = [f"tensordesc<bf16[{r},{head_dim}]>" for r in rows]
        return tensors + signature[4:], [n for n in cls.DIVISIBLE if n not in ("Q", "K", "V", "Out")]

    @classmethod
    def compile(cls, world_size, *, seq, kv_heads, head_dim, causal=False, kernel=None,
                config=None, chunks=None, backend="copy_engine", algorithm="direct",
                zigzag=False, layout="bshd", descriptors=False, num_warps=8, num_stages=3,
                cache_dir=None, slots=None, present_path="arrival", max_unrolled_chunks=None,
                present_split="auto"):
        """The fused kernel for `world_size` ranks, compiled or cached.
        `present_path` is what a program that finds every K/V chunk present
        runs (chunk-reorder-tiles): `arrival` (the split's iterations, in
        fewer loops, the same sums) or `none` (the split loop, waits and
        all). `max_unrolled_chunks` (0 to 64; the pass's default, 8, if
        None) is the largest split loop that is unrolled. `present_split`
        says which split goes beside a present path: `auto` (unrolled where
        its loop runs to the sequence's length, rolled where it runs to a
        causal band's end), `rolled` or `unrolled`."""
        if present_path not in ("arrival", "none"):
            raise LaunchError(f"present_path must be 'arrival' or 'none', not {present_path!r}")
        options = [] if present_path == "arrival" else [f"present-path={present_path}"]
        if max_unrolled_chunks is not None:
            if (isinstance(max_unrolled_chunks, bool) or not isinstance(max_unrolled_chunks, int)
                    or not 0 <= max_unrolled_chunks <= 64):
                raise LaunchError("max_unrolled_chunks must be an int in 0..64, not "
                                  f"{max_unrolled_chunks!r}")
            options.append(f"max-unrolled-chunks={max_unrolled_chunks}")
        if present_split not in ("auto", "rolled", "unrolled"):
            raise LaunchError("present_split must be 'auto', 'rolled' or 'unrolled', not "
                              f"{present_split!r}")
        if present_split != "auto":
            options.append(f"present-split={present_split}")
        pipeline = f"synco-fuse{{{' '.join(options)}}}" if options else "synco-fuse"
        config = {**cls.CONFIG, **(config or {})}
        if kernel is None:
            kernel = kernels.attention_zigzag if zigzag else kernels.attention
        if chunks is None:
            chunks = 2 if zigzag else 1
        signature, divisible = cls.signature(head_dim=head_dim, config=config,
                                             descriptors=descriptors, zigzag=zigzag)
        plan = plans.all_gather_attention(world_size=world_size, seq=seq, kv_heads=kv_heads,
                                          head_dim=head_dim, block_n=config["BLOCK_N"],
                                          chunks=chunks, backend=backend, algorithm=algorithm,
                                          zigzag=zigzag, layout=layout, slots=slots,
                                          k_arg=kernel_arg(signature, 1),
                                          v_arg=kernel_arg(signature, 2))
        constexprs = {"HEAD_DIM": head_dim, "CAUSAL": int(bool(causal)), **config}
        return compile(kernel, signature=signature, plan=plan, pipeline=pipeline,
                       constexprs=constexprs, divisible=divisible, num_warps=num_warps,
                       num_stages=num_stages, cache_dir=cache_dir)

    def __init__(self, group, *, seq, heads, kv_heads, head_dim, causal=False, zigzag=False,
                 layout="bshd", **options):
        if heads % kv_heads != 0:
            raise LaunchError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
        if layout not in ("bshd", "bhsd"):
            raise LaunchError(f"layout must be 'bshd' or 'bhsd', not {layout!r}")
        w = group.world_size
        self.group, self.seq, self.causal, self.zigzag = group, seq, causal, zigzag
        self.layout = layout
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.tokens = seq // w
        self.config = {**self.CONFIG, **(options.get("config") or {})}
        part = self.tokens // 2 if zigzag else self.tokens
        if seq % w != 0 or (zigzag and self.tokens % 2) or part % self.config["BLOCK_M"] != 0:
            what = "half of each rank's" if zigzag else "each rank's"
            raise LaunchError(f"{what} {seq} / {w} tokens must be whole blocks of "
                              f"BLOCK_M ({self.config['BLOCK_M']})")
        compiled = self.compile(w, seq=seq, kv_heads=kv_heads, head_dim=head_dim, causal=causal,
                                zigzag=zigzag, layout=layout, **options)
        self.kernel = group.load(compiled)
        #: K and V of the whole sequence, symmetric; `own` are this rank's
        #: tokens in them (one slice, or two with `zigzag`), along dim 0
        #: ("bshd") or 1 ("bhsd"). With `slots`, the rank's own block then
        #: the two slots (3 blocks; the kernel addresses the sequence).
        self.slots = options.get("slots")
        held = 3 * self.tokens if self.slots else seq
        self.k = group.empty(self._shape(held, kv_heads), torch.bfloat16)
        self.v = group.empty(self._shape(held, kv_heads), torch.bfloat16)
        r = group.rank
        self.own = ([slice(r * part, (r + 1) * part),
                     slice((2 * w - 1 - r) * part, (2 * w - r) * part)] if zigzag
                    else [slice(0, part)] if self.slots
                    else [slice(r * part, (r + 1) * part)])
        if not zigzag:
            self.k_shard, self.v_shard = self._tokens(self.k, self.own[0]), \
                self._tokens(self.v, self.own[0])

    def _shape(self, tokens, heads):
        """A tensor of `tokens` tokens of `heads` heads in the layout."""
        if self.layout == "bshd":
            return (tokens, heads * self.head_dim)
        return (heads, tokens, self.head_dim)

    def _tokens(self, tensor, tokens):
        """The `tokens` (a slice) of `tensor`, in the layout."""
        return tensor[tokens] if self.layout == "bshd" else tensor[:, tokens]

    def _strides(self, tokens, heads):
        return attention_strides(self.layout, tokens, heads, self.head_dim)

    def __call__(self, q, k_shard=None, v_shard=None, sm_scale=None, out=None):
        """Attention of this rank's queries `q` ([tokens, heads * head_dim],
        or [heads, tokens, head_dim] with `layout="bhsd"`) over the
        gathered keys and values (`k_shard`, `v_shard`: this rank's, copied
        into `k_shard`/`v_shard` unless they are them)."""
        rows = self.tokens
        for name, given, gathered in (("k_shard", k_shard, self.k), ("v_shard", v_shard, self.v)):
            if given is None:
                continue
            _check_operand(name, given, self._shape(rows, self.kv_heads), torch.bfloat16)
            start = 0
            for own in self.own:
                part = self._tokens(gathered, own)
                count = own.stop - own.start
                piece = self._tokens(given, slice(start, start + count))
                if piece.data_ptr() != part.data_ptr():
                    part.copy_(piece)
                start += count
        q_shape = self._shape(rows, self.heads)
        _check_operand("q", q, q_shape, torch.bfloat16)
        if out is None:
            out = torch.empty_like(q)
        _check_operand("out", out, q_shape, torch.bfloat16)
        d = self.head_dim
        # Causal: this rank's queries are the last of the first (r + 1) / W
        # of the sequence, as the kernel takes them (zigzag: the kernel
        # places them from the rank).
        contiguous_causal = self.causal and not self.zigzag
        n_kv = (self.group.rank + 1) * rows if contiguous_causal else self.seq
        rank = [self.group.rank] if self.zigzag else []
        scale = sm_scale if sm_scale is not None else d ** -0.5
        grid = (rows // self.config["BLOCK_M"], self.heads)
        q_strides = self._strides(rows, self.heads)
        kv_strides = self._strides(self.seq, self.kv_heads)
        self.kernel(grid, q, self.k, self.v, out, scale, *q_strides, *kv_strides, *kv_strides,
                    *q_strides, self.heads, self.kv_heads, rows, n_kv, *rank)
        return out


class UlyssesAttention:
    """Ulysses (head-parallel) attention: each rank holds `seq / W` tokens
    of Q, K and V ([tokens, heads * head_dim], batch 1, rank r the r-th
    slice); all-to-alls re-shard them by heads (every token, `heads / W` of
    the heads: rank r's are heads r * heads / W ...) inside the attention
    kernel (default `synco.kernels.attention`), whose query blocks wait for
    their chunk of Q and whose loop over the keys and values waits for each
    chunk of K and V, the rank's own sequence block first. The output is
    head-sharded, [seq, heads / W * head_dim]; with `reshard_out=True` it
    goes back by tokens inside the same kernel ([seq / W, heads *
    head_dim], `by_tokens["O"]`, valid until the next call): the copy
    engine sends each rank's rows (in `out_chunks` chunks of them) as soon
    as the query blocks that write them are done (`out_backend`
    `copy_engine`), or each destination's copy programs pull them (`ldst`,
    `tma`). With `reshard_in=False` (and `reshard_out=True`) the kernel
    is attention + all-to-all alone: the call takes Q, K and V head-sharded
    already ([seq, heads / W * head_dim], any tensors, as
    `MatmulAllToAll` leaves them), and only the output moves. With
    `per_head=True`, Q, K and V move in a chunk per head of each rank's
    tokens, and each program waits only for its head's. Options:
    `config` (BLOCK_M, BLOCK_N), `chunks` per rank, `backend`
    (`copy_engine`, `ldst` or `tma`, for Q, K and V), `num_warps`,
    `num_stages`, `cache_dir`."""

    CONFIG = AllGatherAttention.CONFIG
    SIGNATURE = AllGatherAttention.SIGNATURE
    DIVISIBLE = AllGatherAttention.DIVISIBLE

    @classmethod
    def compile(cls, world_size, *, seq, heads, kv_heads, head_dim, causal=False, kernel=None,
                config=None, chunks=1, backend="copy_engine", reshard_out=False, out_chunks=1,
                out_backend="copy_engine", reshard_in=True, per_head=False, num_warps=8,
                num_stages=3, cache_dir=None, plan=None):
        """The fused kernel for `world_size` ranks, compiled or cached;
        `plan`: a plan's text to fuse instead of the template's (e.g. one
        of `synco.import_plans`)."""
        config = {**cls.CONFIG, **(config or {})}
        if plan is None:
            plan = plans.ulysses_attention(world_size=world_size, seq=seq, heads=heads,
                                           kv_heads=kv_heads, head_dim=head_dim,
                                           block_m=config["BLOCK_M"], block_n=config["BLOCK_N"],
                                           chunks=chunks, backend=backend,
                                           reshard_out=reshard_out, out_chunks=out_chunks,
                                           out_backend=out_backend, reshard_in=reshard_in,
                                           per_head=per_head)
        constexprs = {"HEAD_DIM": head_dim, "CAUSAL": int(bool(causal)), **config}
        return compile(kernel or kernels.attention, signature=cls.SIGNATURE, plan=plan,
                       pipeline="synco-fuse", constexprs=constexprs, divisible=cls.DIVISIBLE,
                       num_warps=num_warps, num_stages=num_stages, cache_dir=cache_dir)

    def __init__(self, group, *, seq, heads, kv_heads, head_dim, causal=False, **options):
        w = group.world_size
        for name, count in (("heads", heads), ("kv_heads", kv_heads)):
            if count % w != 0:
                raise LaunchError(f"{name} ({count}) must be a multiple of the group's "
                                  f"{w} ranks: each rank takes {name} / {w} of them")
        if heads % kv_heads != 0:
            raise LaunchError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
        self.config = {**self.CONFIG, **(options.get("config") or {})}
        self.tokens = seq // w
        if seq % w != 0 or self.tokens % self.config["BLOCK_M"] != 0:
            raise LaunchError(f"each rank's {seq} / {w} tokens must be whole blocks of "
                              f"BLOCK_M ({self.config['BLOCK_M']})")
        self.group, self.seq, self.causal, self.head_dim = group, seq, causal, head_dim
        self.heads, self.kv_heads = heads // w, kv_heads // w
        compiled = self.compile(w, seq=seq, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                                causal=causal, **options)
        self.kernel = group.load(compiled)
        self.reshard_in = options.get("reshard_in", True)
        self.reshard_out = options.get("reshard_out", False)
        #: This rank's tokens of Q, K and V (sequence-sharded) and every
        #: token of its heads (head-sharded), all symmetric (none without
        #: `reshard_in`).
        self.sharded, self.by_heads = {}, {}
        if self.reshard_in:
            self.sharded = {name: group.empty((self.tokens, count * head_dim), torch.bfloat16)
                            for name, count in (("Q", heads), ("K", kv_heads), ("V", kv_heads))}
            self.by_heads = {name: group.empty((seq, count * head_dim), torch.bfloat16)
                             for name, count in (("Q", self.heads), ("K", self.kv_heads),
                                                 ("V", self.kv_heads))}
        #: With `reshard_out`: the output by heads (what the kernel writes)
        #: and by tokens (what the copy engine sends back), symmetric.
        self.by_tokens = {}
        if self.reshard_out:
            self.by_heads["O"] = group.empty((seq, self.heads * head_dim), torch.bfloat16)
            self.by_tokens["O"] = group.empty((self.tokens, heads * head_dim), torch.bfloat16)

    def __call__(self, q, k, v, sm_scale=None, out=None):
        """Attention of this rank's heads over every token, from this
        rank's tokens `q`, `k`, `v` (copied into the symmetric heap unless
        they are `sharded[...]`; without `reshard_in`, every token of this
        rank's heads, [seq, heads / W * head_dim] and [seq, kv_heads / W *
        head_dim]); returns [seq, heads / W * head_dim], or, with
        `reshard_out`, this rank's tokens of every head [seq / W, heads *
        head_dim]."""
        d, s = self.head_dim, self.seq
        q_cols, kv_cols = self.heads * d, self.kv_heads * d
        if self.reshard_in:
            for name, given in (("Q", q), ("K", k), ("V", v)):
                held = self.sharded[name]
                _check_operand(name.lower(), given, tuple(held.shape), torch.bfloat16)
                if given.data_ptr() != held.data_ptr():
                    held.copy_(given)
            q, k, v = self.by_heads["Q"], self.by_heads["K"], self.by_heads["V"]
        else:
            for name, given, cols in (("q", q, q_cols), ("k", k, kv_cols), ("v", v, kv_cols)):
                _check_operand(name, given, (s, cols), torch.bfloat16)
        buffers = {f"{name}s": held for name, held in self.sharded.items()}
        if self.reshard_out:
            if out is not None:
                raise LaunchError("out: with reshard_out the output is by_tokens['O'] "
                                  "(symmetric, where the peers' rows land)")
            out = self.by_heads["O"]
            buffers["Os"] = self.by_tokens["O"]
        if out is None:
            out = torch.empty((s, q_cols), dtype=torch.bfloat16, device=q.device)
        _check_operand("out", out, (s, q_cols), torch.bfloat16)
        scale = sm_scale if sm_scale is not None else d ** -0.5
        grid = (s // self.config["BLOCK_M"], self.heads)
        self.kernel(grid, q, k, v, out, scale,
                    s * q_cols, d, q_cols, s * kv_cols, d, kv_cols, s * kv_cols, d, kv_cols,
                    s * q_cols, d, q_cols, self.heads, self.kv_heads, s, s, buffers=buffers)
        return self.by_tokens["O"] if self.reshard_out else out


def attention_strides(layout, tokens, heads, head_dim):
    """The attention kernels' (batch, head, token) strides of a contiguous
    tensor of `tokens` tokens of `heads` heads of `head_dim`, batch 1, in
    `layout`: "bshd" ([tokens, heads * head_dim]) or "bhsd" ([heads,
    tokens, head_dim])."""
    if layout == "bshd":
        return (tokens * heads * head_dim, head_dim, heads * head_dim)
    return (heads * tokens * head_dim, tokens * head_dim, head_dim)


def _default_config(m, world_size):
    """`CONFIG`, with a swizzle group (GROUP_M) that divides each rank's
    row tiles: a group spanning two ranks' blocks would run a rank's own
    tiles before the peers' tiles they wait for (the passes refuse it)."""
    config = dict(CONFIG)
    tiles_per_rank = max(m // max(world_size, 1) // config["BLOCK_M"], 1)
    config["GROUP_M"] = math.gcd(config["GROUP_M"], tiles_per_rank)
    return config


def _check_whole_tiles(*, m, k, n, config):
    """`synco.kernels.matmul` loads and stores whole tiles (no masks): a
    shape with a partial tile would read and write out of bounds."""
    for name, extent, block in (("m", m, "BLOCK_M"), ("n", n, "BLOCK_N"), ("k", k, "BLOCK_K")):
        if extent % config[block] != 0:
            raise LaunchError(f"{name} ({extent}) must be a multiple of {block} "
                              f"({config[block]}): synco.kernels.matmul has no masks")


def _check_operand(name, tensor, shape, dtype, device=None):
    if not isinstance(tensor, torch.Tensor):
        raise LaunchError(f"{name} must be a tensor, not {type(tensor).__name__}")
    if tuple(tensor.shape) != tuple(shape):
        raise LaunchError(f"{name} has shape {tuple(tensor.shape)}, this operator takes "
                          f"{tuple(shape)}")
    if tensor.dtype != dtype:
        raise LaunchError(f"{name} is {tensor.dtype}, this operator takes {dtype}")
    if device is not None and tensor.device != device:
        raise LaunchError(f"{name} is on {tensor.device}, the group runs on {device}")
    if device is not None and not tensor.is_contiguous():
        raise LaunchError(f"{name} is not contiguous (strides {tensor.stride()}): the kernel "
                          "reads it row-major")


# The functional forms: one operator per group, shape and dtype, made on
# first use. Those whose result's shape depends on the group's size take it
# as an argument (as PyTorch's functional collectives do): a compiled graph
# cached by torch.compile is keyed by its arguments, not by the open groups.
#
# Inductor's CUDA graphs (`torch.compile(mode="reduce-overhead")`) capture
# them with the rest of the model: a captured launch replays
# (crates/synco-runtime/docs/graph-capture.md).
_OPERATORS = {}


def _operator(cls, group_name, **shape):
    group = GROUPS.get(group_name)
    if group is None:
        raise LaunchError(f"no synco.Group for process group '{group_name}': open one first")
    key = (cls, group_name, tuple(sorted(shape.items())))
    if key not in _OPERATORS:
        _OPERATORS[key] = cls(group, **shape)
    return _OPERATORS[key]


def _group_name(group):
    return group.process_group.group_name


def _check_group_size(group_size, group_name):
    group = GROUPS.get(group_name)
    if group is not None and group.world_size != group_size:
        raise LaunchError(f"group_size is {group_size}, but process group '{group_name}' has "
                          f"{group.world_size} ranks")


@torch.library.custom_op("synco::all_gather_matmul", mutates_args=())
def _all_gather_matmul(a_shard: torch.Tensor, b: torch.Tensor, group_size: int,
                       group_name: str) -> torch.Tensor:
    _check_group_size(group_size, group_name)
    op = _operator(AllGatherMatmul, group_name, m=a_shard.shape[0] * group_size,
                   k=a_shard.shape[1], n=b.shape[1], dtype=a_shard.dtype)
    return op(b, a_shard=a_shard)


@_all_gather_matmul.register_fake
def _(a_shard, b, group_size, group_name):
    return a_shard.new_empty((a_shard.shape[0] * group_size, b.shape[1]))


@torch.library.custom_op("synco::matmul_reduce_scatter", mutates_args=())
def _matmul_reduce_scatter(a: torch.Tensor, b: torch.Tensor, group_size: int,
                           group_name: str) -> torch.Tensor:
    _check_group_size(group_size, group_name)
    op = _operator(MatmulReduceScatter, group_name, m=a.shape[0], k=a.shape[1], n=b.shape[1],
                   dtype=a.dtype)
    return op(a, b).clone()


@_matmul_reduce_scatter.register_fake
def _(a, b, group_size, group_name):
    return a.new_empty((a.shape[0] // group_size, b.shape[1]))


@torch.library.custom_op("synco::matmul_all_reduce", mutates_args=())
def _matmul_all_reduce(a: torch.Tensor, b: torch.Tensor, group_name: str) -> torch.Tensor:
    op = _operator(MatmulAllReduce, group_name, m=a.shape[0], k=a.shape[1], n=b.shape[1],
                   dtype=a.dtype)
    return op(a, b).clone()


@_matmul_all_reduce.register_fake
def _(a, b, group_name):
    return a.new_empty((a.shape[0], b.shape[1]))


@torch.library.custom_op("synco::all_gather_attention", mutates_args=())
def _all_gather_attention(q: torch.Tensor, k_shard: torch.Tensor, v_shard: torch.Tensor,
                          group_name: str, head_dim: int, causal: bool, zigzag: bool = False,
                          layout: str = "bshd", scale: Optional[float] = None) -> torch.Tensor:
    world = GROUPS[group_name].world_size if group_name in GROUPS else 1
    if layout == "bhsd":
        heads, tokens, kv_heads = q.shape[0], q.shape[1], k_shard.shape[0]
    else:
        heads, tokens, kv_heads = q.shape[1] // head_dim, q.shape[0], k_shard.shape[1] // head_dim
    op = _operator(AllGatherAttention, group_name, seq=tokens * world, heads=heads,
                   kv_heads=kv_heads, head_dim=head_dim, causal=causal, zigzag=zigzag,
                   layout=layout)
    return op(q, k_shard=k_shard, v_shard=v_shard, sm_scale=scale)


@_all_gather_attention.register_fake
def _(q, k_shard, v_shard, group_name, head_dim, causal, zigzag=False, layout="bshd",
      scale=None):
    return q.new_empty(q.shape)


def all_gather_attention(q, k_shard, v_shard, group, *, head_dim, causal=False, zigzag=False):
    """Attention of this rank's queries q [tokens, heads * head_dim] over
    the keys and values all-gathered along the sequence from every rank's
    k_shard, v_shard [tokens, kv_heads * head_dim] (see AllGatherAttention;
    `zigzag`: each rank holds parts r and 2W - 1 - r of the sequence)."""
    return torch.ops.synco.all_gather_attention(q, k_shard, v_shard, _group_name(group),
                                                head_dim, causal, zigzag)


def all_gather_sdpa(query, key, value, group, *, is_causal=False, scale=None, zigzag=False):
    """Context-parallel `torch.nn.functional.scaled_dot_product_attention`:
    this rank's `query`, `key` and `value` in SDPA's layout, [1, heads,
    tokens, head_dim] (batch 1) or [heads, tokens, head_dim], the rank's
    slice of the sequence (rank r the r-th; `zigzag`: parts r and 2W - 1 -
    r of the sequence cut in 2W, for causal attention); its queries attend
    to every rank's keys and values, gathered inside the attention kernel
    (grouped-query heads when `key` has fewer heads than `query`). Returns
    the rank's output rows in `query`'s shape."""
    batched = query.dim() == 4
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        if tensor.dim() != (4 if batched else 3) or (batched and tensor.shape[0] != 1):
            raise LaunchError(f"{name} has shape {tuple(tensor.shape)}: all_gather_sdpa takes "
                              "[1, heads, tokens, head_dim] (batch 1) or [heads, tokens, "
                              "head_dim], the same for query, key and value")
    if batched:
        query, key, value = query[0], key[0], value[0]
    out = torch.ops.synco.all_gather_attention(
        query.contiguous(), key, value, _group_name(group), query.shape[-1], is_causal, zigzag,
        "bhsd", scale)
    return out[None] if batched else out


@torch.library.custom_op("synco::ulysses_attention", mutates_args=())
def _ulysses_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, group_size: int,
                       group_name: str, head_dim: int, causal: bool,
                       reshard_out: bool) -> torch.Tensor:
    _check_group_size(group_size, group_name)
    op = _operator(UlyssesAttention, group_name, seq=q.shape[0] * group_size,
                   heads=q.shape[1] // head_dim, kv_heads=k.shape[1] // head_dim,
                   head_dim=head_dim, causal=causal, reshard_out=reshard_out)
    out = op(q, k, v)
    # (Re-sharded back, the output is the operator's symmetric buffer.)
    return out.clone() if reshard_out else out


@_ulysses_attention.register_fake
def _(q, k, v, group_size, group_name, head_dim, causal, reshard_out):
    if reshard_out:
        return q.new_empty(q.shape)
    return q.new_empty((q.shape[0] * group_size, q.shape[1] // group_size))


@torch.library.custom_op("synco::attention_all_to_all", mutates_args=())
def _attention_all_to_all(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, group_size: int,
                          group_name: str, head_dim: int, causal: bool) -> torch.Tensor:
    _check_group_size(group_size, group_name)
    op = _operator(UlyssesAttention, group_name, seq=q.shape[0], heads=q.shape[1] // head_dim
                   * group_size, kv_heads=k.shape[1] // head_dim * group_size,
                   head_dim=head_dim, causal=causal, reshard_in=False, reshard_out=True)
    # (The output is the operator's symmetric buffer.)
    return op(q, k, v).clone()


@_attention_all_to_all.register_fake
def _(q, k, v, group_size, group_name, head_dim, causal):
    return q.new_empty((q.shape[0] // group_size, q.shape[1] * group_size))


@torch.library.custom_op("synco::all_to_all_matmul", mutates_args=())
def _all_to_all_matmul(x: torch.Tensor, b: torch.Tensor, group_size: int,
                       group_name: str) -> torch.Tensor:
    _check_group_size(group_size, group_name)
    op = _operator(AllToAllMatmul, group_name, m=x.shape[0] // group_size,
                   k=x.shape[1] * group_size, n=b.shape[1], dtype=x.dtype)
    return op(x, b)


@_all_to_all_matmul.register_fake
def _(x, b, group_size, group_name):
    return x.new_empty((x.shape[0] // group_size, b.shape[1]))


@torch.library.custom_op("synco::matmul_all_to_all", mutates_args=())
def _matmul_all_to_all(a: torch.Tensor, b: torch.Tensor, group_size: int,
                       group_name: str) -> torch.Tensor:
    _check_group_size(group_size, group_name)
    op = _operator(MatmulAllToAll, group_name, m=a.shape[0], k=a.shape[1], n=b.shape[1],
                   dtype=a.dtype)
    return op(a, b).clone()


@_matmul_all_to_all.register_fake
def _(a, b, group_size, group_name):
    return a.new_empty((a.shape[0] * group_size, b.shape[1] // group_size))


def ulysses_attention(q, k, v, group, *, head_dim, causal=False, reshard_out=False):
    """Ulysses attention of this rank's tokens q [tokens, heads *
    head_dim], k, v [tokens, kv_heads * head_dim] (see UlyssesAttention):
    this rank's heads of every token, [seq, heads / W * head_dim], or with
    `reshard_out` this rank's tokens of every head, q's shape."""
    return torch.ops.synco.ulysses_attention(q, k, v, group.world_size, _group_name(group),
                                             head_dim, causal, reshard_out)


def attention_all_to_all(q, k, v, group, *, head_dim, causal=False):
    """Attention of this rank's heads over every token, q [seq, heads / W
    * head_dim], k, v [seq, kv_heads / W * head_dim] (head-sharded, as
    `matmul_all_to_all` leaves them), re-sharded back by tokens inside the
    kernel: this rank's tokens of every head, [seq / W, heads *
    head_dim] (see UlyssesAttention, `reshard_in=False`)."""
    return torch.ops.synco.attention_all_to_all(q, k, v, group.world_size, _group_name(group),
                                                head_dim, causal)


def all_to_all_matmul(x, b, group):
    """A @ b, A this rank's tokens of every column, re-sharded inside the
    GEMM from x [tokens * W, columns / W], this rank's columns of every
    token (see AllToAllMatmul)."""
    return torch.ops.synco.all_to_all_matmul(x, b, group.world_size, _group_name(group))


def matmul_all_to_all(a, b, group):
    """a @ b re-sharded from this rank's tokens of every column into every
    rank's tokens of this rank's columns, [tokens * W, n / W] (see
    MatmulAllToAll)."""
    return torch.ops.synco.matmul_all_to_all(a, b, group.world_size, _group_name(group))


def all_gather_matmul(a_shard, b, group):
    """all_gather(a_shard) @ b over `group` (a `synco.Group`)."""
    return torch.ops.synco.all_gather_matmul(a_shard, b, group.world_size, _group_name(group))


def matmul_reduce_scatter(a, b, group):
    """This rank's rows of reduce_scatter(a @ b) over `group`."""
    return torch.ops.synco.matmul_reduce_scatter(a, b, group.world_size, _group_name(group))


def matmul_all_reduce(a, b, group):
    """all_reduce(a @ b) over `group`."""
    return torch.ops.synco.matmul_all_reduce(a, b, _group_name(group))
