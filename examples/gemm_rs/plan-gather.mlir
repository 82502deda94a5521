// GEMM + reduce-scatter computed from gathered operands, on 2 ranks: rank r
// holds A_r [8192, 1024] and B_r [1024, 8192] and ends with rows
// [r * 4096, (r + 1) * 4096) of sum_s A_s @ B_s in its C. Instead of sending
// partials (4096 x 8192 per peer), every rank sends each peer the peer's
// rows of its A (4096 x 1024) and its B: fewer bytes when K_local is small,
// and they exist when the launch starts, so they move while the tiles
// multiply the rank's own operands.
//
// The kernel is matmul_kernel_sources (examples/ag_gemm/matmul.py) with
// 128 x 256 tiles, M = 4096, K = 1024, SOURCES = 2: C = sum_s Ag[s M : (s+1) M] @ Bg[s K :
// (s+1) K]. The all-to-all lands rank s's rows of rank r in block s of r's
// Ag (its own block by a local copy); the all-gather lands rank s's B in
// block s of Bg, cut into column chunks. Each tile's loop over `src` reads
// its own block first, then waits for the chunk of rank r+1's A rows and
// the chunk of its B columns it reads (chunk-reorder-tiles,
// chunk-insert-waits); the copy engine pushes the chunks.
//
// chunks(auto) (chunk-select-chunk-size) follows the kernel's tile order:
// with GROUP_M = 32 (every row tile of a source block) tiles go column
// block by column block, so every wave of tiles reads all of the peer's A
// rows (1 chunk) and B's column chunks arrive in the order the waves need
// them: 1024 tiles in waves of 132 programs, 8 chunks.
chunk.plan @gemm_rs_gather world_size(2) {
  chunk.buffer @A : !chunk.buffer<8192x1024xbf16>
  chunk.buffer @Ag : !chunk.buffer<8192x1024xbf16> bind(0)
  chunk.buffer @Bg : !chunk.buffer<2048x8192xbf16> bind(1)
  chunk.all_to_all @A into @Ag dim(0) chunks(auto)
  chunk.all_gather @Bg dim(0) chunks(auto) split(1)
  chunk.consume @Ag dim(0) tile(128) index("pid_m") source("src")
  chunk.consume @Bg dim(1) tile(256) index("pid_n") source("src")
}
