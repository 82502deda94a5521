// chunk-expand-collectives on `all_gather ... algorithm(ring) slots(2)`: the
// ring's transfers are those of `algorithm(ring)` (each block from the
// neighbour r + 1, after it arrived there), and the buffer records that a
// rank keeps its gathered blocks in two slots (`chunk.slots = 2`), which
// the later passes read. Every other use of slots(n) is refused with its
// reason: a count other than 2, a direct gather, more than one chunk per
// rank, tma, another dimension or a split. (The op's verifier
// refuses a ring of zigzag blocks and blocks that do not divide.)
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-expand-collectives)' | FileCheck %s

// CHECK-LABEL: chunk.plan @slots4 world_size(4)
// CHECK-NEXT:  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1) {chunk.slots = 2 : i64}
// CHECK-NOT:   chunk.all_gather
// CHECK:       chunk.transfer @K_s0_c0 local copy_engine
// CHECK-NEXT:  chunk.transfer @K_s1_c0 push copy_engine from <@K[(d0) -> (((d0 + 1) mod 4) * 256, 0)] [256, 256]> on (d0) -> ((d0 + 1) mod 4) {{.*}} order(1)
// CHECK-NEXT:  chunk.transfer @K_s2_c0 push copy_engine {{.*}} after [@K_s1_c0]
// CHECK-NEXT:  chunk.transfer @K_s3_c0 push copy_engine {{.*}} after [@K_s2_c0]
chunk.plan @slots4 world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  chunk.all_gather @K dim(0) chunks(1) backend(copy_engine) algorithm(ring) slots(2)
  chunk.consume @K dim(0) tile(64)
}

// -----

// The default backend, the copy engine, takes slots too.
// CHECK-LABEL: chunk.plan @slots_default world_size(4)
// CHECK-NEXT:  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1) {chunk.slots = 2 : i64}
// CHECK:       chunk.transfer @K_s1_c0 push copy_engine
chunk.plan @slots_default world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  chunk.all_gather @K dim(0) chunks(1) algorithm(ring) slots(2)
  chunk.consume @K dim(0) tile(64)
}

// -----

// On ldst, the destination's copy programs pull each block.
// CHECK-LABEL: chunk.plan @slots_ldst world_size(4)
// CHECK-NEXT:  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1) {chunk.slots = 2 : i64}
// CHECK:       chunk.transfer @K_s1_c0 pull ldst
chunk.plan @slots_ldst world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  chunk.all_gather @K dim(0) chunks(1) backend(ldst) algorithm(ring) slots(2)
  chunk.consume @K dim(0) tile(64)
}

// -----

chunk.plan @three world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  // expected-error @below {{chunk-expand-collectives: slots(3) is not built: a ring's blocks rotate through slots(2)}}
  chunk.all_gather @K dim(0) chunks(1) backend(copy_engine) algorithm(ring) slots(3)
}

// -----

chunk.plan @direct world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  // expected-error @below {{chunk-expand-collectives: slots(2) needs a ring all_gather (algorithm(ring)): its blocks arrive one per step}}
  chunk.all_gather @K dim(0) chunks(1) backend(copy_engine) slots(2)
}

// -----

chunk.plan @chunks world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  // expected-error @below {{chunk-expand-collectives: slots(2) needs chunks(1): each ring step reads one whole block}}
  chunk.all_gather @K dim(0) chunks(2) backend(copy_engine) algorithm(ring) slots(2)
}

// -----

chunk.plan @tma world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  // expected-error @below {{chunk-expand-collectives: slots(2) needs backend(copy_engine) or backend(ldst): each launch of the kernel has the copy engine push, or its copy programs pull, the next step's block}}
  chunk.all_gather @K dim(0) chunks(1) backend(tma) algorithm(ring) slots(2)
}

// -----

chunk.plan @dim1 world_size(4) {
  chunk.buffer @K : !chunk.buffer<2x1024x64xbf16> bind(1)
  // expected-error @below {{chunk-expand-collectives: slots(2) needs dim(0) without split: a block moved into a slot keeps the kernel's strides only as whole rows of dimension 0}}
  chunk.all_gather @K dim(1) chunks(1) backend(copy_engine) algorithm(ring) slots(2)
}

// -----

chunk.plan @split world_size(4) {
  chunk.buffer @K : !chunk.buffer<1024x256xbf16> bind(1)
  // expected-error @below {{chunk-expand-collectives: slots(2) needs dim(0) without split}}
  chunk.all_gather @K dim(0) chunks(1) split(1) backend(copy_engine) algorithm(ring) slots(2)
}

