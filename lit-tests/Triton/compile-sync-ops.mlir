// The Triton-level sync primitives Synco's lowering is built from (peer
// pointers, an acquire spin bounded by %globaltimer, the error record,
// barrier + system fence + release atomics, a compare-and-swap spin),
// written by hand in generic TTIR and compiled through Triton 3.6 to sm_90a
// PTX. (chunk-to-triton's own output, with its spin and barrier as single
// asm blocks, is compiled in Pipeline/fused-sync-ptx.test.)
// Triton silently drops misspelled attributes, so each CHECK pins the PTX
// instruction (with its memory order and scope) that the attribute must
// produce.
//
// REQUIRES: triton
// RUN: synco compile %s --emit=ptx -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
//
// chunk.peer_ptr: peer address = p - heap_base[rank] + heap_base[peer]
// CHECK-LABEL: .entry sync_ops(
// CHECK:       ld.global.b64
// CHECK:       ld.global.b64
//
// chunk.wait: a bounded spin of acquire/sys loads, timed by %globaltimer
// CHECK:       mov.u64 {{.*}}, %globaltimer;
// CHECK:       ld.acquire.sys.global.u32
// CHECK:       mov.u64 {{.*}}, %globaltimer;
//
// on timeout: claim the error buffer once (acq_rel/sys compare-and-swap),
// then record rank, chunk and epoch
// CHECK:       atom.global.acq_rel.sys.cas.b32
// CHECK:       st.global.b32
//
// chunk.signal: CTA barrier, system fence, then a release/sys exchange
// CHECK:       bar.sync{{[[:space:]]+}}0;
// CHECK:       fence.acq_rel.sys;
// CHECK:       atom.global.sys.release.exch.b32
//
// The compare-and-swap spin (the alternative wait, for flags written by
// SM code that needs an RMW to observe them):
// CHECK:       atom.global.acquire.sys.cas.b32

"builtin.module"() ({
  "tt.func"() <{function_type = (!tt.ptr<bf16>, !tt.ptr<bf16>, !tt.ptr<i64>, !tt.ptr<i32>, !tt.ptr<i32>, i32, i32, i32) -> (), sym_name = "sync_ops", sym_visibility = "public"}> ({
  ^bb0(%a: !tt.ptr<bf16>, %out: !tt.ptr<bf16>, %heap_bases: !tt.ptr<i64>, %flags: !tt.ptr<i32>, %error: !tt.ptr<i32>, %rank: i32, %peer: i32, %epoch: i32):
    %c0 = "arith.constant"() <{value = 0 : i32}> : () -> i32
    %c1 = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %c2 = "arith.constant"() <{value = 2 : i32}> : () -> i32
    %c3 = "arith.constant"() <{value = 3 : i32}> : () -> i32
    %chunk = "arith.constant"() <{value = 5 : i32}> : () -> i32
    %timeout = "arith.constant"() <{value = 10000000000 : i64}> : () -> i64

    // chunk.peer_ptr %a, %peer
    %my_base_ptr = "tt.addptr"(%heap_bases, %rank) : (!tt.ptr<i64>, i32) -> !tt.ptr<i64>
    %my_base = "tt.load"(%my_base_ptr) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<i64>) -> i64
    %peer_base_ptr = "tt.addptr"(%heap_bases, %peer) : (!tt.ptr<i64>, i32) -> !tt.ptr<i64>
    %peer_base = "tt.load"(%peer_base_ptr) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<i64>) -> i64
    %a_int = "tt.ptr_to_int"(%a) : (!tt.ptr<bf16>) -> i64
    %offset = "arith.subi"(%a_int, %my_base) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %peer_int = "arith.addi"(%offset, %peer_base) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %peer_a = "tt.int_to_ptr"(%peer_int) : (i64) -> !tt.ptr<bf16>

    // chunk.wait %flag, %epoch chunk(5)
    %flag = "tt.addptr"(%flags, %chunk) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    %start = "tt.elementwise_inline_asm"() <{asm_string = "mov.u64 $0, %globaltimer;", constraints = "=l", packed_element = 1 : i32, pure = false}> : () -> i64
    %seen:2 = "scf.while"(%c0, %start) ({
    ^bb0(%s: i32, %now: i64):
      %waiting = "arith.cmpi"(%s, %epoch) <{predicate = 2 : i64}> : (i32, i32) -> i1
      %elapsed = "arith.subi"(%now, %start) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
      %in_time = "arith.cmpi"(%elapsed, %timeout) <{predicate = 2 : i64}> : (i64, i64) -> i1
      %spin = "arith.andi"(%waiting, %in_time) : (i1, i1) -> i1
      "scf.condition"(%spin, %s, %now) : (i1, i32, i64) -> ()
    }, {
    ^bb0(%s2: i32, %now2: i64):
      %value = "tt.elementwise_inline_asm"(%flag) <{asm_string = "ld.acquire.sys.global.u32 $0, [$1];", constraints = "=r,l", packed_element = 1 : i32, pure = false}> : (!tt.ptr<i32>) -> i32
      %later = "tt.elementwise_inline_asm"() <{asm_string = "mov.u64 $0, %globaltimer;", constraints = "=l", packed_element = 1 : i32, pure = false}> : () -> i64
      "scf.yield"(%value, %later) : (i32, i64) -> ()
    }) : (i32, i64) -> (i32, i64)
    %timed_out = "arith.cmpi"(%seen#0, %epoch) <{predicate = 2 : i64}> : (i32, i32) -> i1
    "scf.if"(%timed_out) ({
      %old = "tt.atomic_cas"(%error, %c0, %c1) <{scope = 3 : i32, sem = 4 : i32}> : (!tt.ptr<i32>, i32, i32) -> i32
      %first = "arith.cmpi"(%old, %c0) <{predicate = 0 : i64}> : (i32, i32) -> i1
      "scf.if"(%first) ({
        %e1 = "tt.addptr"(%error, %c1) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
        "tt.store"(%e1, %rank) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<i32>, i32) -> ()
        %e2 = "tt.addptr"(%error, %c2) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
        "tt.store"(%e2, %chunk) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<i32>, i32) -> ()
        %e3 = "tt.addptr"(%error, %c3) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
        "tt.store"(%e3, %epoch) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<i32>, i32) -> ()
        "scf.yield"() : () -> ()
      }, {
      }) : (i1) -> ()
      "scf.yield"() : () -> ()
    }, {
    }) : (i1) -> ()

    // The data the wait guarded, read from the peer.
    %x = "tt.load"(%peer_a) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32, isVolatile = false, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!tt.ptr<bf16>) -> bf16
    "tt.store"(%out, %x) <{boundaryCheck = array<i32>, cache = 1 : i32, evict = 1 : i32}> : (!tt.ptr<bf16>, bf16) -> ()

    // chunk.signal %peer_flag, %epoch chunk(5): everyone's stores, then release.
    "gpu.barrier"() : () -> ()
    %fenced = "tt.elementwise_inline_asm"() <{asm_string = "fence.acq_rel.sys;\0A\09mov.u32 $0, 0;", constraints = "=r", packed_element = 1 : i32, pure = false}> : () -> i32
    %flag_int = "tt.ptr_to_int"(%flag) : (!tt.ptr<i32>) -> i64
    %flag_off = "arith.subi"(%flag_int, %my_base) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %peer_flag_int = "arith.addi"(%flag_off, %peer_base) <{overflowFlags = #arith.overflow<none>}> : (i64, i64) -> i64
    %peer_flag = "tt.int_to_ptr"(%peer_flag_int) : (i64) -> !tt.ptr<i32>
    %true = "arith.constant"() <{value = true}> : () -> i1
    %prev = "tt.atomic_rmw"(%peer_flag, %epoch, %true) <{atomic_rmw_op = 10 : i32, scope = 3 : i32, sem = 3 : i32}> : (!tt.ptr<i32>, i32, i1) -> i32

    // The compare-and-swap spin.
    %cas:1 = "scf.while"(%c0) ({
    ^bb0(%t: i32):
      %w = "arith.cmpi"(%t, %epoch) <{predicate = 2 : i64}> : (i32, i32) -> i1
      "scf.condition"(%w, %t) : (i1, i32) -> ()
    }, {
    ^bb0(%t2: i32):
      %got = "tt.atomic_cas"(%flag, %epoch, %epoch) <{scope = 3 : i32, sem = 2 : i32}> : (!tt.ptr<i32>, i32, i32) -> i32
      "scf.yield"(%got) : (i32) -> ()
    }) : (i32) -> i32
    %sum = "arith.addi"(%cas#0, %fenced) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
    %sink = "tt.addptr"(%error, %c3) : (!tt.ptr<i32>, i32) -> !tt.ptr<i32>
    "tt.atomic_rmw"(%sink, %sum, %true) <{atomic_rmw_op = 4 : i32, scope = 1 : i32, sem = 1 : i32}> : (!tt.ptr<i32>, i32, i1) -> i32
    "tt.return"() : () -> ()
  }) {noinline = false} : () -> ()
}) : () -> ()
