# The Python package, on a machine without a GPU: plan templates (each
# plan they write verifies in synco-opt; arguments no plan could say are
# refused, naming the argument), compiling through the on-disk cache (a
# second call with the same inputs compiles nothing; another constexpr
# compiles again), launch manifests, and the runtime's check of a launch's
# arguments, raised in Python before any work is issued.
#
# REQUIRES: triton, synco-python
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %repo %t

import subprocess
import sys
from pathlib import Path

import synco

repo, scratch = Path(sys.argv[1]), Path(sys.argv[2])
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


# Templates: every plan they write is one synco-opt verifies.
for name, plan in [
    ("all_gather_matmul", synco.plans.all_gather_matmul(world_size=4, m=8192, k=4096, n=7168)),
    ("matmul_reduce_scatter", synco.plans.matmul_reduce_scatter(world_size=2, m=8192, n=4096,
                                                                 chunks=4, backend="ldst")),
    ("matmul_all_reduce", synco.plans.matmul_all_reduce(world_size=8, m=1024, n=4096,
                                                         algorithm="two_shot")),
    ("all_gather_matmul ring", synco.plans.all_gather_matmul(
        world_size=4, m=8192, k=4096, n=7168, chunks=2, backend="ldst", algorithm="ring")),
    ("all_gather_attention ring", synco.plans.all_gather_attention(
        world_size=4, seq=4096, kv_heads=8, head_dim=128, algorithm="ring")),
    ("all_gather_attention bhsd", synco.plans.all_gather_attention(
        world_size=4, seq=4096, kv_heads=8, head_dim=128, layout="bhsd")),
]:
    run = subprocess.run(["synco-opt", "-", "-o", "/dev/null"], input=plan, text=True,
                         capture_output=True)
    expect(f"template {name} verifies", run.returncode == 0, run.stderr)

for call, text in [
    (lambda: synco.plans.all_gather_matmul(world_size=0, m=8192, k=1, n=1),
     "world_size must be a positive int, not 0"),
    (lambda: synco.plans.all_gather_matmul(world_size=3, m=8192, k=1, n=1),
     "m (8192) must split into whole tiles of block_m (128) rows on each of the 3 ranks"),
    (lambda: synco.plans.matmul_all_reduce(world_size=2, m=1024, n=64, algorithm="ring"),
     "algorithm must be 'one_shot' or 'two_shot', not 'ring'"),
    (lambda: synco.plans.matmul_reduce_scatter(world_size=2, m=1024, n=64, dtype="fp8"),
     "dtype must be one of"),
    (lambda: synco.plans.all_gather_attention(world_size=2, seq=1024, kv_heads=2, head_dim=64,
                                              algorithm="two_shot"),
     "algorithm must be one of ('direct', 'ring'), not 'two_shot'"),
    (lambda: synco.plans.all_gather_attention(world_size=2, seq=1024, kv_heads=2, head_dim=64,
                                              layout="sbhd"),
     "layout must be 'bshd' or 'bhsd', not 'sbhd'"),
    (lambda: synco.plans.ulysses_attention(world_size=4, seq=1000, heads=8, kv_heads=4,
                                           head_dim=64),
     "m (1000) must split into whole tiles of block_m (128) rows on each of the 4 ranks"),
    (lambda: synco.plans.ulysses_attention(world_size=4, seq=1024, heads=6, kv_heads=2,
                                           head_dim=64),
     "heads (6) must be a multiple of world_size (4)"),
    (lambda: synco.plans.ulysses_attention(world_size=2, seq=1024, heads=8, kv_heads=4,
                                           head_dim=64, reshard_in=False),
     "reshard_in=False needs reshard_out=True: the plan would move nothing"),
]:
    ok, got = raises(ValueError, text, call)
    expect(f"template refuses: {text}", ok, got)

# The [heads, tokens, head_dim] layout: K and V gathered along dim(1).
bhsd = synco.plans.all_gather_attention(world_size=2, seq=1024, kv_heads=2, head_dim=64,
                                        layout="bhsd")
expect("bhsd template: [kv_heads, seq, head_dim] gathered along dim(1)",
       "!chunk.buffer<2x1024x64xbf16> bind(1)" in bhsd
       and "chunk.all_gather @K dim(1)" in bhsd and "chunk.consume @V dim(1) tile(64)" in bhsd,
       bhsd)

# Attention + all-to-all alone: only the output's buffers and its
# all-to-all, Q, K and V left to the kernel's arguments.
back = synco.plans.ulysses_attention(world_size=2, seq=1024, heads=8, kv_heads=4, head_dim=64,
                                     reshard_in=False, reshard_out=True, out_backend="ldst")
expect("attention + all-to-all template: the output re-sharded, nothing gathered in",
       "chunk.plan @attention_all_to_all" in back
       and "chunk.produce @tiles @Oh dim(0) tile(128)" in back
       and "chunk.all_to_all @Oh into @Os dim(0) chunks(1) to(1) backend(ldst)" in back
       and "@Qh" not in back and "chunk.consume" not in back, back)

# Compiling, cached: scalars of several types (Triton/scalar-params.test).
scale = (repo / "lit-tests/Inputs/scale_kernel.py", "scale_kernel")
cache = scratch / "cache"
options = dict(signature="*fp32,*fp32,fp32,fp16,bf16,i64,i1", constexprs={"BLOCK": 256}, cache_dir=cache)
first = synco.compile(scale, **options)
second = synco.compile(scale, **options)
expect("the first compile builds", not first.cached)
expect("the same inputs come from the cache", second.cached and second.folder == first.folder)
other = synco.compile(scale, **{**options, "constexprs": {"BLOCK": 512}})
expect("another constexpr compiles again", not other.cached and other.folder != first.folder)
expect("the manifest lists the user's parameters",
       first.manifest.user_params == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("alpha", "fp32"),
                                      ("beta", "fp16"), ("gamma", "bf16"), ("n", "i64"), ("flag", "i1")],
       str(first.manifest.user_params))
first.check_args(0, [0x1000, 0x2000, 0.5, 1.0, -2.0, 1 << 40, True])
for args, kind, text in [
    ([0x1000, 0x2000, 0.5, 1.0, -2.0, 10], synco.LaunchError,
     "kernel 'scale_kernel' takes 7 arguments of its own, 6 were given"),
    ([0x1000, 0x2000, "x", 1.0, -2.0, 10, True], TypeError,
     "argument 'alpha' has type fp32: expected a float, got str"),
    ([0x1000, 0x2000, 0.5, 1.0, -2.0, 10, 3], TypeError,
     "argument 'flag' has type i1: expected a bool"),
]:
    ok, got = raises(kind, text, lambda: first.check_args(0, args))
    expect(f"check_args refuses: {text}", ok, got)
ok, got = raises(synco.CompileError, "error", lambda: synco.compile(
    scale, **{**options, "signature": "*fp32"}))
expect("a signature that does not fit is synco import's error", ok, got)

# A @triton.jit function is keyed by Triton's own key too (it covers the
# functions the kernel calls): the same kernel given as a function and as
# (path, name) compiles into the same result, under another key.
sys.path.insert(0, str(repo / "lit-tests/Inputs"))
import scale_kernel  # noqa: E402

as_function = synco.compile(scale_kernel.scale_kernel, **options)
expect("a @triton.jit function compiles", not as_function.cached)
expect("keyed apart from (path, name)", as_function.folder != first.folder)
expect("into the same manifest", as_function.manifest.user_params == first.manifest.user_params)
expect("and then comes from the cache", synco.compile(scale_kernel.scale_kernel, **options).cached)

# A fused kernel: the tutorial's all-gather + GEMM. The plan fixes X's row
# stride (4096) and bounds M (8192): a launch with another is refused
# before any work, with the runtime's own message.
tutorial = synco.compile(
    (repo / "examples/tutorial/linear_gelu.py", "linear_gelu_kernel"),
    signature="*bf16,*bf16,*fp32,*bf16,i32,i32,i32,i32,i32,i32",
    constexprs={"stride_xk": 1, "stride_wn": 1, "stride_yn": 1,
                "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64},
    plan=(repo / "examples/tutorial/plan.mlir").read_text(), pipeline="synco-fuse", cache_dir=cache)
expect("the fused kernel's plan has 2 ranks", tutorial.manifest.world_size == 2)
good = [0x1000, 0x2000, 0x3000, 0x4000, 8192, 7168, 4096, 4096, 7168, 7168]
tutorial.check_args(1, good)
wrong_stride = good[:7] + [1024] + good[8:]
ok, got = raises(synco.LaunchError, "argument 7 ('stride_xm')",
                 lambda: tutorial.check_args(1, wrong_stride))
expect("a row stride the plan does not fix is refused", ok, got)
ok, got = raises(synco.LaunchError, "'M'", lambda: tutorial.check_args(0, [*good[:4], 16384, *good[5:]]))
expect("an M beyond X's rows is refused", ok, got)

# Triton's attention tutorial's form (examples/attention/flash_attn_tutorial.py)
# fused with a [kv_heads, seq, head_dim] plan: each head's rows start at
# `head * N_CTX_KV`, so the plan fixes N_CTX_KV (argument 20) to the whole
# sequence; a causal rank's own prefix there is refused at launch.
sys.path.insert(0, str(repo / "examples/attention"))
import attention_styles  # noqa: E402

attention = synco.ops.AllGatherAttention.compile(
    2, seq=1024, kv_heads=2, head_dim=64, causal=True, config={"BLOCK_M": 64, "BLOCK_N": 64},
    chunks=2, layout="bhsd", kernel=attention_styles.kernel("tutorial"), num_warps=4,
    num_stages=2, cache_dir=cache)
strides = [4 * 512 * 64, 512 * 64, 64, 2 * 1024 * 64, 1024 * 64, 64] * 2
whole = [0x1000, 0x2000, 0x3000, 0x4000, 0.125, *strides, 4, 2, 512, 1024]
attention.check_args(0, whole)
ok, got = raises(synco.LaunchError, "'N_CTX_KV'",
                 lambda: attention.check_args(0, whole[:-1] + [512]))
expect("the tutorial kernel with N_CTX_KV other than the sequence is refused", ok, got)

# A manifest that does not load.
broken = scratch / "broken.json"
broken.write_text('{"format": "synco-launch-manifest"}')
ok, got = raises(synco.ManifestError, "is not a launch manifest", lambda: synco.Manifest.load(broken))
expect("a broken manifest is a ManifestError", ok, got)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
