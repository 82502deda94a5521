// GEMM + reduce-scatter on 2 ranks (a row-parallel linear layer): each
// rank's kernel computes a partial P = A_local @ B_local, and rank r ends
// with rows [r * 4096, (r + 1) * 4096) of the sum of both partials in C.
//
// The kernel's output argument (c_ptr, argument 2) is the partial; C is not
// one of the kernel's arguments, so chunk-bind-kernel adds it to the fused
// kernel as synco_buffer_C. Tiles of the other rank's rows run first, push
// their partial into its owner's P and count per chunk; tiles of the rank's
// own rows wait for their chunk and add the peer's partial in their epilogue
// (chunk-fuse-reductions). With backend(copy_engine) the tiles store their
// partial locally and the host's side stream copies each finished chunk
// into the owner's P_staging (a buffer chunk-expand-collectives declares).
chunk.plan @gemm_rs world_size(2) {
  chunk.buffer @P : !chunk.buffer<8192x4096xbf16> bind(2)
  chunk.buffer @C : !chunk.buffer<4096x4096xbf16>
  chunk.produce @tiles @P dim(0) tile(128) index("pid_m")
  chunk.reduce_scatter @P into @C dim(0) chunks(4) backend(ldst)
}
