"""Whether `ptxas`'s register budget explains what a fused attention
kernel costs over its local kernel on one GPU (finding:
`../docs/overhead-one-gpu.md`, "Not the register budget").

The fused kernels of an `overhead.py` cache (16k tokens, 1 chunk per rank,
and 4 for the bundled kernel) are re-assembled by Triton's `ptxas` from
their own PTX with one edit each, into one cache per variant beside the
unedited kernels, then timed by `overhead.py`'s pairs against their local
kernels as compiled:

* `cur`: no edit;
* `capL`, `capL4`, `capL8`, `capL16`: a `.maxnreg` of the local kernel's
  register count plus 0, 4, 8 or 16;
* `nowait` (the strided causal kernel only): the branch to the waited
  path retargeted to the present path, so that only the present path is
  left (every chunk is present in these runs, so the output is the same).

    python register_caps.py build --from CACHE --to DIR   # no GPU: the variant caches
    python register_caps.py run --cache DIR --out FILE    # a GPU machine: the caps
    python register_caps.py run --cache DIR --out FILE --styles strided --causal-only \
        --variants cur,nowait,capL                        # the strided causal kernel

`build` needs the compiler that filled CACHE (or none: the cache's
recorded identity is then used); `run` needs only the caches.
"""

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

ATTENTION = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ATTENTION))
import overhead  # noqa: E402

CAPS = {"capL": 0, "capL4": 4, "capL8": 8, "capL16": 16}
VARIANTS = ["cur", *CAPS, "nowait"]
STYLES = ["bundled", "blocks", "strided", "moved", "descriptors", "rows", "tutorial"]
SEQ, HEAD_DIM, KV_HEADS = 16384, 128, 8


def ptxas_tools():
    import triton
    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def registers(cubin):
    usage = subprocess.run([ptxas_tools() / "cuobjdump", "--dump-resource-usage", cubin],
                           capture_output=True, text=True, check=True).stdout
    return int(re.search(r"REG:(\d+)", usage).group(1))


def assemble(ptx):
    """`ptx` into the cubin beside it; the bytes `ptxas` spilled."""
    log = subprocess.run([ptxas_tools() / "ptxas", "--gpu-name=sm_90a", "-v", ptx,
                          "-o", ptx.with_suffix(".cubin")],
                         capture_output=True, text=True, check=True).stderr
    return int(re.search(r"(\d+) bytes spill stores", log).group(1))


def cap_registers(text, cap):
    assert ".maxnreg" not in text
    return re.sub(r"^(\.reqntid \d+)$", rf"\1\n.maxnreg {cap}", text, count=1, flags=re.M)


def present_path_only(text):
    """The entry's branch to the waited path (`bra.uni` right after the
    conditional branch to the present path) retargeted to the present
    path."""
    edited, count = re.subn(r"(@%p\d+ bra \t(\$L__BB0_\d+);\n\tbra\.uni \t)\$L__BB0_\d+;",
                            r"\1\2;", text, count=1)
    assert count == 1, "no branch pair to the two paths found"
    return edited


def kernel_dirs(cache):
    """(style, causal, chunks, local entry, fused entry) of every pair."""
    for style in STYLES:
        for causal in (False, True):
            local = overhead.local_kernel(style, HEAD_DIM, causal, str(cache))
            for chunks in ((1, 4) if style == "bundled" else (1,)):
                fused = overhead.fused_kernel(style, SEQ, KV_HEADS, HEAD_DIM, causal, "direct",
                                              chunks, str(cache))
                yield (style, causal, chunks, Path(local.manifest.path).parent,
                       Path(fused.manifest.path).parent)


def build(source, target):
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    pairs = list(kernel_dirs(target))
    entries = [p.name for p in target.iterdir() if p.is_dir()]
    for variant in VARIANTS:
        root = target / variant
        root.mkdir()
        shutil.copy(target / "synco-identity.json", root)
        for name in entries:
            (root / name).symlink_to(f"../{name}")
        for style, causal, chunks, local, fused in pairs:
            if variant == "cur" or (variant == "nowait" and (style, causal) != ("strided", True)):
                continue
            (root / fused.name).unlink()
            shutil.copytree(fused, root / fused.name)
            ptx = next((root / fused.name).glob("*.ptx"))
            if variant == "nowait":
                ptx.write_text(present_path_only(ptx.read_text()))
            else:
                cap = registers(next(local.glob("*.cubin"))) + CAPS[variant]
                ptx.write_text(cap_registers(ptx.read_text(), cap))
            spilled = assemble(ptx)
            print(f"{variant:7} {style:11} {'causal' if causal else 'full':6} c{chunks}: "
                  f"{registers(ptx.with_suffix('.cubin'))} registers, {spilled} bytes spilled",
                  flush=True)


def run(cache, out, variants, styles, causal_only):
    """`overhead.py` over LLaMA-3-8B at 16k, each fused variant from its
    own cache."""
    fused_kernel = overhead.fused_kernel

    def from_variant_cache(style, seq, heads_kv, head_dim, causal, algorithm, chunks, root):
        base, _, variant = algorithm.partition("@")
        return fused_kernel(style, seq, heads_kv, head_dim, causal, base, chunks,
                            f"{root}/{variant}")

    overhead.fused_kernel = from_variant_cache
    overhead.MODELS = [m for m in overhead.MODELS if m[0] == "llama3-8b"]
    if causal_only:
        cases = overhead.cases
        overhead.cases = lambda seqs: [case for case in cases(seqs) if case[-1]]
    overhead.FUSED = [(f"direct@{v}", c) for c in (1, 4) for v in variants]
    overhead.STYLE_FUSED = [(f"direct@{v}", 1) for v in variants]
    sys.argv = [sys.argv[0], "--cache", str(cache), "--seqs", str(SEQ),
                "--styles", styles, "--out", str(out)]
    return overhead.main()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--from", dest="source", type=Path, required=True)
    b.add_argument("--to", dest="target", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("--cache", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--variants", default=",".join(["cur", *CAPS]))
    r.add_argument("--styles", default=",".join(STYLES))
    r.add_argument("--causal-only", action="store_true")
    args = parser.parse_args()
    if args.command == "build":
        build(args.source, args.target)
        return 0
    return run(args.cache, args.out, args.variants.split(","), args.styles, args.causal_only)


if __name__ == "__main__":
    sys.exit(main())
