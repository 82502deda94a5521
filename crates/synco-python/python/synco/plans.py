"""Chunk plans for the operators Synco fuses, written from a call's shapes:
what `benches/fused/build.sh` and `examples/*/plan.mlir` write by hand.

Shapes are the plan's: `m` counts the rows of the whole gathered (or
reduced) matrix, of which each of the `world_size` ranks owns `m /
world_size`. Each template binds the kernel's arguments as the
repository's GEMMs take them (A, B, C first) unless told otherwise, and
leaves chunk counts and transports to Synco (`auto`) unless given.
"""

DTYPES = ("bf16", "f16", "f32")
BACKENDS = ("auto", "copy_engine", "ldst", "tma")


GATHER_ALGORITHMS = ("direct", "ring")


def all_gather_matmul(*, world_size, m, k, n, dtype="bf16", block_m=128, chunks="auto",
                      backend="auto", algorithm="direct", a_arg=0, c_arg=2):
    """A [m, k] all-gathered along its rows into a GEMM whose tiles of
    `block_m` rows wait for their chunk; C [m, n] is the GEMM's output
    (argument `c_arg`, or None for an output the plan need not bind: any
    tensor, not a symmetric one). `algorithm`: `direct` (every rank sends
    its block to every peer) or `ring` (each rank forwards what it received
    to the next)."""
    _check(world_size=world_size, m=m, k=k, n=n, dtype=dtype, block_m=block_m,
           chunks=chunks, backend=backend)
    return (f"chunk.plan @all_gather_matmul world_size({world_size}) {{\n"
            f"  chunk.buffer @A : !chunk.buffer<{m}x{k}x{dtype}> bind({a_arg})\n"
            f"  chunk.buffer @C : !chunk.buffer<{m}x{n}x{dtype}>{_bind(c_arg)}\n"
            f"  chunk.all_gather @A dim(0) chunks({chunks}) backend({backend})"
            f"{_gather_algorithm(algorithm)}\n"
            f"  chunk.consume @A dim(0) tile({block_m}) index(\"pid_m\")\n"
            "}\n")


def matmul_reduce_scatter(*, world_size, m, n, dtype="bf16", block_m=128, chunks="auto",
                          backend="auto", p_arg=2):
    """A GEMM's partial sums P [m, n] (its output, argument `p_arg`),
    reduce-scattered along the rows: rank r ends with rows
    [r m / W, (r + 1) m / W) of the sum in C."""
    _check(world_size=world_size, m=m, n=n, dtype=dtype, block_m=block_m, chunks=chunks,
           backend=backend)
    return (f"chunk.plan @matmul_reduce_scatter world_size({world_size}) {{\n"
            f"  chunk.buffer @P : !chunk.buffer<{m}x{n}x{dtype}> bind({p_arg})\n"
            f"  chunk.buffer @C : !chunk.buffer<{m // world_size}x{n}x{dtype}>\n"
            f"  chunk.produce @tiles @P dim(0) tile({block_m}) index(\"pid_m\")\n"
            f"  chunk.reduce_scatter @P into @C dim(0) chunks({chunks}) backend({backend})\n"
            "}\n")


def matmul_all_reduce(*, world_size, m, n, dtype="bf16", block_m=128, chunks="auto",
                      backend="auto", algorithm="one_shot", p_arg=2):
    """A GEMM's partial sums P [m, n] all-reduced into C [m, n] on every
    rank, `one_shot` (every rank sums every row) or `two_shot` (a
    reduce-scatter, then the sums to every rank)."""
    _check(world_size=world_size, m=m, n=n, dtype=dtype, block_m=block_m, chunks=chunks,
           backend=backend)
    if algorithm not in ("one_shot", "two_shot"):
        raise ValueError(f"algorithm must be 'one_shot' or 'two_shot', not {algorithm!r}")
    return (f"chunk.plan @matmul_all_reduce world_size({world_size}) {{\n"
            f"  chunk.buffer @P : !chunk.buffer<{m}x{n}x{dtype}> bind({p_arg})\n"
            f"  chunk.buffer @C : !chunk.buffer<{m}x{n}x{dtype}>\n"
            f"  chunk.produce @tiles @P dim(0) tile({block_m}) index(\"pid_m\")\n"
            f"  chunk.all_reduce @P into @C dim(0) chunks({chunks}) backend({backend}) "
            f"algorithm({algorithm})\n"
            "}\n")


def all_gather_attention(*, world_size, seq, kv_heads, head_dim, dtype="bf16", block_n=64,
                         chunks=1, backend="copy_engine", algorithm="direct", loop=None,
                         k_arg=1, v_arg=2, zigzag=False, layout="bshd", slots=None):
    """K and V [seq, kv_heads * head_dim] (the layout [S, H_KV, D], batch 1;
    `layout="bhsd"`: [kv_heads, seq, head_dim], PyTorch's [H_KV, S, D]
    with batch 1, gathered along dim(1))
    all-gathered along the sequence into an attention kernel whose loop
    over the keys and values reads blocks of `block_n` rows (the loop found
    in the kernel: the one that adds its variable to a range of `block_n`
    in K's and V's addresses), each chunk waited for before the blocks
    that read it, the rank's own chunks first, then the peers' in the
    order they arrive (`algorithm`: `direct`, or `ring`, whose blocks come
    through rank r + 1, from ranks r + 1, r + 2, ...: the direct order). K and V are arguments `k_arg` and
    `v_arg`. `loop`: the name of the kernel's loop variable, written into
    the plan (`loop("start_n")` for `synco.kernels.attention`), if the
    kernel's addresses should not be trusted to show it; `chunks="auto"`
    picks one chunk per rank either way (see `chunk-select-chunk-size`:
    the loop's consumers have no program tile). `zigzag`: rank r holds parts r and
    2W - 1 - r of the sequence cut in 2W (`blocks(zigzag)`, the
    load-balanced sharding of causal attention; `chunks` even, 2 for
    "auto"). `slots=2`: ring attention over a fixed pair of buffers (a
    ring, one chunk per rank, the copy engine or ldst, "bshd"): each rank holds its
    own block and two slots instead of the whole sequence, and the kernel
    runs once per ring step (`slots(2)`)."""
    _check(world_size=world_size, m=seq, dtype=dtype, block_m=block_n, chunks=chunks,
           backend=backend, kv_heads=kv_heads, head_dim=head_dim)
    if slots is not None and (slots != 2 or algorithm != "ring" or chunks not in (1, "auto")
                              or backend not in ("copy_engine", "ldst") or zigzag
                              or layout != "bshd"):
        raise ValueError("slots=2 (the only count built) takes algorithm='ring', chunks=1, "
                         "backend='copy_engine' or 'ldst', layout='bshd' and no zigzag; got "
                         f"slots={slots!r}, algorithm={algorithm!r}, chunks={chunks!r}, "
                         f"backend={backend!r}, layout={layout!r}, zigzag={zigzag!r}")
    if slots is not None:
        chunks = 1
    if zigzag and algorithm != "direct":
        raise ValueError("zigzag blocks are gathered with algorithm='direct' only")
    if zigzag and chunks != "auto" and (chunks % 2 != 0 or seq % (2 * world_size * block_n)):
        raise ValueError(f"zigzag needs an even chunk count (not {chunks}) and a sequence "
                         f"({seq}) of 2 x world_size parts of whole {block_n}-row blocks")
    if layout not in ("bshd", "bhsd"):
        raise ValueError(f"layout must be 'bshd' or 'bhsd', not {layout!r}")
    blocks = " blocks(zigzag)" if zigzag else ""
    walked = f' loop("{loop}")' if loop is not None else ""
    shape, dim = ((f"{seq}x{kv_heads * head_dim}", 0) if layout == "bshd"
                  else (f"{kv_heads}x{seq}x{head_dim}", 1))
    buffers = "".join(
        f"  chunk.buffer @{name} : !chunk.buffer<{shape}x{dtype}>{_bind(arg)}\n"
        for name, arg in (("K", k_arg), ("V", v_arg)))
    gathers = "".join(
        f"  chunk.all_gather @{name} dim({dim}) chunks({chunks}) backend({backend})"
        f"{_gather_algorithm(algorithm)}{blocks}{f' slots({slots})' if slots else ''}\n"
        f"  chunk.consume @{name} dim({dim}) tile({block_n}){walked if name == 'K' else ''}\n"
        for name in ("K", "V"))
    return f"chunk.plan @all_gather_attention world_size({world_size}) {{\n{buffers}{gathers}}}\n"


def ulysses_attention(*, world_size, seq, heads, kv_heads, head_dim, dtype="bf16", block_m=128,
                      block_n=64, chunks=1, backend="copy_engine", q_arg=0, k_arg=1, v_arg=2,
                      reshard_out=False, o_arg=3, out_chunks=1, out_backend="copy_engine",
                      reshard_in=True, loop=None, per_head=False):
    """Ulysses attention: Q, K and V sequence-sharded ([seq / W, heads *
    head_dim] on each rank, unbound plan buffers @Qs, @Ks, @Vs) re-sharded
    by all-to-alls into head-sharded @Qh, @Kh, @Vh ([seq, heads / W *
    head_dim]: every token, this rank's heads; arguments `q_arg`, `k_arg`,
    `v_arg`) inside an attention kernel whose programs take `block_m`
    queries (program_id 0) and whose loop over the keys and values reads
    blocks of `block_n`. Each query block waits for the chunk of Q it
    reads, the loop for each chunk of K and V; the rank's own sequence
    block first. `chunks` cut each rank's sequence block. `reshard_out`:
    the kernel's output @Oh ([seq, heads / W * head_dim], argument `o_arg`)
    goes back by tokens into @Os ([seq / W, heads * head_dim], unbound),
    each rank's rows (in `out_chunks` chunks of them) sent by the copy
    engine as soon as the query blocks that write them are done, or pulled
    by the destinations' copy programs (`out_backend` `ldst` or `tma`).
    `reshard_in=False` (with `reshard_out`): attention + all-to-all alone,
    Q, K and V already head-sharded in the kernel's arguments (not in the
    plan), only the output re-sharded. `loop`: the name of the kernel's
    loop variable over the keys and values, written into the plan if the
    kernel's addresses should not be trusted to show it (the passes find
    the loop otherwise, as in `all_gather_attention`). `per_head`: Q, K
    and V cut by heads instead (`split(1)`: a chunk per head of each
    rank's tokens, `chunks` 1), so that each program waits only for its
    head's chunks, each from its source rank."""
    _check(world_size=world_size, m=seq, dtype=dtype, block_m=block_m, chunks=chunks,
           backend=backend, heads=heads, kv_heads=kv_heads, head_dim=head_dim)
    for name, count in (("heads", heads), ("kv_heads", kv_heads)):
        if count % world_size != 0:
            raise ValueError(f"{name} ({count}) must be a multiple of world_size ({world_size}): "
                             "each rank takes heads / world_size of them")
    if not (reshard_in or reshard_out):
        raise ValueError("reshard_in=False needs reshard_out=True: the plan would move nothing")
    if per_head and chunks != 1:
        raise ValueError(f"per_head cuts Q, K and V by heads: chunks must be 1, not {chunks}")
    tokens = seq // world_size
    buffers, moves = "", ""
    inputs = (("Q", heads, q_arg), ("K", kv_heads, k_arg), ("V", kv_heads, v_arg))
    for name, count, arg in inputs if reshard_in else ():
        cols = count * head_dim
        cut = f"{count // world_size}) to(0) split(1" if per_head else f"{chunks}) to(0"
        buffers += (f"  chunk.buffer @{name}s : !chunk.buffer<{tokens}x{cols}x{dtype}>\n"
                    f"  chunk.buffer @{name}h : !chunk.buffer<{seq}x{cols // world_size}x{dtype}>"
                    f"{_bind(arg)}\n")
        moves += (f"  chunk.all_to_all @{name}s into @{name}h dim(1) chunks({cut}) "
                  f"backend({backend})\n")
    if out_backend not in BACKENDS or out_backend == "auto":
        raise ValueError(f"out_backend must be copy_engine, ldst or tma, not {out_backend!r}")
    if reshard_out and (tokens % (out_chunks * block_m) != 0):
        raise ValueError(f"out_chunks ({out_chunks}) must cut each rank's {tokens} tokens into "
                         f"whole query blocks of {block_m}")
    if reshard_out:
        cols = heads * head_dim
        buffers += (f"  chunk.buffer @Oh : !chunk.buffer<{seq}x{cols // world_size}x{dtype}>"
                    f"{_bind(o_arg)}\n"
                    f"  chunk.buffer @Os : !chunk.buffer<{tokens}x{cols}x{dtype}>\n")
        moves += (f"  chunk.produce @tiles @Oh dim(0) tile({block_m})\n"
                  f"  chunk.all_to_all @Oh into @Os dim(0) chunks({out_chunks}) to(1) "
                  f"backend({out_backend})\n")
    walked = f' loop("{loop}")' if loop is not None else ""
    consumes = (f"  chunk.consume @Qh dim(0) tile({block_m})\n"
                f"  chunk.consume @Kh dim(0) tile({block_n}){walked}\n"
                f"  chunk.consume @Vh dim(0) tile({block_n})\n") if reshard_in else ""
    name = "ulysses_attention" if reshard_in else "attention_all_to_all"
    return f"chunk.plan @{name} world_size({world_size}) {{\n{buffers}{moves}{consumes}}}\n"


def all_to_all_matmul(*, world_size, m, k, n, dtype="bf16", block_m=128, block_k=64, chunks=1,
                      backend="copy_engine", a_arg=0):
    """C[m, n] = A[m, k] @ B[k, n] with A re-sharded by an all-to-all: each
    rank holds @X [m * W, k / W] (every token of its share of A's columns:
    attention's head-sharded output) and multiplies its m tokens of all of
    them, A (argument `a_arg`), column block s from rank s. The kernel's
    loop over k (`synco.kernels.matmul_k_indexed`'s) is split by chunk of
    A's columns, the rank's own first, each waited for before its blocks.
    `chunks` cut each rank's column block."""
    # (Every rank's tokens m, as m * W split in W.)
    _check(world_size=world_size, m=m * world_size, dtype=dtype, block_m=block_m, chunks=chunks,
           backend=backend, k=k, n=n, block_k=block_k)
    if k % world_size != 0:
        raise ValueError(f"k ({k}) must be a multiple of world_size ({world_size})")
    return (f"chunk.plan @all_to_all_matmul world_size({world_size}) {{\n"
            f"  chunk.buffer @X : !chunk.buffer<{m * world_size}x{k // world_size}x{dtype}>\n"
            f"  chunk.buffer @A : !chunk.buffer<{m}x{k}x{dtype}>{_bind(a_arg)}\n"
            f"  chunk.all_to_all @X into @A dim(0) chunks({chunks}) to(1) backend({backend})\n"
            f"  chunk.consume @A dim(1) tile({block_k}) loop(\"k\")\n"
            "}\n")


def matmul_all_to_all(*, world_size, m, k, n, dtype="bf16", block_m=128, block_n=128,
                      chunks=1, backend="copy_engine", c_arg=2):
    """C[m, n] = A[m, k] @ B[k, n] on each rank (its m tokens, every one
    of n columns; C argument `c_arg`, produced by the kernel's tiles of
    `block_n` columns, index `pid_n`), re-sharded by an all-to-all into @Y
    [m * W, n / W] (every rank's tokens of this rank's columns, rank s's
    rows from rank s): each rank's columns, in `chunks` chunks of them,
    sent by the copy engine as soon as the tiles that write a chunk are
    done (`backend` `copy_engine`), or pulled by the destination's copy
    programs once the source's tiles have counted the chunk (`ldst`,
    `tma`)."""
    _check(world_size=world_size, m=m * world_size, dtype=dtype, block_m=block_m,
           chunks=chunks, backend=backend, k=k, n=n, block_n=block_n)
    if n % world_size != 0:
        raise ValueError(f"n ({n}) must be a multiple of world_size ({world_size})")
    if chunks != "auto" and (n // world_size) % (chunks * block_n) != 0:
        raise ValueError(f"chunks ({chunks}) must cut each rank's {n // world_size} columns into "
                         f"whole tiles of {block_n}")
    return (f"chunk.plan @matmul_all_to_all world_size({world_size}) {{\n"
            f"  chunk.buffer @C : !chunk.buffer<{m}x{n}x{dtype}>{_bind(c_arg)}\n"
            f"  chunk.buffer @Y : !chunk.buffer<{m * world_size}x{n // world_size}x{dtype}>\n"
            f"  chunk.produce @tiles @C dim(1) tile({block_n}) index(\"pid_n\")\n"
            f"  chunk.all_to_all @C into @Y dim(1) chunks({chunks}) to(0) backend({backend})\n"
            "}\n")


def _gather_algorithm(algorithm):
    """The all-gather's `algorithm(...)` clause (none for `direct`, the
    dialect's default, so that direct plans read as before)."""
    if algorithm not in GATHER_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {GATHER_ALGORITHMS}, not {algorithm!r}")
    return "" if algorithm == "direct" else f" algorithm({algorithm})"


def _bind(arg):
    if arg is None:
        return ""
    if isinstance(arg, bool) or not isinstance(arg, int) or arg < 0:
        raise ValueError(f"an argument index must be an int >= 0 or None, not {arg!r}")
    return f" bind({arg})"


def _check(*, world_size, m, dtype, block_m, chunks, backend, **extents):
    """Refuses, naming the argument, what no plan could say."""
    def positive_int(name, value):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, not {value!r}")

    positive_int("world_size", world_size)
    positive_int("m", m)
    positive_int("block_m", block_m)
    for name, value in extents.items():
        positive_int(name, value)
    if world_size > 1024:
        raise ValueError(f"world_size must be at most 1024 (a plan's limit), not {world_size}")
    if m % (world_size * block_m) != 0:
        raise ValueError(f"m ({m}) must split into whole tiles of block_m ({block_m}) rows "
                         f"on each of the {world_size} ranks")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
    if chunks != "auto":
        positive_int("chunks", chunks)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
