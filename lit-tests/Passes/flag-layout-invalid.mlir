// A flag layout read back from a plan (chunk.flag_layout, which an input
// may carry) is checked before any pass uses it: each range names a
// declared buffer once, along its dimensions, in positive steps, ends
// within the 32-bit flag indices, and shares no flag with another.
//
// RUN: synco-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(chunk-insert-waits)'

module {
  // A range that starts inside another: chunks of @A and @B would share flags 2 and 3.
  // expected-error @below {{the recorded chunk.flag_layout gives @A flags 0..4 and @B flags from 2: two chunks would share a flag}}
  chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 0 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}, {base = 2 : i64, buffer = "B", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]} {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.buffer @B : !chunk.buffer<1024x64xbf16>
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

module {
  // Zero rows per chunk (the passes divide by it).
  // expected-error @below {{the recorded chunk.flag_layout gives @A a range that is not a layout of its 2-D chunks}}
  chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 0 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 0 : i64}]} {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

module {
  // A dimension the buffer does not have.
  // expected-error @below {{the recorded chunk.flag_layout gives @A a range that is not a layout of its 2-D chunks}}
  chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 0 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 2 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]} {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

module {
  // One buffer laid out twice.
  // expected-error @below {{the recorded chunk.flag_layout lays out the flags of @A twice}}
  chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 0 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}, {base = 4 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]} {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

module {
  // A buffer the plan does not declare.
  // expected-error @below {{the recorded chunk.flag_layout names @Z, which the plan does not declare}}
  chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 0 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}, {base = 4 : i64, buffer = "Z", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]} {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}

// -----

module {
  // A range beyond the flags a 32-bit index reaches.
  chunk.plan @p world_size(2) attributes {chunk.flag_layout = [{base = 2147483646 : i64, buffer = "A", chunks_per_rank = 2 : i64, counters_per_chunk = 1 : i64, dim = 0 : i64, kind = "arrival", rank_block = 512 : i64, rank_dim = 0 : i64, rows_per_chunk = 256 : i64}]} {
    chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)
    chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p0_c1 local copy_engine from <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@A[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(1) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c0 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512, 0)] [256, 64]> on (d0) -> (d0) order(2) collective(all_gather) {group = "all_gather_A"}
    chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
    // expected-error @below {{the flags of @A, 2 chunks per rank x 2 ranks x 1 flags each from flag 2147483646, end beyond the 2147483647 flags}}
    chunk.consume @A dim(0) tile(128)
  }
  "tt.func"() <{function_type = (!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> (), sym_name = "k", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %k: i32, %rank: i32, %world_size: i32, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %epoch: i32, %errors: !tt.ptr<i32>):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c128 = arith.constant 128 : i32
    %pid_m = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
    // The row tile rotated to start at the rank's block: (pid_m + rank * 4) mod 8.
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %rank, %c4 : i32
    %sum = arith.addi %pid_m, %shift : i32
    %c8 = arith.constant 8 : i32
    %t = arith.remsi %sum, %c8 {chunk.tile_index = "A"} : i32
    %row = arith.muli %t, %c128 : i32
    %p = "tt.addptr"(%a, %row) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
    scf.for %i = %c0 to %k step %c1 : i32 {
      %q = "tt.addptr"(%p, %i) : (!tt.ptr<bf16>, i32) -> !tt.ptr<bf16>
      %x = "tt.load"(%q) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
      "tt.store"(%q, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()
    }
    "tt.return"() : () -> ()
  }) {chunk.abi_first_arg = 2 : i32} : () -> ()
}
