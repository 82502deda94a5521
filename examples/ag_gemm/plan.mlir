// All-gather of A along M across 2 GPUs, fused into a local GEMM
// C[M, N_local] = A[M, K] x B[K, N_local]: rank r owns rows
// [r * M/2, (r + 1) * M/2) of A; the plan gathers the rest in 4 chunks per
// rank by the copy engine, and GEMM tiles of BLOCK_M = 128 rows wait only for
// the chunk holding their rows.
chunk.plan @ag_gemm world_size(2) kernel(@matmul_kernel) {
  chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(4) backend(copy_engine)
  chunk.consume @A dim(0) tile(128) index("pid_m")
}
