# The package's PyTorch side, on a machine without a GPU: everything a
# launch checks before it issues work. The operators' fused kernels (the
# GEMMs and context-parallel attention) compile from their templates into
# the cache (an output the plan only declares
# gets no ABI argument, so it need not be symmetric); a launch's tensors
# are checked (count, device, dtype, layout, the plan buffer's shape, and
# symmetric where the plan binds them: inside the heap, here a CPU tensor
# standing in for it) and turned into addresses and heap offsets; the
# plan's fixed scalars, a world size that differs and an unknown buffer
# are refused, each naming the argument; a cache built by a compiler this
# machine lacks still serves what it holds; the custom ops have fake
# implementations for torch.compile. The zigzag, Ulysses and all-to-all +
# GEMM templates compile and refuse what does not divide.
#
# REQUIRES: triton, torch, synco-python
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t

import json
import os
import sys
import types
from pathlib import Path

import torch

import synco
from synco import ops, runtime

scratch = Path(sys.argv[1])
failures = []


def expect(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)


def raises(kind, text, call):
    try:
        call()
    except kind as e:
        return text in str(e), str(e)
    except Exception as e:  # noqa: BLE001 (the wrong kind is the failure)
        return False, f"{type(e).__name__}: {e}"
    return False, "no exception"


cache = scratch / "cache"
config = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 1}
shape = dict(m=512, k=256, n=256, config=config, num_warps=4, num_stages=3, cache_dir=cache)
ag = ops.AllGatherMatmul.compile(2, chunks=2, **shape)
rs = ops.MatmulReduceScatter.compile(2, chunks=2, **shape)
expect("AllGatherMatmul compiles for 2 ranks", ag.manifest.world_size == 2)
expect("its output gets no argument of the ABI (any tensor will do)",
       not any(p.startswith("synco_buffer") for p, _ in ag.manifest.user_params)
       and [b[0] for b in ag.manifest.buffers] == ["A", "C"], str(ag.manifest.buffers))
expect("the second compile comes from the cache", ops.AllGatherMatmul.compile(
    2, chunks=2, **shape).cached)

# A heap: a CPU tensor stands in for this rank's symmetric heap.
heap_bytes = 4 << 20
heap_tensor = torch.zeros(heap_bytes, dtype=torch.uint8)
heap = runtime.Heap(heap_tensor.data_ptr(), heap_bytes)


def symmetric(offset, shape_, dtype=torch.bfloat16):
    count = torch.Size(shape_).numel() * torch.empty((), dtype=dtype).element_size()
    return heap_tensor[offset:offset + count].view(dtype).view(shape_)


check = runtime.LaunchArguments(ag.manifest, "cpu", heap)
a = symmetric(4096, (512, 256))
b = torch.zeros((256, 256), dtype=torch.bfloat16)
c = torch.zeros((512, 256), dtype=torch.bfloat16)
scalars = [512, 256, 256, 256, 256, 256]
values, bindings = check([a, b, c, *scalars])
expect("tensors become their addresses", values[:3] == [a.data_ptr(), b.data_ptr(), c.data_ptr()])
expect("a bound tensor becomes its heap offset", bindings == [("A", 4096, a.nbytes)], str(bindings))
ag.manifest.check_args(0, values)
for what, args, text in [
    ("a missing argument", [a, b, c, *scalars[:-1]], "takes 9 arguments of its own"),
    ("a tensor outside the heap", [a.clone(), b, c, *scalars], "argument 'a_ptr' is not symmetric"),
    ("a wrong dtype", [a, b.float(), c, *scalars], "argument 'b_ptr' is torch.float32"),
    ("a transposed operand", [a, b.t(), c, *scalars], "argument 'b_ptr' is not contiguous"),
    ("a wrong shape of a plan buffer", [symmetric(4096, (256, 512)), b, c, *scalars],
     "has shape (256, 512), the plan's buffer @A is (512, 256)"),
    ("a number for a pointer", [a, 7, c, *scalars], "argument 'b_ptr' is a pointer"),
    ("a tensor for a scalar", [a, b, c, torch.tensor(512), *scalars[1:]], "argument 'M' has type i32"),
]:
    ok, got = raises(synco.LaunchError, text, lambda: check(args))
    expect(f"refuses {what}", ok, got)
on_gpu = runtime.LaunchArguments(ag.manifest, "cuda:0", heap)
ok, got = raises(synco.LaunchError, "argument 'a_ptr' is on cpu, the group runs on cuda:0",
                 lambda: on_gpu([a, b, c, *scalars]))
expect("refuses a tensor on another device", ok, got)
values, _ = check([a, b, c, 1024, *scalars[1:]])
ok, got = raises(synco.LaunchError, "compile for the shape you launch",
                 lambda: ag.manifest.check_args(0, values))
expect("refuses an M the plan does not fix (the runtime's check)", ok, got)
ok, got = raises(synco.LaunchError, "the kernel's plan is for 2 ranks, the group has 4",
                 lambda: runtime.check_world_size(ag.manifest, 4))
expect("refuses a group of another size", ok, got)

# A reduction's output: bound by name, symmetric.
check_rs = runtime.LaunchArguments(rs.manifest, "cpu", heap)
p = symmetric(1 << 20, (512, 256))
out = symmetric(2 << 20, (256, 256))
_, bindings = check_rs([a, b, p, *scalars], buffers={"C": out})
expect("a reduction's output binds by name", ("C", 2 << 20, out.nbytes) in bindings, str(bindings))
expect("the quick pass and the checks one by one agree",
       check_rs([a, b, p, *scalars], buffers={"C": out})
       == check_rs._checked([a, b, p, *scalars], buffers={"C": out})
       == ([a.data_ptr(), b.data_ptr(), p.data_ptr(), *scalars], bindings), str(bindings))
for what, buffers, text in [
    ("an unknown buffer", {"D": out}, "the plan has no buffer @D"),
    ("a bound buffer given by name", {"P": p}, "the plan has no buffer @P that an argument does not carry"),
    ("an output outside the heap", {"C": out.clone()}, "buffers['C'] is not symmetric"),
    ("an output of the wrong shape", {"C": symmetric(2 << 20, (512, 256))}, "the plan's buffer @C is (256, 256)"),
]:
    ok, got = raises(synco.LaunchError, text, lambda: check_rs([a, b, p, *scalars], buffers=buffers))
    expect(f"refuses {what}", ok, got)

# Context-parallel attention: K and V gathered along the sequence, bound
# as the kernel's arguments 1 and 2, symmetric; the kernel's own loop over
# the keys and values is split by chunk (its remarks come with the compile).
attn = ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64, causal=True,
                                      chunks=2, cache_dir=scratch / "cache")
expect("AllGatherAttention compiles for 2 ranks", attn.manifest.world_size == 2)
expect("its plan binds K and V", [(n, s, a) for n, s, _, a in attn.manifest.buffers]
       == [("K", [1024, 128], 1), ("V", [1024, 128], 2)], str(attn.manifest.buffers))
# The bundled kernel's causal loop reads keys up to `N_CTX_KV - N_CTX_Q +
# (start_m + 1) * BLOCK_M`, a value of its grid and arguments that the
# runtime keeps within K's 1024 rows: each rank's launch as the operator
# makes it passes; the last rank's with twice the query blocks would read
# past K, and is refused naming a program.
k_attn, v_attn = symmetric(1 << 20, (1024, 128)), symmetric(2 << 20, (1024, 128))
q_attn = torch.zeros((512, 256), dtype=torch.bfloat16)
check_attn = runtime.LaunchArguments(attn.manifest, "cpu", heap)


def attention_launch(rank):
    q_strides = ops.attention_strides("bshd", 512, 4, 64)
    kv_strides = ops.attention_strides("bshd", 1024, 2, 64)
    values, _ = check_attn([q_attn, k_attn, v_attn, q_attn, 0.125, *q_strides, *kv_strides,
                            *kv_strides, *q_strides, 4, 2, 512, 512 * (rank + 1)])
    return values


for rank in (0, 1):
    attn.check_args(rank, attention_launch(rank), grid=(4, 4))
ok, got = raises(synco.LaunchError, "in @K is 1152, past 1024",
                 lambda: attn.check_args(1, attention_launch(1), grid=(8, 4)))
expect("a grid of more query blocks than the queries is refused", ok, got)
# A program that finds every peer chunk present reads them without waits
# (present_path="arrival": polls, one acquire, two loops causal); "none" keeps
# the split loop alone; anything else is refused.
ttir = next(attn.folder.glob("*.ttir")).read_text()
split_only = ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64, causal=True,
                                            chunks=2, present_path="none",
                                            cache_dir=scratch / "cache")
split_ttir = next(split_only.folder.glob("*.ttir")).read_text()
expect("attention's present path polls the peers' flags (4 chunks of K and of V)",
       ttir.count("ld.relaxed.sys.global.u32") == 8 and "fence.acquire.sys" in ttir,
       str(ttir.count("ld.relaxed.sys.global.u32")))
expect("present_path='none' builds no present path",
       "ld.relaxed.sys" not in split_ttir and split_only.folder != attn.folder)
ok, got = raises(synco.LaunchError, "present_path must be 'arrival' or 'none', not 'always'",
                 lambda: ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64,
                                                        present_path="always"))
expect("an unknown present_path is refused", ok, got)
# Beside the present path the causal kernel's 4-chunk split stays a loop
# (present_split="auto": its loop runs to the causal band's end): one
# pipelined loop over the chunks (and the present path's 2), where
# present_split="unrolled" unrolls it into 4; without a present path it
# is unrolled (4 loops) unless max_unrolled_chunks is below 4. Out of
# range or misspelled, either is refused.
def wgmma_count(kernel):
    return next(kernel.folder.glob("*.ptx")).read_text().count("wgmma.mma_async")


def attention_variant(**options):
    return ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64, causal=True,
                                          chunks=2, cache_dir=scratch / "cache", **options)


rolled = wgmma_count(attn)
unrolled = wgmma_count(attention_variant(present_split="unrolled"))
split_unrolled = wgmma_count(split_only)
split_rolled = wgmma_count(attention_variant(present_path="none", max_unrolled_chunks=3))
expect("the split beside the present path is rolled (3 pipelined loops, not 6)",
       rolled * 2 == unrolled, f"{rolled} against {unrolled}")
expect("a split alone is unrolled up to max_unrolled_chunks (4 loops, or 1 at 3)",
       split_rolled > 0 and split_unrolled == 4 * split_rolled and rolled == 3 * split_rolled,
       f"{split_unrolled}, {split_rolled}, {rolled}")
ok, got = raises(synco.LaunchError, "max_unrolled_chunks must be an int in 0..64, not 65",
                 lambda: ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64,
                                                        max_unrolled_chunks=65))
expect("max_unrolled_chunks out of range is refused", ok, got)
ok, got = raises(synco.LaunchError,
                 "present_split must be 'auto', 'rolled' or 'unrolled', not 'unroled'",
                 lambda: ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64,
                                                        present_split="unroled"))
expect("an unknown present_split is refused", ok, got)
ring = ops.AllGatherAttention.compile(4, seq=1024, kv_heads=2, head_dim=64, causal=True,
                                      chunks=2, algorithm="ring", cache_dir=scratch / "cache")
plan = (ring.folder / "plan.mlir").read_text()
expect("a ring AllGatherAttention gathers K and V by a ring",
       plan.count("algorithm(ring)") == 2 and ring.folder != attn.folder, plan)
auto_found = ops.AllGatherAttention.compile(2, seq=1024, kv_heads=2, head_dim=64, causal=True,
                                            chunks="auto", cache_dir=scratch / "cache")
plan = (auto_found.folder / "plan.mlir").read_text()
copies = json.loads(Path(auto_found.manifest.path).read_text())["fused"]["copies"]
expect("attention's chunks(auto) without a loop name gives one chunk per rank (K and V)",
       "loop(" not in plan and "chunks(auto)" in plan and [len(c) for c in copies] == [2, 2],
       str([len(c) for c in copies]))
auto = synco.plans.all_gather_attention(world_size=2, seq=1024, kv_heads=2, head_dim=64,
                                        chunks="auto", loop="start_n")
expect("attention's chunks(auto) names the loop", 'chunks(auto)' in auto
       and 'chunk.consume @K dim(0) tile(64) loop("start_n")' in auto, auto)
ok, got = raises(ValueError, "m (1000) must split into whole tiles",
                 lambda: synco.plans.all_gather_attention(world_size=2, seq=1000, kv_heads=2,
                                                          head_dim=64))
expect("attention refuses a sequence that does not divide", ok, got)

# The zigzag sharding of causal attention: the bundled zigzag kernel (its
# rank as a last argument), two chunks per rank (one per part), and the
# plan's blocks(zigzag); odd chunk counts and rings are refused.
zigzag = ops.AllGatherAttention.compile(4, seq=2048, kv_heads=2, head_dim=64, causal=True,
                                        zigzag=True, config={"BLOCK_M": 64, "BLOCK_N": 64},
                                        cache_dir=cache)
plan = (zigzag.folder / "plan.mlir").read_text()
expect("a zigzag AllGatherAttention takes the rank after the kernel's lengths",
       [n for n, _ in zigzag.manifest.user_params][-3:] == ["N_CTX_Q", "N_CTX_KV", "RANK"],
       str(zigzag.manifest.user_params))
expect("its plan gathers K and V in zigzag halves, one chunk each",
       plan.count("chunks(2) backend(copy_engine) blocks(zigzag)") == 2, plan)
for what, text, kwargs in [
    ("an odd zigzag chunk count", "zigzag needs an even chunk count (not 3)", {"chunks": 3}),
    ("a zigzag ring", "zigzag blocks are gathered with algorithm='direct' only",
     {"chunks": 2, "algorithm": "ring"}),
]:
    ok, got = raises(ValueError, text, lambda kwargs=kwargs: synco.plans.all_gather_attention(
        world_size=4, seq=2048, kv_heads=2, head_dim=64, zigzag=True, **kwargs))
    expect(f"attention refuses {what}", ok, got)

# Ring attention over a fixed pair of buffers (slots=2): the plan keeps K
# and V in two slots, the kernel runs once per ring step (the manifest's
# ring_steps), and what a rank binds is 3 blocks of K and of V, not W.
slotted = ops.AllGatherAttention.compile(4, seq=2048, kv_heads=2, head_dim=64, causal=True,
                                         algorithm="ring", slots=2,
                                         config={"BLOCK_M": 64, "BLOCK_N": 64}, cache_dir=cache)
plan = (slotted.folder / "plan.mlir").read_text()
fused = json.loads(Path(slotted.manifest.path).read_text())["fused"]
expect("a slotted AllGatherAttention's plan keeps K and V in ring slots, one chunk per rank",
       plan.count("chunks(1) backend(copy_engine) algorithm(ring) slots(2)") == 2, plan)
expect("its kernel runs once per ring step, 4 steps",
       fused["ring_steps"]["steps"] == 4 and fused["ring_steps"]["state_bytes"] > 0,
       str(fused.get("ring_steps")))
expect("the caller binds 3 blocks of K and of V",
       [(n, s) for n, s, _, _ in slotted.manifest.buffers] == [("K", [1536, 128]),
                                                              ("V", [1536, 128])],
       str(slotted.manifest.buffers))
for what, kwargs in [("a direct gather", {"algorithm": "direct"}),
                     ("tma", {"algorithm": "ring", "backend": "tma"}),
                     ("two chunks per rank", {"algorithm": "ring", "chunks": 2}),
                     ("the bhsd layout", {"algorithm": "ring", "layout": "bhsd"})]:
    ok, got = raises(ValueError, "slots=2 (the only count built) takes algorithm='ring'",
                     lambda kwargs=kwargs: synco.plans.all_gather_attention(
                         world_size=4, seq=2048, kv_heads=2, head_dim=64, slots=2, **kwargs))
    expect(f"slots refuse {what}", ok, got)

# Host tensor descriptors: Triton's fused-attention tutorial as it runs on
# Hopper (examples/attention/flash_attn_tutorial.py, attn_fwd_tutorial_host)
# takes Q, K, V and the output as `TensorDescriptor`s. Each is one
# parameter to the caller; Triton passes its shape and strides after it,
# so the plan binds K and V as the kernel's arguments 5 and 10. A tensor
# passed for one is read by rows ([heads, tokens, head_dim] as [heads *
# tokens, head_dim]); a TensorDescriptor gives its own view, its block
# the kernel's; K and V must be the symmetric buffers, read by rows.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "attention"))
import attention_styles  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

host = ops.AllGatherAttention.compile(
    2, seq=512, kv_heads=2, head_dim=64, config={"BLOCK_M": 64, "BLOCK_N": 64}, chunks=2,
    backend="ldst", layout="bhsd", kernel=attention_styles.kernel("tutorial_host"),
    descriptors=True, num_warps=4, num_stages=2, cache_dir=cache)
expect("a kernel of host descriptors takes one parameter per descriptor",
       [t for _, t in host.manifest.user_params[:5]]
       == ["tensordesc<bf16[64,64]>"] * 4 + ["fp32"], str(host.manifest.user_params[:5]))
expect("its plan binds K and V as the kernel's arguments 5 and 10",
       [(n, a) for n, _, _, a in host.manifest.buffers] == [("K", 5), ("V", 10)]
       and host.manifest.user_param_args[:5] == [0, 5, 10, 15, 20],
       str(host.manifest.buffers))
check_host = runtime.LaunchArguments(host.manifest, "cpu", heap)
hk, hv = symmetric(1 << 20, (2, 512, 64)), symmetric(2 << 20, (2, 512, 64))
hq, ho = torch.zeros((4, 256, 64), dtype=torch.bfloat16), torch.zeros((4, 256, 64),
                                                                      dtype=torch.bfloat16)
host_args = [hq, hk, hv, ho, 0.125] + [0] * 12 + [4, 2, 256, 512]
values, bindings = check_host(host_args)
expect("a tensor for a descriptor is read by rows",
       values[:2] == [(hq.data_ptr(), [1024, 64], [64, 1]), (hk.data_ptr(), [1024, 64], [64, 1])]
       and bindings == [("K", 1 << 20, hk.nbytes), ("V", 2 << 20, hv.nbytes)], str(values[:2]))
expect("the quick pass and the checks one by one agree on descriptors",
       check_host._checked(host_args, None) == (values, bindings))
host.manifest.check_args(0, values)
own = TensorDescriptor(hq, [1024, 64], [64, 1], [64, 64])
expect("a TensorDescriptor gives its own view",
       check_host([own, *host_args[1:]])[0][0] == (hq.data_ptr(), [1024, 64], [64, 1]))
for what, args, text in [
    ("a descriptor of other blocks", [TensorDescriptor(hq, [1024, 64], [64, 1], [32, 64]),
                                      *host_args[1:]], "is a descriptor of [32, 64] blocks"),
    ("K outside the heap", [hq, hk.clone(), *host_args[2:]], "argument 'desc_k' is not symmetric"),
    ("K viewed from inside", [hq, TensorDescriptor(hk, [1023, 64], [64, 1], [64, 64]),
                              *host_args[2:]], "views @K as [1023, 64] (strides [64, 1]): the plan "
                                               "reads it by rows, [1024, 64]"),
    ("a number for a descriptor", [7, *host_args[1:]], "argument 'desc_q' is a tensor descriptor"),
    ("a wrong dtype", [hq.float(), *host_args[1:]], "argument 'desc_q' is torch.float32"),
]:
    ok, got = raises(synco.LaunchError, text, lambda args=args: check_host(args))
    expect(f"refuses {what}", ok, got)
short = list(values)
short[-1] = 256
ok, got = raises(synco.LaunchError, "'N_CTX_KV'", lambda: host.manifest.check_args(0, short))
expect("the plan's fixed scalars count the descriptors' parts", ok, got)
# The grid: a head's first row, `off_z * (N_CTX_KV * H_KV) + off_h_kv *
# N_CTX_KV` with off_z the grid's programs over H, must be one of K's
# heads; a second batch in the grid would read past K.
host.check_args(0, values, grid=(4, 4))
ok, got = raises(synco.LaunchError, "on program [0, 4, 0], the row its head starts at along "
                 "dimension 1 in @K is 1024, past 512",
                 lambda: host.check_args(0, values, grid=(4, 8)))
expect("a grid whose programs would read past K is refused", ok, got)

# A GEMM of host descriptors (examples/ag_gemm/matmul.py's
# matmul_kernel_tma_host, Triton's TMA matmul tutorial's form): A
# all-gathered into it binds argument 0; a reduce-scatter of the partial
# sums it stores through a descriptor binds argument 10 (the descriptor of
# C, after A's and B's with their parts), the partials read by rows from
# the heap, the kernel's store of them rewritten through synco_buffer_P.
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "ag_gemm_matmul", Path(__file__).resolve().parents[2] / "examples" / "ag_gemm" / "matmul.py")
gemm_examples = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gemm_examples)
tma_shape = dict(shape, kernel=gemm_examples.matmul_kernel_tma_host, descriptors=True)
ag_host = ops.AllGatherMatmul.compile(2, chunks=2, backend="ldst", **tma_shape)
expect("AllGatherMatmul takes a GEMM of host descriptors",
       [t for _, t in ag_host.manifest.user_params[:3]]
       == ["tensordesc<bf16[128,64]>", "tensordesc<bf16[64,128]>", "tensordesc<bf16[128,128]>"]
       and [(n, a) for n, _, _, a in ag_host.manifest.buffers] == [("A", 0), ("C", None)],
       str(ag_host.manifest.user_params[:3]))
values, bindings = runtime.LaunchArguments(ag_host.manifest, "cpu", heap)([a, b, c, *scalars])
expect("its A, B and C are read by rows, A from the heap",
       values[:3] == [(a.data_ptr(), [512, 256], [256, 1]), (b.data_ptr(), [256, 256], [256, 1]),
                      (c.data_ptr(), [512, 256], [256, 1])]
       and bindings == [("A", 4096, a.nbytes)], str(values[:3]))
rs_host = ops.MatmulReduceScatter.compile(2, chunks=2, **tma_shape)
synco_params = [p["name"] for p in json.loads(Path(rs_host.manifest.path).read_text())["params"]
                if p["role"] == "synco"]
expect("MatmulReduceScatter takes a GEMM that stores its partials through a host descriptor",
       [(n, a) for n, _, _, a in rs_host.manifest.buffers][:2] == [("P", 10), ("C", None)]
       and "synco_buffer_P" in synco_params, f"{rs_host.manifest.buffers} {synco_params}")
partials = symmetric(8192, (512, 256))
values, bindings = runtime.LaunchArguments(rs_host.manifest, "cpu", heap)([b, b, partials,
                                                                         *scalars])
expect("its partials are read by rows from the heap",
       values[2] == (partials.data_ptr(), [512, 256], [256, 1])
       and bindings == [("P", 8192, partials.nbytes)], f"{values[:3]} {bindings}")

# Ulysses attention: Q, K, V held by tokens (unbound @Qs, @Ks, @Vs, passed
# as buffers) and re-sharded into the kernel's arguments by heads.
ulysses = ops.UlyssesAttention.compile(2, seq=1024, heads=4, kv_heads=2, head_dim=64,
                                       causal=True, config={"BLOCK_M": 64, "BLOCK_N": 64},
                                       cache_dir=cache)
expect("UlyssesAttention binds the head-sharded Q, K, V and passes the token-sharded ones",
       [(n, sh, a) for n, sh, _, a in ulysses.manifest.buffers]
       == [("Qs", [512, 256], None), ("Qh", [1024, 128], 0), ("Ks", [512, 128], None),
           ("Kh", [1024, 64], 1), ("Vs", [512, 128], None), ("Vh", [1024, 64], 2)],
       str(ulysses.manifest.buffers))
ok, got = raises(ValueError, "kv_heads (3) must be a multiple of world_size (2)",
                 lambda: synco.plans.ulysses_attention(world_size=2, seq=1024, heads=6,
                                                       kv_heads=3, head_dim=64))
expect("Ulysses refuses heads that do not divide among the ranks", ok, got)

# All-to-all + GEMM: A's columns re-sharded into rows inside the loop over k.
a2a = ops.AllToAllMatmul.compile(2, m=256, k=512, n=256, config=config, cache_dir=cache)
expect("AllToAllMatmul binds A and passes X",
       [(n, sh, a) for n, sh, _, a in a2a.manifest.buffers]
       == [("X", [512, 256], None), ("A", [256, 512], 0)], str(a2a.manifest.buffers))
ok, got = raises(ValueError, "k (510) must be a multiple of world_size (4)",
                 lambda: synco.plans.all_to_all_matmul(world_size=4, m=256, k=510, n=256))
expect("all-to-all + GEMM refuses columns that do not divide", ok, got)

# GEMM + all-to-all: C produced by the tiles (argument 2), re-sharded into Y.
gemm_a2a = ops.MatmulAllToAll.compile(2, m=256, k=512, n=512, config=config, cache_dir=cache)
expect("MatmulAllToAll binds C and passes Y",
       [(n, sh, a) for n, sh, _, a in gemm_a2a.manifest.buffers]
       == [("C", [256, 512], 2), ("Y", [512, 256], None)], str(gemm_a2a.manifest.buffers))
gemm_a2a2 = ops.MatmulAllToAll.compile(2, m=256, k=512, n=512, chunks=2, config=config,
                                       cache_dir=cache)
copies = json.loads(Path(gemm_a2a2.manifest.path).read_text())["fused"]["reduction_copies"]
expect("GEMM + all-to-all in 2 chunks per rank: 4 copies per rank, each chunk's tiles counted",
       [[c["produced"][0] for c in rank] for rank in copies] == [[2, 3, 0, 1], [0, 1, 2, 3]],
       str([[c["produced"] for c in rank] for rank in copies]))
ok, got = raises(ValueError, "chunks (4) must cut each rank's 256 columns into whole tiles of 128",
                 lambda: synco.plans.matmul_all_to_all(world_size=2, m=256, k=512, n=512,
                                                       chunks=4))
expect("GEMM + all-to-all refuses chunks that would split its column tiles", ok, got)
ok, got = raises(ValueError, "backend must be one of",
                 lambda: synco.plans.matmul_all_to_all(world_size=2, m=256, k=512, n=512,
                                                       backend="nvshmem"))
expect("GEMM + all-to-all refuses a backend it does not know", ok, got)

# A Group needs torch.distributed; operators refuse shapes no plan fits.
ok, got = raises(RuntimeError, "dist.init_process_group", lambda: synco.Group())
expect("a Group without a process group is refused", ok, got)
ok, got = raises(ValueError, "must split into whole tiles",
                 lambda: ops.AllGatherMatmul.compile(2, **{**shape, "m": 300}))
expect("a shape no plan fits is refused", ok, got)
ok, got = raises(synco.LaunchError, "n (192) must be a multiple of BLOCK_N",
                 lambda: ops.AllGatherMatmul.compile(2, **{**shape, "n": 192}))
expect("a partial tile of the mask-less GEMM is refused", ok, got)
# With the default tiles, a rank's 2 row tiles get a swizzle group of 2
# (GROUP_M 8 would span two ranks' blocks, which the passes refuse).
try:
    ops.MatmulReduceScatter.compile(2, m=512, k=256, n=256, chunks=1, cache_dir=cache)
    ok, got = ops._default_config(512, 2)["GROUP_M"] == 2, str(ops._default_config(512, 2))
except synco.CompileError as e:
    ok, got = False, str(e)
expect("default tiles fit a small M", ok, got)

# A machine without the compiler (a GPU machine) finds what the cache holds.
saved = dict(os.environ)
os.environ["SYNCO_BIN"] = ""
os.environ["PATH"] = "/nonexistent"
try:
    again = ops.AllGatherMatmul.compile(2, chunks=2, **shape)
    expect("without the compiler, a cached kernel is found", again.cached and again.folder == ag.folder)
    ok, got = raises(synco.CompileError, "no `synco` command",
                     lambda: ops.AllGatherMatmul.compile(2, chunks=4, **shape))
    expect("without the compiler, an uncached kernel is a CompileError", ok, got)
    ok, got = raises(synco.CompileError, "and no cache built by one",
                     lambda: ops.AllGatherMatmul.compile(2, chunks=2, **{**shape, "cache_dir": scratch / "empty"}))
    expect("without the compiler or a cache, a CompileError says so", ok, got)
finally:
    os.environ.clear()
    os.environ.update(saved)

# The custom ops' fake implementations (what torch.compile traces with).
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

runtime.GROUPS["fake"] = types.SimpleNamespace(world_size=4)
with FakeTensorMode():
    shard = torch.empty((128, 256), dtype=torch.bfloat16)
    weight = torch.empty((256, 512), dtype=torch.bfloat16)
    gathered = torch.ops.synco.all_gather_matmul(shard, weight, 4, "fake")
    scattered = torch.ops.synco.matmul_reduce_scatter(torch.empty((512, 256), dtype=torch.bfloat16),
                                                      weight, 4, "fake")
    # The result's shape follows the group_size argument, not the open
    # groups (torch.compile caches graphs by their arguments).
    gathered2 = torch.ops.synco.all_gather_matmul(shard, weight, 2, "fake")
    reduced = torch.ops.synco.matmul_all_reduce(shard, weight, "fake")
    attended = torch.ops.synco.all_gather_attention(
        torch.empty((128, 512), dtype=torch.bfloat16), shard, shard, "fake", 64, True)
    heads_first = torch.ops.synco.all_gather_attention(
        torch.empty((8, 128, 64), dtype=torch.bfloat16),
        torch.empty((2, 128, 64), dtype=torch.bfloat16),
        torch.empty((2, 128, 64), dtype=torch.bfloat16), "fake", 64, False, False, "bhsd", 0.125)
expect("all_gather_matmul's fake result is [W rows, n]", tuple(gathered.shape) == (512, 512))
expect("matmul_reduce_scatter's is [m / W, n]", tuple(scattered.shape) == (128, 512))
expect("matmul_all_reduce's is [m, n]", tuple(reduced.shape) == (128, 512))
expect("all_gather_attention's is q's", tuple(attended.shape) == (128, 512))
with FakeTensorMode():
    tokens = torch.empty((128, 512), dtype=torch.bfloat16)
    kv = torch.empty((128, 256), dtype=torch.bfloat16)
    by_heads = torch.ops.synco.ulysses_attention(tokens, kv, kv, 4, "fake", 64, True, False)
    by_tokens = torch.ops.synco.ulysses_attention(tokens, kv, kv, 4, "fake", 64, True, True)
    attended_back = torch.ops.synco.attention_all_to_all(
        torch.empty((512, 128), dtype=torch.bfloat16), torch.empty((512, 64), dtype=torch.bfloat16),
        torch.empty((512, 64), dtype=torch.bfloat16), 4, "fake", 64, True)
    resharded = torch.ops.synco.matmul_all_to_all(tokens, torch.empty((512, 1024), dtype=torch.bfloat16), 4,
                                                  "fake")
    projected = torch.ops.synco.all_to_all_matmul(resharded, torch.empty((1024, 512), dtype=torch.bfloat16), 4,
                                                  "fake")
expect("ulysses_attention's is [seq, heads / W * head_dim]", tuple(by_heads.shape) == (512, 128))
expect("ulysses_attention's, re-sharded back, is q's", tuple(by_tokens.shape) == (128, 512))
expect("attention_all_to_all's is [seq / W, heads * head_dim]",
       tuple(attended_back.shape) == (128, 512))
expect("matmul_all_to_all's is [tokens * W, n / W]", tuple(resharded.shape) == (512, 256))
expect("all_to_all_matmul's is [tokens, n]", tuple(projected.shape) == (128, 512))
expect("all_gather_attention's is q's in the bhsd layout", tuple(heads_first.shape) == (8, 128, 64))
expect("all_gather_matmul's follows group_size", tuple(gathered2.shape) == (256, 512))
ok, got = raises(runtime.LaunchError, "group_size is 2, but process group 'fake' has 4 ranks",
                 lambda: torch.ops.synco.all_gather_matmul(torch.empty((128, 256), dtype=torch.bfloat16),
                                                           torch.empty((256, 512), dtype=torch.bfloat16),
                                                           2, "fake"))
expect("a group_size other than the group's is refused, naming it", ok, got)

# all_gather_sdpa takes SDPA's layout with batch 1, and says so otherwise.
group = types.SimpleNamespace(process_group=types.SimpleNamespace(group_name="fake"))
batch2 = torch.empty((2, 8, 128, 64), dtype=torch.bfloat16)
ok, got = raises(runtime.LaunchError, "query has shape (2, 8, 128, 64): all_gather_sdpa takes "
                 "[1, heads, tokens, head_dim] (batch 1)",
                 lambda: synco.ops.all_gather_sdpa(batch2, batch2, batch2, group))
expect("all_gather_sdpa refuses a batch of 2, naming the argument", ok, got)
ok, got = raises(runtime.LaunchError, "key has shape (8, 128, 64)",
                 lambda: synco.ops.all_gather_sdpa(batch2[:1], batch2[0], batch2[0], group))
expect("all_gather_sdpa refuses tensors of different ranks", ok, got)

# A captured launch replays (crates/synco-runtime/docs/graph-capture.md):
# Inductor's CUDA graphs may take in every custom op, so none is tagged
# cudagraph-unsafe (which would split the graph around it).
for name in ("all_gather_matmul", "matmul_reduce_scatter", "matmul_all_reduce",
             "all_gather_attention", "ulysses_attention", "attention_all_to_all",
             "all_to_all_matmul", "matmul_all_to_all"):
    tags = getattr(torch.ops.synco, name).default.tags
    expect(f"{name} may be captured in CUDA graphs", torch.Tag.cudagraph_unsafe not in tags)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
