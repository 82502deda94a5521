// All-gather of X along M (the tokens) across 2 GPUs, fused into
// linear_gelu_kernel: Y[M, N] = gelu(X[M, K] @ W[K, N] + bias).
//
// Rank r holds rows [r * 4096, (r + 1) * 4096) of X (sequence parallel);
// every rank needs all 8192 rows for its own columns of W (tensor
// parallel). The plan sends each rank's rows to the other in 4 chunks of
// 1024 rows by the copy engine; a tile of BLOCK_M = 128 rows of Y waits
// only for the chunk that holds its rows. Y tells the chunk-size cost
// model the GEMM's N.
chunk.plan @ag_linear_gelu world_size(2) kernel(@linear_gelu_kernel) {
  chunk.buffer @X : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.buffer @Y : !chunk.buffer<8192x7168xbf16> bind(3)
  chunk.all_gather @X dim(0) chunks(4) backend(copy_engine)
  chunk.consume @X dim(0) tile(128)
}
