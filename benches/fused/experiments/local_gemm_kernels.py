"""Candidate local GEMMs for the local-GEMM sweep (local_gemm_sweep.py):
the same C[M, N] = A[M, K] @ B[K, N] (bf16, fp32 accumulation, row-major,
M, N, K multiples of the blocks) as examples/ag_gemm/matmul.py, with A and B
(and optionally C) moved by the Hopper tensor memory accelerator (TMA)
through device-side tensor descriptors instead of pointer tensors.

* `grouped_tma`: one program per C tile, GROUP_M swizzle (as
  `matmul_kernel_grouped`), A and B through descriptors, C through pointers
  (`C_DESC=True`: through a descriptor too).
* `persistent_tma`: one program per SM looping over the tiles (as
  `matmul_kernel_persistent`), descriptors made once per program; the tile
  loop is flattened into the K loop so the pipeliner overlaps one tile's
  epilogue with the next tile's loads; `WARP_SPEC` asks Triton for
  automatic warp specialisation of that loop.
"""

import triton
import triton.language as tl


def compile_sm90(fn, signature, constexprs, aligned, num_warps, num_stages):
    """`fn` compiled for sm_90 without a GPU, specialised as Triton's
    launcher would: `signature` types the runtime arguments, `constexprs`
    gives the others' values, and the arguments named in `aligned` are
    multiples of 16 (16-byte aligned pointers, sizes), which is what lets
    Triton vectorise and pipeline the loads. Returns the compiled kernel
    (`.asm["ttgir"]`, `.asm["ptx"]`, ...)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource
    types = dict(signature, **{name: "constexpr" for name in constexprs})
    index = {name: (i, ) for i, name in enumerate(fn.arg_names)}
    src = ASTSource(fn=fn, signature={name: types[name] for name in fn.arg_names},
                    constexprs={index[name]: value for name, value in constexprs.items()},
                    attrs={index[name]: [["tt.divisibility", 16]] for name in aligned})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages})


@triton.jit
def _tile_of(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _ab_descriptors(a_ptr, b_ptr, M, N, K, stride_am, stride_bk,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    return a_desc, b_desc


@triton.jit
def _tile(a_desc, b_desc, off_m, off_n, K,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One C tile: the K loop over TMA loads of A and B, in bf16."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc = tl.dot(a, b, acc)
    return acc.to(tl.bfloat16)


@triton.jit
def grouped_tma(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, C_DESC: tl.constexpr):
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_desc, b_desc = _ab_descriptors(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    c = _tile(a_desc, b_desc, off_m, off_n, K, BLOCK_M, BLOCK_N, BLOCK_K)
    if C_DESC:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
        c_desc.store([off_m, off_n], c)
    else:
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], c)


@triton.jit
def persistent_tma(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, WARP_SPEC: tl.constexpr):
    a_desc, b_desc = _ab_descriptors(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True,
                            warp_specialize=WARP_SPEC):
        pid_m, pid_n = _tile_of(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        c_desc.store([off_m, off_n], _tile(a_desc, b_desc, off_m, off_n, K, BLOCK_M, BLOCK_N, BLOCK_K))
