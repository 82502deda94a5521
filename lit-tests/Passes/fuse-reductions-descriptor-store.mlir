// chunk-fuse-reductions on a kernel that stores its tiles of the partial
// @P through a tensor descriptor it makes (`tl.make_tensor_descriptor(P,
// ...).store([row, 0], tile)`, the form of Triton's descriptor matmuls):
// the store is rewritten as the same store through pointers, `P + (row +
// i) * 64 + j` in i64, masked to the descriptor's extents (rows 0..1024,
// columns 0..64, as a bulk store clips its box), and the reduction then
// redirects it as any pointer store (fuse-reductions.mlir: pushed into the
// owner's @P, or summed into @C under the same mask). A host descriptor
// is stored through its buffer's synco_buffer_<name> argument. A store
// through a descriptor whose address the kernel lacks, or whose last
// stride is not the constant 1, is refused.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-fuse-reductions)' \
// RUN:   | FileCheck %s
//
// The input is fuse-reductions.mlir's first case with the tile stored
// through a descriptor instead of pointers.

// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK-NOT:  tt.descriptor_store
// CHECK:      %[[DESC:.*]] = "tt.make_tensor_descriptor"(%arg0, %[[ROWS:.*]], %[[COLS:.*]], %[[STRIDE:.*]], %{{.*}})
// CHECK:      %[[TILE:.*]] = arith.truncf
// The rows from the store's first coordinate, the columns from its second.
// CHECK-NEXT: %[[R0:.*]] = "tt.splat"(%[[ROW:.*]]) : (i32) -> tensor<128xi32>
// CHECK-NEXT: %[[RR:.*]] = "tt.make_range"() {end = 128 : i32, start = 0 : i32}
// CHECK-NEXT: %[[RA:.*]] = arith.addi %[[R0]], %[[RR]] : tensor<128xi32>
// CHECK-NEXT: %[[RE:.*]] = "tt.expand_dims"(%[[RA]]) {axis = 1 : i32} : (tensor<128xi32>) -> tensor<128x1xi32>
// CHECK-NEXT: %[[C0:.*]] = "tt.splat"(%{{.*}}) : (i32) -> tensor<64xi32>
// CHECK-NEXT: %[[CR:.*]] = "tt.make_range"() {end = 64 : i32, start = 0 : i32}
// CHECK-NEXT: %[[CA:.*]] = arith.addi %[[C0]], %[[CR]] : tensor<64xi32>
// CHECK-NEXT: %[[CE:.*]] = "tt.expand_dims"(%[[CA]]) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
// Rows times the descriptor's stride, plus columns, in i64.
// CHECK-NEXT: %[[R64:.*]] = arith.extsi %[[RE]] : tensor<128x1xi32> to tensor<128x1xi64>
// CHECK-NEXT: %[[S:.*]] = "tt.splat"(%[[STRIDE]]) : (i64) -> tensor<128x1xi64>
// CHECK-NEXT: %[[RO:.*]] = arith.muli %[[R64]], %[[S]] : tensor<128x1xi64>
// CHECK-NEXT: %[[RB:.*]] = "tt.broadcast"(%[[RO]]) : (tensor<128x1xi64>) -> tensor<128x64xi64>
// CHECK-NEXT: %[[C64:.*]] = arith.extsi %[[CE]] : tensor<1x64xi32> to tensor<1x64xi64>
// CHECK-NEXT: %[[CB:.*]] = "tt.broadcast"(%[[C64]]) : (tensor<1x64xi64>) -> tensor<128x64xi64>
// CHECK-NEXT: %[[OFF:.*]] = arith.addi %[[RB]], %[[CB]] : tensor<128x64xi64>
// CHECK-NEXT: %[[BASE:.*]] = "tt.splat"(%arg0) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
// CHECK-NEXT: %[[PTRS:.*]] = "tt.addptr"(%[[BASE]], %[[OFF]])
// The mask: 0 <= row < the descriptor's rows, 0 <= column < its columns.
// CHECK:      arith.cmpi sge, %[[RE]], %{{.*}} : tensor<128x1xi32>
// CHECK:      %[[RS:.*]] = "tt.splat"(%[[ROWS]]) : (i32) -> tensor<128x1xi32>
// CHECK-NEXT: arith.cmpi slt, %[[RE]], %[[RS]] : tensor<128x1xi32>
// CHECK:      arith.cmpi sge, %[[CE]], %{{.*}} : tensor<1x64xi32>
// CHECK:      %[[CS:.*]] = "tt.splat"(%[[COLS]]) : (i32) -> tensor<1x64xi32>
// CHECK-NEXT: arith.cmpi slt, %[[CE]], %[[CS]] : tensor<1x64xi32>
// CHECK:      %[[MASK:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<128x64xi1>
// Own rows: the peers' partials loaded under the mask, the sum stored
// into @C under it.
// CHECK:      scf.if
// CHECK:        chunk.wait
// CHECK:        %[[PEER:.*]] = arith.andi %[[MASK]], %{{.*}} : tensor<128x64xi1>
// CHECK:        "tt.load"(%{{.*}}, %[[PEER]], %{{.*}})
// CHECK:        "tt.store"(%{{.*}}, %{{.*}}, %[[MASK]])
// Other rows: the partial pushed into the source's rows of the owner's @P
// under the mask.
// CHECK:      } else {
// CHECK:        %[[SHIFTED:.*]] = "tt.addptr"(%[[PTRS]], %{{.*}})
// CHECK-NEXT:   %[[REMOTE:.*]] = chunk.peer_ptr %[[SHIFTED]]
// CHECK-NEXT:   "tt.store"(%[[REMOTE]], %[[TILE]], %[[MASK]])
// CHECK:        chunk.arrive

module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{peer partial(s) per tile after 2 arrivals per chunk (counters 0..4, 2 tiles per chunk)}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
    %c0_i32 = arith.constant 0 : i32
    %rows = arith.constant 1024 : i32
    %cols = arith.constant 64 : i32
    %stride = arith.constant 64 : i64
    %unit = arith.constant 1 : i64
    %desc = "tt.make_tensor_descriptor"(%p, %rows, %cols, %stride, %unit) <{padding = 1 : i32}> : (!tt.ptr<bf16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<128x64xbf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.descriptor_store"(%desc, %v, %row, %c0_i32) : (!tt.tensordesc<tensor<128x64xbf16>>, tensor<128x64xbf16>, i32, i32) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// A host descriptor (`!tt.tensordesc`, argument 0, bound to @P): its
// address is the kernel's synco_buffer_P (chunk-bind-kernel adds it for a
// buffer bound to a descriptor), its extents and row stride the arguments
// Triton passes after it; its last stride is 1 for every view the runtime
// encodes.
// CHECK-LABEL: "tt.func"() {{.*}}sym_name = "k"
// CHECK:       ^bb0(%[[DESC:.*]]: !tt.tensordesc<tensor<128x64xbf16>>, %[[E0:.*]]: i32, %[[E1:.*]]: i32, %[[S0:.*]]: i64, %{{.*}}: i64, {{.*}}, %[[BUFFER_P:.*]]: !tt.ptr<bf16>):
// CHECK-NOT:   tt.descriptor_store
// CHECK:       "tt.splat"(%[[S0]]) : (i64) -> tensor<128x1xi64>
// CHECK:       %[[BASE:.*]] = "tt.splat"(%[[BUFFER_P]]) : (!tt.ptr<bf16>) -> tensor<128x64x!tt.ptr<bf16>>
// CHECK-NEXT:  %[[PTRS:.*]] = "tt.addptr"(%[[BASE]], %{{.*}})
// CHECK:       "tt.splat"(%[[E0]]) : (i32) -> tensor<128x1xi32>
// CHECK:       "tt.splat"(%[[E1]]) : (i32) -> tensor<1x64xi32>
// CHECK:       %[[MASK:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<128x64xi1>
// CHECK:       } else {
// CHECK:         %[[SHIFTED:.*]] = "tt.addptr"(%[[PTRS]], %{{.*}})
// CHECK-NEXT:    %[[REMOTE:.*]] = chunk.peer_ptr %[[SHIFTED]]
// CHECK-NEXT:    "tt.store"(%[[REMOTE]], %{{.*}}, %[[MASK]])
// CHECK-NOT:   tt.descriptor_store
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-remark @below {{peer partial(s) per tile after 2 arrivals per chunk (counters 0..4, 2 tiles per chunk)}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<128x64xbf16>>, i32, i32, i64, i64, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%desc: !tt.tensordesc<tensor<128x64xbf16>>, %extent0: i32, %extent1: i32, %stride0: i64, %stride1: i64, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>, %buffer_P: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
    %c0_i32 = arith.constant 0 : i32
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.descriptor_store"(%desc, %v, %row, %c0_i32) : (!tt.tensordesc<tensor<128x64xbf16>>, tensor<128x64xbf16>, i32, i32) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C", "P"], chunk.abi_first_arg = 6 : i32} : () -> ()
}

// -----

// A last stride other than 1 (which a bulk store cannot have either).
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%p: !tt.ptr<bf16>, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
    %c0_i32 = arith.constant 0 : i32
    %rows = arith.constant 1024 : i32
    %cols = arith.constant 64 : i32
    %stride = arith.constant 64 : i64
    %unit = arith.constant 2 : i64
    %desc = "tt.make_tensor_descriptor"(%p, %rows, %cols, %stride, %unit) <{padding = 1 : i32}> : (!tt.ptr<bf16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<128x64xbf16>>
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    // expected-error @below {{whose last stride is not the constant 1}}
    "tt.descriptor_store"(%desc, %v, %row, %c0_i32) : (!tt.tensordesc<tensor<128x64xbf16>>, tensor<128x64xbf16>, i32, i32) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

// A host descriptor with no synco_buffer_P beside it (the kernel was not
// bound by chunk-bind-kernel): its address is not in the kernel.
module {
  chunk.plan @p world_size(2) {
    chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<512x64xbf16>
    // expected-error @below {{chunk-fuse-reductions: @P is bound to argument 0, a host tensor descriptor, and the kernel has no synco_buffer_P argument: run chunk-bind-kernel first}}
    chunk.produce @tiles @P dim(0) tile(128)
    // chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(ldst), expanded:
    chunk.transfer @C_p0_c0 local copy_engine from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p0_c1 local copy_engine from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
    chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) collective(reduce_scatter) {group = "reduce_scatter_C"}
  }
  "tt.func"() <{function_type = (!tt.tensordesc<tensor<128x64xbf16>>, i32, i32, i64, i64, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>, !tt.ptr<bf16>, !tt.ptr<bf16>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%desc: !tt.tensordesc<tensor<128x64xbf16>>, %extent0: i32, %extent1: i32, %stride0: i64, %stride1: i64, %n: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>, %buffer_C: !tt.ptr<bf16>, %buffer_P: !tt.ptr<bf16>):
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile in chunk-reorder-tiles' interleaved order (2 chunks of
    // 2 row tiles per rank): dispatch slot pid_m / 2 runs the peer's chunk
    // 0, the peer's chunk 1, the own chunk 0, the own chunk 1.
    %c2 = arith.constant 2 : i32
    %slot = arith.divsi %pid_m, %c2 : i32
    %in_chunk = arith.remsi %pid_m, %c2 : i32
    %c1 = arith.constant 1 : i32
    %later = arith.subi %slot, %c1 : i32
    %group = arith.divsi %later, %c2 : i32
    %in_group = arith.remsi %later, %c2 : i32
    %first = arith.cmpi slt, %slot, %c1 : i32
    %last = arith.cmpi sge, %group, %c1 : i32
    %peer = arith.cmpi slt, %in_group, %c1 : i32
    %peer_block = arith.addi %in_group, %c1 : i32
    %c0 = arith.constant 0 : i32
    %group_block = arith.select %peer, %peer_block, %c0 : i32
    %next_chunk = arith.addi %group, %c1 : i32
    %group_chunk = arith.select %peer, %next_chunk, %group : i32
    %later_block = arith.select %last, %c0, %group_block : i32
    %later_chunk = arith.select %last, %c1, %group_chunk : i32
    %first_block = arith.addi %slot, %c1 : i32
    %block = arith.select %first, %first_block, %later_block : i32
    %chunk = arith.select %first, %c0, %later_chunk : i32
    %from = arith.addi %rank, %block : i32
    %owner = arith.remsi %from, %c2 : i32
    %c4 = arith.constant 4 : i32
    %block_tile = arith.muli %owner, %c4 : i32
    %chunk_tile = arith.muli %chunk, %c2 : i32
    %tile_in_block = arith.addi %chunk_tile, %in_chunk : i32
    %t = arith.addi %block_tile, %tile_in_block {chunk.tile_index = "P"} : i32
    %row = arith.muli %t, %c128 : i32
    %c0_i32 = arith.constant 0 : i32
    %acc = arith.constant dense<1.0> : tensor<128x64xf32>
    %v = arith.truncf %acc : tensor<128x64xf32> to tensor<128x64xbf16>
    "tt.descriptor_store"(%desc, %v, %row, %c0_i32) : (!tt.tensordesc<tensor<128x64xbf16>>, tensor<128x64xbf16>, i32, i32) -> ()
    "tt.return"() : () -> ()
  }) {chunk.abi_buffers = ["C"], chunk.abi_first_arg = 6 : i32} : () -> ()
}
