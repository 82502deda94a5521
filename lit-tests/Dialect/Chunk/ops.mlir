// Every chunk op, in its pretty syntax. The printed form parses back to the
// same IR, and so does the generic form.
//
// RUN: synco-opt %s | FileCheck %s
// RUN: synco-opt %s | synco-opt | FileCheck %s
// RUN: synco-opt %s --mlir-print-op-generic | synco-opt | FileCheck %s
// RUN: synco-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: chunk.plan @all_gather world_size(4) kernel(@matmul_kernel) {
// CHECK-NEXT:    chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
// CHECK-NEXT:    chunk.all_gather @A dim(0) chunks(4){{$}}
// CHECK-NEXT:    chunk.all_gather @A dim(0) chunks(auto) backend(tma) algorithm(ring){{$}}
// CHECK-NEXT:    chunk.consume @A dim(0) tile(128) index("pid_m")
// CHECK-NEXT:    chunk.consume @A dim(0) tile(64){{$}}
// CHECK-NEXT:    chunk.all_gather @A dim(0) chunks(4) split(1){{$}}
// CHECK-NEXT:    chunk.consume @A dim(1) tile(256) index("pid_n") source("src"){{$}}
// CHECK-NEXT:    chunk.consume @A dim(0) tile(64) loop("start_n"){{$}}
// CHECK-NEXT:    chunk.all_gather @A dim(0) chunks(2) blocks(zigzag){{$}}
// CHECK-NEXT:  }
// GENERIC:     "chunk.plan"() <{kernel = @matmul_kernel, sym_name = "all_gather", world_size = 4 : i64}>
// GENERIC:     "chunk.buffer"() <{arg = 0 : i64, sym_name = "A", type = !chunk.buffer<8192x4096xbf16>}>
// GENERIC:     "chunk.all_gather"() <{algorithm = 0 : i32, backend = 0 : i32, blocks = 0 : i32, buffer = @A, chunks = 4 : i64, dim = 0 : i64}>
// GENERIC:     "chunk.all_gather"() <{algorithm = 1 : i32, backend = 1 : i32, blocks = 0 : i32, buffer = @A, dim = 0 : i64}>
// GENERIC:     "chunk.all_gather"() <{algorithm = 0 : i32, backend = 0 : i32, blocks = 0 : i32, buffer = @A, chunks = 4 : i64, dim = 0 : i64, split = 1 : i64}>
// GENERIC:     "chunk.consume"() <{buffer = @A, dim = 1 : i64, index = "pid_n", source = "src", tile = 256 : i64}>
// GENERIC:     "chunk.consume"() <{buffer = @A, dim = 0 : i64, loop = "start_n", tile = 64 : i64}>
// GENERIC:     "chunk.all_gather"() <{algorithm = 0 : i32, backend = 0 : i32, blocks = 1 : i32, buffer = @A, chunks = 2 : i64, dim = 0 : i64}>
chunk.plan @all_gather world_size(4) kernel(@matmul_kernel) {
  chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
  chunk.all_gather @A dim(0) chunks(4) backend(copy_engine) algorithm(direct)
  chunk.all_gather @A dim(0) chunks(auto) backend(tma) algorithm(ring)
  chunk.consume @A dim(0) tile(128) index("pid_m")
  chunk.consume @A dim(0) tile(64)
  chunk.all_gather @A dim(0) chunks(4) split(1)
  chunk.consume @A dim(1) tile(256) index("pid_n") source("src")
  chunk.consume @A dim(0) tile(64) loop("start_n")
  chunk.all_gather @A dim(0) chunks(2) blocks(zigzag)
}

// CHECK-LABEL: chunk.plan @reductions world_size(2) {
// CHECK-NEXT:    chunk.buffer @partial : !chunk.buffer<4096x8192xbf16>
// CHECK-NEXT:    chunk.buffer @C : !chunk.buffer<2048x8192xbf16> bind(2)
// CHECK-NEXT:    chunk.buffer @full : !chunk.buffer<4096x8192xbf16>
// CHECK-NEXT:    chunk.produce @tiles @partial dim(0) tile(128) index("pid_m")
// CHECK-NEXT:    chunk.reduce_scatter @partial into @C dim(0) chunks(2){{$}}
// CHECK-NEXT:    chunk.reduce_scatter @partial into @C dim(0) chunks(auto) reduce(max) backend(ldst)
// CHECK-NEXT:    chunk.all_reduce @partial into @full dim(0) chunks(1){{$}}
// CHECK-NEXT:    chunk.all_reduce @partial into @full dim(0) chunks(auto) algorithm(one_shot)
// CHECK-NEXT:  }
chunk.plan @reductions world_size(2) {
  chunk.buffer @partial : !chunk.buffer<4096x8192xbf16>
  chunk.buffer @C : !chunk.buffer<2048x8192xbf16> bind(2)
  chunk.buffer @full : !chunk.buffer<4096x8192xbf16>
  chunk.produce @tiles @partial dim(0) tile(128) index("pid_m")
  chunk.reduce_scatter @partial into @C dim(0) chunks(2) reduce(sum)
  chunk.reduce_scatter @partial into @C dim(0) chunks(auto) reduce(max) backend(ldst)
  chunk.all_reduce @partial into @full dim(0) chunks(1)
  chunk.all_reduce @partial into @full dim(0) chunks(auto) algorithm(one_shot)
}

// CHECK-LABEL: chunk.plan @all_to_all world_size(8) {
// CHECK:         chunk.all_to_all @X into @Y dim(1) chunks(2) backend(nvshmem)
// A re-shard: X's columns split among the ranks, Y's rows stacked.
// CHECK:         chunk.all_to_all @X into @Z dim(1) chunks(2) to(0){{$}}
// The same cut by X's columns (a chunk per head): split(1).
// CHECK:         chunk.all_to_all @X into @Z dim(1) chunks(2) to(0) split(1){{$}}
chunk.plan @all_to_all world_size(8) {
  chunk.buffer @X : !chunk.buffer<64x1024xf32>
  chunk.buffer @Y : !chunk.buffer<64x1024xf32>
  chunk.buffer @Z : !chunk.buffer<512x128xf32>
  chunk.all_to_all @X into @Y dim(1) chunks(2) backend(nvshmem)
  chunk.all_to_all @X into @Z dim(1) chunks(2) to(0)
  chunk.all_to_all @X into @Z dim(1) chunks(2) to(0) split(1)
}

// Explicit chunks: rank r keeps its own half (local) and pulls the other
// half from rank (r + 1) mod 2 after a producer and its own chunk.
// CHECK-LABEL: chunk.plan @explicit world_size(2) {
// CHECK:         chunk.transfer @own local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [512, 64]> on (d0) -> (d0) order(0) {group = "ag"}
// CHECK-NEXT:    chunk.transfer @peer pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [512, 64]> on (d0) -> (d0) order(1) after [@own, @tiles] {group = "ag"}
// CHECK-NEXT:    chunk.transfer @acc push tma from <@P[(d0) -> (0, 0)] [512, 64]> on (d0) -> (d0) to <@S[(d0) -> (0, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) order(2) reduce(sum)
// GENERIC:       "chunk.transfer"() <{after = [@own, @tiles], backend = 2 : i32, dst = #chunk.region<@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [512, 64]>, dst_rank = #map, group = "ag", mode = 0 : i32, order = 1 : i64
chunk.plan @explicit world_size(2) {
  chunk.buffer @A : !chunk.buffer<1024x64xf16>
  chunk.buffer @P : !chunk.buffer<512x64xf16>
  chunk.buffer @S : !chunk.buffer<512x64xf16>
  chunk.produce @tiles @A dim(0) tile(64)
  chunk.transfer @own local copy_engine
      from #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@A[(r) -> (r * 512, 0)] [512, 64]> on (r) -> (r)
      order(0) {group = "ag"}
  chunk.transfer @peer pull ldst
      from #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      to #chunk.region<@A[(r) -> (((r + 1) mod 2) * 512, 0)] [512, 64]> on (r) -> (r)
      order(1) after [@own, @tiles] {group = "ag"}
  chunk.transfer @acc push tma
      from #chunk.region<@P[(r) -> (0, 0)] [512, 64]> on (r) -> (r)
      to #chunk.region<@S[(r) -> (0, 0)] [512, 64]> on (r) -> ((r + 1) mod 2)
      order(2) reduce(sum)
}

// Kernel-level synchronisation, on Triton pointer types.
// CHECK-LABEL: func.func @sync
// CHECK:         %[[R:.*]] = chunk.rank : i32
// CHECK-NEXT:    %[[W:.*]] = chunk.world_size : i32
// CHECK-NEXT:    %{{.*}} = chunk.peer_ptr %arg2, %[[R]] : !tt.ptr<bf16>
// CHECK-NEXT:    %{{.*}} = chunk.peer_ptr %arg3, %[[W]] : tensor<128x!tt.ptr<bf16>>
// CHECK-NEXT:    chunk.wait %arg0[%[[R]]], %arg1 : !tt.ptr<i32>
// CHECK-NEXT:    chunk.wait %arg0[%[[W]]], %arg1 sem(relaxed) scope(gpu) {timeout_ns = 1000 : i64} : !tt.ptr<i32>
// CHECK-NEXT:    chunk.signal %arg0[%[[R]]], %arg1 : !tt.ptr<i32>
// CHECK-NEXT:    chunk.signal %arg0[%[[R]]], %arg1 sem(acq_rel) scope(cta) : !tt.ptr<i32>
// CHECK-NEXT:    chunk.wait %arg0[%[[R]]], %arg1 count(16) : !tt.ptr<i32>
// CHECK-NEXT:    chunk.arrive %arg0[%[[R]]] : !tt.ptr<i32>
// CHECK-NEXT:    chunk.arrive %arg0[%[[W]]] sem(acq_rel) scope(gpu) : !tt.ptr<i32>
// CHECK-NEXT:    %{{.*}} = chunk.poll %arg0[%[[R]]], %arg1 : !tt.ptr<i32>
// CHECK-NEXT:    %[[V:.*]] = chunk.poll %arg0[%[[W]]], %arg1 count(16) scope(gpu) : !tt.ptr<i32>
// CHECK-NEXT:    %{{.*}} = chunk.agree %[[V]]{{$}}
// CHECK-NEXT:    chunk.acquire{{$}}
// CHECK-NEXT:    chunk.acquire scope(gpu){{$}}
// GENERIC:       "chunk.wait"(%arg0, %0, %arg1) <{count = 1 : i64, scope = 3 : i32, sem = 2 : i32, timeout_ns = 10000000000 : i64}> : (!tt.ptr<i32>, i32, i32) -> ()
// GENERIC:       "chunk.signal"(%arg0, %0, %arg1) <{scope = 3 : i32, sem = 3 : i32}> : (!tt.ptr<i32>, i32, i32) -> ()
// GENERIC:       "chunk.wait"(%arg0, %0, %arg1) <{count = 16 : i64, scope = 3 : i32, sem = 2 : i32, timeout_ns = 10000000000 : i64}> : (!tt.ptr<i32>, i32, i32) -> ()
// GENERIC:       "chunk.arrive"(%arg0, %0) <{scope = 3 : i32, sem = 3 : i32}> : (!tt.ptr<i32>, i32) -> ()
// GENERIC:       "chunk.poll"(%arg0, %0, %arg1) <{count = 1 : i64, scope = 3 : i32}> : (!tt.ptr<i32>, i32, i32) -> i1
// GENERIC:       "chunk.agree"(%{{.*}}) : (i1) -> i1
// GENERIC:       "chunk.acquire"() <{scope = 3 : i32}> : () -> ()
func.func @sync(%flags: !tt.ptr<i32>, %epoch: i32, %a: !tt.ptr<bf16>, %as: tensor<128x!tt.ptr<bf16>>) {
  %r = chunk.rank : i32
  %w = chunk.world_size : i32
  %p = chunk.peer_ptr %a, %r : !tt.ptr<bf16>
  %ps = chunk.peer_ptr %as, %w : tensor<128x!tt.ptr<bf16>>
  chunk.wait %flags[%r], %epoch sem(acquire) scope(sys) : !tt.ptr<i32>
  chunk.wait %flags[%w], %epoch sem(relaxed) scope(gpu) {timeout_ns = 1000 : i64} : !tt.ptr<i32>
  chunk.signal %flags[%r], %epoch sem(release) scope(sys) : !tt.ptr<i32>
  chunk.signal %flags[%r], %epoch sem(acq_rel) scope(cta) : !tt.ptr<i32>
  chunk.wait %flags[%r], %epoch count(16) : !tt.ptr<i32>
  chunk.arrive %flags[%r] : !tt.ptr<i32>
  chunk.arrive %flags[%w] sem(acq_rel) scope(gpu) : !tt.ptr<i32>
  %k = chunk.poll %flags[%r], %epoch scope(sys) : !tt.ptr<i32>
  %v = chunk.poll %flags[%w], %epoch count(16) scope(gpu) : !tt.ptr<i32>
  %all = chunk.agree %v
  chunk.acquire scope(sys)
  chunk.acquire scope(gpu)
  return
}
