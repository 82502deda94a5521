"""The tutorial's kernel: Y = gelu(X @ W + bias), an MLP up-projection.

Written for one GPU, the way Triton kernels usually are: a 2D grid of
output tiles, offsets from `tl.program_id` and `tl.arange`, pointer
strides, masked loads and stores, and the epilogue (bias, then the tanh
approximation of GELU) applied to the fp32 accumulator before the one
store. Nothing in it knows about other GPUs: Synco fuses the all-gather
of X into it (see README.md and plan.mlir in this folder).

    X [M, K] bf16, W [K, N] bf16, bias [N] fp32, Y [M, N] bf16

Grid: (cdiv(N, BLOCK_N), cdiv(M, BLOCK_M)). The column tile is
program_id(0) and the row tile program_id(1), so a row of output tiles
(which all read the same rows of X) is dispatched together.
"""

import triton
import triton.language as tl


@triton.jit
def linear_gelu_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wk, stride_wn, stride_ym, stride_yn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rows[:, None] * stride_xm + ks[None, :] * stride_xk
    w_ptrs = w_ptr + ks[:, None] * stride_wk + cols[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    # Epilogue: bias, then GELU (tanh form; 0.5 * (1 + tanh(z)) == sigmoid(2 z)).
    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
    acc = acc + bias[None, :]
    z = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
    y = acc * tl.sigmoid(2.0 * z)

    y_ptrs = y_ptr + rows[:, None] * stride_ym + cols[None, :] * stride_yn
    tl.store(y_ptrs, y.to(tl.bfloat16), mask=(rows[:, None] < M) & (cols[None, :] < N))
