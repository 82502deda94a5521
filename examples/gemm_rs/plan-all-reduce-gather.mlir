// GEMM + all-reduce computed from gathered operands, on 2 ranks: rank r
// holds A_r [8192, 1024] and B_r [1024, 8192] and ends with all of
// sum_s A_s @ B_s in its C [8192, 8192]. Each rank computes its own rows of
// the sum from gathered operands, exactly as the reduce-scatter of
// plan-gather.mlir (the peers' rows of A and their B arrive while the
// tiles multiply the rank's own), then sends its rows to every peer: per
// direction A's rows, B and C's rows (24 + 64 MiB here) instead of the
// two-shot all-reduce's partial rows twice (128 MiB).
//
// The kernel (matmul_kernel_sources, M = 4096: the rank's rows) stores
// into C; chunk-fuse-gathers moves those stores to the rank's block (rows
// r * 4096 on) and has the tiles count each column chunk of it, which the
// copy engine pushes into the peer's C once complete (a 2D copy). The
// tiles go column block by column block (GROUP_M = every row tile), so
// the chunks finish one after another while the kernel runs;
// chunks(auto) (chunk-select-chunk-size) weighs the copies' cost against
// what is left to send after the kernel: 4 chunks here.
chunk.plan @gemm_ar_gather world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x1024xbf16>
  chunk.buffer @Ag : !chunk.buffer<8192x1024xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<2048x8192xbf16> bind(1)
  chunk.buffer @C : !chunk.buffer<8192x8192xbf16> bind(2)
  chunk.all_to_all @A into @Ag dim(0) chunks(auto)
  chunk.all_gather @Bg dim(0) chunks(auto) split(1)
  chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile(256) index("pid_n") source("src")
  chunk.produce @tiles @C dim(1) tile(256) index("pid_n")
  chunk.all_gather @C dim(0) chunks(auto) split(1)
}
