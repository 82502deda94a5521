// All-gather of A along M across 2 GPUs, fused into a local GEMM
// C[M, N] = A[M, K] x B[K, N] (any of the kernels of matmul.py: the plan
// names no kernel, so it fuses into the module's only tt.func).
//
// Rank r owns rows [r * 4096, (r + 1) * 4096) of A. The plan gathers the
// other rank's rows in 4 chunks by the copy engine; GEMM tiles of
// BLOCK_M = 128 rows wait only for the chunk holding their rows. The C
// buffer tells the chunk-size cost model the GEMM's N.
chunk.plan @ag_gemm world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.buffer @C : !chunk.buffer<8192x7168xbf16> bind(2)
  chunk.all_gather @A dim(0) chunks(4) backend(copy_engine)
  chunk.consume @A dim(0) tile(128) index("pid_m")
}
