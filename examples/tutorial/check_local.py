"""Optional: check linear_gelu_kernel alone, on one GPU, against PyTorch.

Needs a CUDA GPU, PyTorch and Triton 3.6 (not in Synco's .venv, which has
no PyTorch): `python3 examples/tutorial/check_local.py`. It runs the kernel
through Triton's own JIT, as written, before anything is fused: at the
tutorial's shape (M = 8192 gathered rows, K = 4096, N = 7168) and at a
ragged one that exercises the masks.
"""

import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_gelu import linear_gelu_kernel  # noqa: E402


def run(M, N, K, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64):
    torch.manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / K**0.5
    bias = torch.randn(N, device="cuda", dtype=torch.float32)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, BLOCK_M))
    linear_gelu_kernel[grid](x, w, bias, y, M, N, K,
                             x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
                             BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=8, num_stages=4)
    ref = torch.nn.functional.gelu(x.float() @ w.float() + bias, approximate="tanh")
    err = (y.float() - ref).abs().max().item()
    ok = torch.allclose(y.float(), ref, atol=3e-2, rtol=2e-2)
    print(f"M={M} N={N} K={K}: max abs error {err:.4f} -> {'ok' if ok else 'MISMATCH'}")
    return ok


if __name__ == "__main__":
    results = [run(8192, 7168, 4096), run(1000, 1000, 1000)]
    sys.exit(0 if all(results) else 1)
