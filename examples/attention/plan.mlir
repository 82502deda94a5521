// Context-parallel attention, all-gather of K and V: each of 2 ranks holds
// 4096 of the sequence's 8192 tokens of K and V ([tokens, 8 heads x 128],
// the layout [S, H_KV, D] with batch 1), and its attention kernel's loop
// over the keys and values reads the whole sequence. The copy engine
// pushes each rank's rows to the peer in 4 chunks per rank; the loop over
// `start_n` is split by chunk, reads the rank's own chunks first, then the
// peer's as they arrive, and waits for each chunk before its blocks. V's
// loop is found from the kernel (the one that walks V in blocks of 64).
chunk.plan @cp_attention world_size(2) kernel(@attn_fwd) {
  chunk.buffer @K : !chunk.buffer<8192x1024xbf16> bind(1)
  chunk.buffer @V : !chunk.buffer<8192x1024xbf16> bind(2)
  chunk.all_gather @K dim(0) chunks(4) backend(copy_engine)
  chunk.all_gather @V dim(0) chunks(4) backend(copy_engine)
  chunk.consume @K dim(0) tile(64) loop("start_n")
  chunk.consume @V dim(0) tile(64)
}
