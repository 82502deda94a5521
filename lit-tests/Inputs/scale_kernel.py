"""A kernel with a scalar argument of each kind Triton kernels take: an
fp32 and an fp16 factor, an i64 count and an i1 switch
(Triton/scalar-params.test)."""

import triton
import triton.language as tl

@triton.jit
def scale_kernel(x_ptr, y_ptr, alpha, beta, n, flag, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = x * alpha + beta
    if flag:
        y = -y
    tl.store(y_ptr + offs, y, mask=offs < n)
