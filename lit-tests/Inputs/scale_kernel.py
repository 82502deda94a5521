"""A kernel with scalar arguments of the kinds Triton kernels take: an fp32
factor, an fp16 and a bf16 term, an i64 count and an i1 switch
(Triton/scalar-params.test, Python/package.py; run on the GPU by
crates/synco-runtime/examples/scalar_args.rs):
y[i] = +-(x[i] * alpha + beta + gamma) for i < n."""

import triton
import triton.language as tl

@triton.jit
def scale_kernel(x_ptr, y_ptr, alpha, beta, gamma, n, flag, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = x * alpha + beta.to(tl.float32) + gamma.to(tl.float32)
    if flag:
        y = -y
    tl.store(y_ptr + offs, y, mask=offs < n)
