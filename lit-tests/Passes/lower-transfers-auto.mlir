// chunk-lower-transfers{copy-programs=auto}: the cost model picks the
// number of copy programs from the bytes a rank's programs move per launch
// (synco_cost_model::choose_copy_programs): the fewest that reach the
// link's rate at the measured rate per program (370 / 19.25 GB/s: 20),
// at most the blocks of the largest chunk, and says so in a remark.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers{copy-programs=auto})' \
// RUN:   | FileCheck %s
//
// A count that is neither auto nor in 1..2^31-1 is refused.
// RUN: not synco-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(chunk-lower-transfers{copy-programs=lots})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: error: chunk-lower-transfers: option copy-programs must be auto or a count in 1..2147483647, not 'lots'

// 64 MiB from the peer: 20 programs.
// CHECK: copy_programs = 20 : i64
module {
  // expected-remark @below {{copy-programs=auto -> 20: 67108864 bytes per rank and launch, 19.2 GB/s per program up to the link's 370 GB/s; predicted copy time by programs: 1: 3491 us, 2: 1748 us, 4: 877 us, 8: 441 us, 16: 223 us, 20: 186 us, 32: 186 us, 33: 186 us}}
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<16384x4096xbf16> bind(0)
    chunk.transfer @A_p1_c0 pull ldst from <@A[(d0) -> (((d0 + 1) mod 2) * 8192, 0)] [8192, 4096]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 8192, 0)] [8192, 4096]> on (d0) -> (d0) order(1)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "big", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}

// -----

// Two chunks of 64 KiB on tma (4 bulk-copy blocks of 16 KiB each): at
// most 4 programs have work; tma's rate per program is not measured, so
// ldst's stands in.
// CHECK: copy_programs = 4 : i64
module {
  // expected-remark @below {{copy-programs=auto -> 4: 131072 bytes per rank and launch, 19.2 GB/s per program (tma's rate is not measured: ldst's) up to the link's 370 GB/s; predicted copy time by programs: 1: 12 us, 2: 8 us, 4: 7 us}}
  chunk.plan @p world_size(2) {
    chunk.buffer @A : !chunk.buffer<2048x64xbf16> bind(0)
    chunk.transfer @A_p1_c0 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 1024, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 1024, 0)] [512, 64]> on (d0) -> (d0) order(1)
    chunk.transfer @A_p1_c1 pull tma from <@A[(d0) -> (((d0 + 1) mod 2) * 1024 + 512, 0)] [512, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 1024 + 512, 0)] [512, 64]> on (d0) -> (d0) order(2)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "small", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 1 : i32} : () -> ()
}
