"""Local Triton kernels the operators of `synco.ops` fuse by default, as
people write them for one GPU (row-major operands, M, N, K multiples of
the blocks). Any kernel with the same arguments can replace them.

* `matmul`: C[M, N] = A[M, K] @ B[K, N], a 1D grid with the GROUP_M
  swizzle of Triton's matmul tutorial.
* `matmul_k_indexed`: the same product, its loop over K addressing A and
  B by `k` (instead of advancing pointers): a loop a plan can split by
  chunk of A's columns.
* `gate_up_silu`: the gate and up projections of a LLaMA-style MLP in one
  GEMM, with SiLU(A @ Wg) * (A @ Wu) in its epilogue.
* `attention`: a flash-attention forward kernel (the one of
  `examples/attention/flash_attn.py`): Q, O [Z, H, N_CTX_Q, HEAD_DIM], K, V
  [Z, H_KV, N_CTX_KV, HEAD_DIM] by their strides, grouped-query heads, the
  queries the last N_CTX_Q positions when CAUSAL.
* `attention_zigzag`: the same kernel for the load-balanced sharding of
  causal attention: rank RANK of W = N_CTX_KV / N_CTX_Q holds parts RANK
  and 2W - 1 - RANK of the sequence cut in 2W, its queries those two
  parts in that order.
"""

import triton
import triton.language as tl


@triton.jit
def _tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
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
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
           GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def matmul_k_indexed(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def gate_up_silu(a_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K, stride_am, stride_wk, stride_hm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    w_offs = offs_k[:, None] * stride_wk + offs_n[None, :]
    gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        gate = tl.dot(a, tl.load(wg_ptr + w_offs), gate)
        up = tl.dot(a, tl.load(wu_ptr + w_offs), up)
        a_ptrs += BLOCK_K
        w_offs += BLOCK_K * stride_wk
    h = gate * tl.sigmoid(gate) * up
    h_ptrs = h_ptr + offs_m[:, None] * stride_hm + offs_n[None, :]
    tl.store(h_ptrs, h.to(h_ptr.dtype.element_ty))


@triton.jit
def _attention_rows(Q, K, V, Out, sm_scale,
                    stride_qz, stride_qh, stride_qm,
                    stride_kz, stride_kh, stride_kn,
                    stride_vz, stride_vh, stride_vn,
                    stride_oz, stride_oh, stride_om,
                    H, H_KV, past, hi,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr):
    """The program's BLOCK_M query rows (query row i at sequence position
    i + past) against keys and values 0 .. hi."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    off_h_kv = off_h // (H // H_KV)
    q_base = Q + off_z * stride_qz + off_h * stride_qh
    k_base = K + off_z * stride_kz + off_h_kv * stride_kh
    v_base = V + off_z * stride_vz + off_h_kv * stride_vh
    o_base = Out + off_z * stride_oz + off_h * stride_oh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_base + (start_n + offs_n)[:, None] * stride_kn + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k))
        if CAUSAL:
            visible = (offs_m[:, None] + past) >= (start_n + offs_n[None, :])
            qk = tl.where(visible, qk * qk_scale, -1.0e6)
        else:
            qk = qk * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty))


@triton.jit
def attention(Q, K, V, Out, sm_scale,
              stride_qz, stride_qh, stride_qm,
              stride_kz, stride_kh, stride_kn,
              stride_vz, stride_vh, stride_vn,
              stride_oz, stride_oh, stride_om,
              H, H_KV, N_CTX_Q, N_CTX_KV,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              CAUSAL: tl.constexpr):
    # The queries are the last N_CTX_Q positions of the N_CTX_KV.
    past = N_CTX_KV - N_CTX_Q
    if CAUSAL:
        hi = past + (tl.program_id(0) + 1) * BLOCK_M
    else:
        hi = N_CTX_KV
    _attention_rows(Q, K, V, Out, sm_scale, stride_qz, stride_qh, stride_qm,
                    stride_kz, stride_kh, stride_kn, stride_vz, stride_vh, stride_vn,
                    stride_oz, stride_oh, stride_om, H, H_KV, past, hi,
                    HEAD_DIM, BLOCK_M, BLOCK_N, CAUSAL)


@triton.jit
def attention_zigzag(Q, K, V, Out, sm_scale,
                     stride_qz, stride_qh, stride_qm,
                     stride_kz, stride_kh, stride_kn,
                     stride_vz, stride_vh, stride_vn,
                     stride_oz, stride_oh, stride_om,
                     H, H_KV, N_CTX_Q, N_CTX_KV, RANK,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr):
    # Rank RANK of W = N_CTX_KV / N_CTX_Q holds the sequence in 2W parts
    # of N_CTX_Q / 2: its queries' first half is part RANK, the second
    # part 2W - 1 - RANK.
    half = N_CTX_Q // 2
    world = N_CTX_KV // N_CTX_Q
    second = tl.program_id(0) * BLOCK_M >= half
    past = tl.where(second, (2 * world - 2 - RANK) * half, RANK * half)
    if CAUSAL:
        hi = past + (tl.program_id(0) + 1) * BLOCK_M
    else:
        hi = N_CTX_KV
    _attention_rows(Q, K, V, Out, sm_scale, stride_qz, stride_qh, stride_qm,
                    stride_kz, stride_kh, stride_kn, stride_vz, stride_vh, stride_vn,
                    stride_oz, stride_oh, stride_om, H, H_KV, past, hi,
                    HEAD_DIM, BLOCK_M, BLOCK_N, CAUSAL)
