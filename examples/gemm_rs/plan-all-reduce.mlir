// GEMM + all-reduce on 2 ranks, one-shot (decode-size M): every rank ends
// with the whole sum of both partials in C. Every tile pushes its partial
// into the peer's P and adds the peer's (chunk-fuse-reductions), in the
// kernel's own order on both ranks: chunks of one row of tiles (128 rows),
// and a kernel that runs a row of tiles together (GROUP_M = 1), so that the
// tiles that wait for a chunk are all resident at once.
chunk.plan @gemm_ar world_size(2) {
  chunk.buffer @P : !chunk.buffer<1024x4096xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<1024x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128) index("pid_m")
  chunk.all_reduce @P into @C dim(0) chunks(4) backend(ldst) algorithm(one_shot)
}
