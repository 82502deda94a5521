"""Synco's bridge to Triton 3.6: import kernels, compile fused TTIR.

Driven by the Rust crate `synco-triton`: it writes one JSON request on
stdin and reads one JSON response from the answer file it names
(`synco_bridge.py ANSWER.json`), never from stdout: what Triton, ptxas or
the user's kernel file print (stdout or stderr) stays apart from the
answer, and synco shows it. Triton's and MLIR's errors are captured per
stage, so errors name their stage.

Requests:
  {"op": "import", "path": "k.py" | "k.ttir", "kernel": "name"?,
   "signature": ["*bf16", "i32", ...]?, "constexprs": {"BLOCK_M": 128}?,
   "divisible": ["a_ptr", "K", ...]? (values divisible by 16, as Triton's JIT
   specialises them),
   "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
   "options": {"num_warps": 4, ...}}
  -> {"ok": true, "generic": "<generic MLIR>", "triton_print": "<pretty>",
      "kernel": "name"}

  {"op": "verify", "generic": "...", "triton_print": "...", "target": {...}}
  -> {"ok": true} if Triton parses `generic` to the module it printed as
     `triton_print` (a "round-trip" error with a diff otherwise)

  {"op": "compile", "path": "fused.ttir" (generic TTIR), "out_dir": "...",
   "target": {...}, "options": {...}}
  -> {"ok": true, "kernel": "name", "files": {"ttir": path, "ttgir": ...,
      "llir": ..., "ptx": ..., "cubin": ...}, "signature": ["*bf16", ...],
      "param_names": ["a_ptr", ...],
      "tensordesc_meta": [{"swizzle": 3, "elem_size": 2, "data_type": 9,
      "block_size": [64, 64], "fp4_padded": false}, ...] (per host tensor
      descriptor parameter, the data type a CUtensorMapDataType),
      "metadata": {"shared": ..., "num_warps": ..., ...}}

Errors: {"ok": false, "kind": "missing-triton" | "stage" | "round-trip" |
"input", "stage": "ttgir"?, "message": "..."}.
"""

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import traceback


class BridgeError(Exception):
    def __init__(self, kind, message, stage=None):
        super().__init__(message)
        self.kind = kind
        self.stage = stage


@contextlib.contextmanager
def captured_stderr():
    """Redirects fd 2 (where MLIR's C++ diagnostics go) into a buffer."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        box = {"text": ""}
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            box["text"] = sink.read().decode("utf-8", "replace")


def load_triton():
    try:
        import triton  # noqa: F401
        from triton._C.libtriton import ir, passes  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        raise BridgeError("missing-triton", f"cannot import triton: {exc}")
    import triton

    if triton.__version__ != "3.6.0":
        raise BridgeError(
            "missing-triton", f"Synco needs triton 3.6.0, found {triton.__version__} at {triton.__file__}"
        )


def make_target(spec):
    """The GPUTarget of a request, refused unless the ptxas Triton bundles
    for it can assemble for that architecture (Triton would otherwise run
    every stage and fail in ptxas, or abort)."""
    import re
    import subprocess

    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    target = GPUTarget(spec.get("backend", "cuda"), spec.get("arch", 90), spec.get("warp_size", 32))
    name = sm_arch_from_capability(target.arch)
    ptxas = get_ptxas(target.arch).path
    try:
        usage = subprocess.run([ptxas, "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BridgeError("input", f"cannot run Triton's ptxas ({ptxas}) to check the target: {exc}")
    known = sorted(set(re.findall(r"'(sm_\d+a?)'", usage)), key=lambda n: (int(re.sub(r"\D", "", n)), n))
    if known and name not in known:
        raise BridgeError(
            "input",
            f"target {name}: the ptxas of Triton {triton_version()} cannot assemble for it "
            f"(it knows {', '.join(known)})",
        )
    return target


def triton_version():
    import triton

    return triton.__version__


def parse_user_options(backend, user_options):
    """Triton's options for a request, after checking what the user set:
    every name is one of the backend's options, every value has the type the
    option declares (Triton would take `debug="x"` as true), and the values
    Synco cannot launch are refused: its runtime starts one CTA per program
    (no thread-block clusters), with a power-of-two number of warps."""
    import dataclasses
    import typing

    fields = {f.name: f for f in dataclasses.fields(backend.parse_options({}).__class__)}
    unknown = sorted(set(user_options) - set(fields))
    if unknown:
        raise BridgeError(
            "input",
            f"unknown Triton option(s) {', '.join(unknown)}: Triton {triton_version()}'s options "
            f"for this target are {', '.join(sorted(fields))}",
        )
    for name, value in user_options.items():
        declared = fields[name].type
        allowed = [t for t in typing.get_args(declared) if t is not type(None)] or [declared]
        origin = [typing.get_origin(t) or t for t in allowed]
        if value is None and type(None) in typing.get_args(declared):
            continue
        fits = any(
            (o is bool and isinstance(value, bool))
            or (o is int and isinstance(value, int) and not isinstance(value, bool))
            or (o is str and isinstance(value, str))
            or (o in (tuple, list) and isinstance(value, list))
            or (o is dict and isinstance(value, dict))
            for o in origin
        )
        if not fits:
            kinds = ", ".join(getattr(t, "__name__", str(t)) for t in allowed)
            raise BridgeError("input", f"Triton option {name}={json.dumps(value)}: it takes a {kinds}")
    if user_options.get("num_ctas", 1) != 1:
        raise BridgeError(
            "input",
            f"Triton option num_ctas={user_options['num_ctas']}: Synco's runtime launches one CTA per "
            "program (no thread-block clusters), so num_ctas must be 1",
        )
    warps = user_options.get("num_warps", 4)
    if not (0 < warps <= 32 and warps & (warps - 1) == 0):
        raise BridgeError("input", f"Triton option num_warps={warps}: a program runs 1, 2, 4, 8, 16 or 32 warps")
    return backend.parse_options(
        {k: tuple(v) if isinstance(v, list) else v for k, v in user_options.items()}
    )


def run_stage(name, fn, *args):
    """Runs one compiler stage; a failure names the stage and carries MLIR's
    diagnostics (which hold the source location)."""
    with captured_stderr() as err:
        try:
            result = fn(*args)
            failed = None
        except Exception as exc:  # Triton raises plain exceptions
            failed = exc
    if failed is not None:
        detail = err["text"].strip()
        message = str(failed).strip()
        text = "\n".join(part for part in (detail, message) if part)
        raise BridgeError("stage", text or repr(failed), stage=name)
    if err["text"].strip():
        sys.stderr.write(err["text"])
    return result


# --------------------------------------------------------------------------
# Generic printing
# --------------------------------------------------------------------------

POISON = "__synco_generic_print"


def print_generic(module, context):
    """Triton's own generic-form print of `module`, locations included.

    Triton has no option for generic printing, but MLIR prints the whole
    module generically when verification fails after a pass. A public
    declaration (invalid) makes `symbol-dce` fail verification; the dump
    (MLIR_ENABLE_DUMP=1) then holds the generic module, minus the poison.
    Triton's Python API cannot erase an op, so `module` keeps the poison:
    print anything else from it first.
    """
    from triton._C.libtriton import ir, passes

    builder = ir.builder(context)
    poison = builder.get_or_insert_function(module, POISON, builder.get_function_ty([], []), "public", False)
    module.push_back(poison)
    pm = ir.pass_manager(context)
    old = os.environ.get("MLIR_ENABLE_DUMP")
    os.environ["MLIR_ENABLE_DUMP"] = "1"
    try:
        pm.enable_debug()
        passes.common.add_symbol_dce(pm)
        with captured_stderr() as err:
            try:
                pm.run(module, "synco-generic-print")
            except Exception:
                pass
    finally:
        if old is None:
            del os.environ["MLIR_ENABLE_DUMP"]
        else:
            os.environ["MLIR_ENABLE_DUMP"] = old
    marker = "IR Dump After SymbolDCE Failed"
    text = err["text"]
    at = text.find(marker)
    if at < 0:
        raise BridgeError("stage", "Triton did not print the module in generic form:\n" + text, stage="import")
    dump = text[text.index("\n", at) + 1:]
    lines = dump.split("\n")
    out, skip = [], 0
    for i, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        if f'sym_name = "{POISON}"' in line:
            # `"tt.func"() <{...}> ({` then `}) ... loc(...)`: two lines.
            skip = 1
            continue
        out.append(line)
    # End the text the way mlir-opt writes a module: the op's own print
    # (whose deferred location aliases end in a newline), then a newline.
    text = "\n".join(out).rstrip("\n") + "\n"
    return text + "\n" if text.split("\n")[-2].startswith("#") else text


def parse_text(text, context, suffix=".ttir"):
    from triton._C.libtriton import ir

    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
        path = f.name
    try:
        return run_stage("parse", ir.parse_mlir_module, path, context)
    finally:
        os.unlink(path)


def check_round_trip(before, generic, context):
    """The generic text parsed back by Triton must print the same module as
    `before` (Triton's own print of it, locations included)."""
    reparsed = parse_text(generic, context)
    after = reparsed.str()
    if before != after:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                before.splitlines(True), after.splitlines(True), "triton", "generic re-parsed", n=2
            )
        )
        raise BridgeError("round-trip", "the generic print does not parse back to the same module:\n" + diff)


# --------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------


def load_jit_function(path, name):
    spec = importlib.util.spec_from_file_location("synco_user_kernel", path)
    if spec is None or spec.loader is None:
        raise BridgeError("input", f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    with captured_stderr():
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise BridgeError("input", f"{path}: {type(exc).__name__}: {exc}")
    from triton.runtime.jit import JITFunction

    kernels = {k: v for k, v in vars(module).items() if isinstance(v, JITFunction)}
    if name is None:
        if len(kernels) != 1:
            raise BridgeError(
                "input", f"{path} defines {len(kernels)} @triton.jit kernels ({', '.join(sorted(kernels))}); name one"
            )
        name = next(iter(kernels))
    if name not in kernels:
        raise BridgeError(
            "input", f"{path} has no @triton.jit kernel named '{name}' (it has: {', '.join(sorted(kernels)) or 'none'})"
        )
    return kernels[name]


def build_signature(fn, signature, constexprs):
    """Maps the positional signature list onto the kernel's non-constexpr
    parameters, as `triton.compile(ASTSource(...))` expects."""
    names = list(fn.arg_names)
    constexprs = dict(constexprs or {})
    unknown = [k for k in constexprs if k not in names]
    if unknown:
        raise BridgeError("input", f"unknown constexpr {', '.join(unknown)}; parameters are {', '.join(names)}")
    declared = {p.name for p in fn.params if p.is_constexpr}
    missing = sorted(declared - set(constexprs))
    if missing:
        raise BridgeError("input", f"constexpr parameter(s) without a value: {', '.join(missing)}")
    runtime = [n for n in names if n not in constexprs]
    if len(signature) != len(runtime):
        raise BridgeError(
            "input",
            f"the signature has {len(signature)} types but the kernel has {len(runtime)} runtime parameters "
            f"({', '.join(runtime)})",
        )
    full = {}
    types = iter(signature)
    for n in names:
        full[n] = "constexpr" if n in constexprs else next(types)
    return full, constexprs


def import_kernel(request):
    import triton
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource, IRSource, make_backend

    path = request["path"]
    if not os.path.exists(path):
        raise BridgeError("input", f"{path}: no such file")
    target = make_target(request.get("target", {}))
    backend = make_backend(target)
    options = parse_user_options(backend, dict(request.get("options") or {}))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)

    if path.endswith(".ttir"):
        check_has_kernel(path)
        src = run_stage("parse", IRSource, path, context, backend)
        module = src.module
        name = src.name.lstrip("@")
    elif path.endswith(".py"):
        fn = load_jit_function(path, request.get("kernel"))
        signature, constexprs = build_signature(fn, request.get("signature") or [], request.get("constexprs"))
        attrs = {}
        for name in request.get("divisible") or []:
            if name not in fn.arg_names:
                raise BridgeError("input", f"--divisible names '{name}', which is not a parameter of {fn.__name__}")
            if name in constexprs:
                raise BridgeError("input", f"'{name}' is a constexpr; it cannot also be marked divisible")
            attrs[(fn.arg_names.index(name),)] = [["tt.divisibility", 16]]
        src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
        codegen_fns = backend.get_codegen_implementation(options)
        module_map = backend.get_module_map()
        module = run_stage("ast", src.make_ir, target, options, codegen_fns, module_map, context)
        stages = {}
        backend.add_stages(stages, options, src.language)
        metadata = {"hash": src.hash(), "target": target, **options.__dict__}
        module = run_stage("ttir", stages["ttir"], module, metadata)
        name = fn.__name__
    else:
        raise BridgeError("input", f"{path}: expected a .py file with a @triton.jit kernel or a .ttir file")

    before = module.str()
    generic = print_generic(module, context)
    check_round_trip(before, generic, context)
    return {
        "ok": True,
        "generic": generic,
        "triton_print": before,
        "kernel": name,
        "triton_version": triton.__version__,
    }


def verify_generic(request):
    """Checks that `generic` (e.g. MLIR 22's print of an import) is, to
    Triton, the module it printed as `triton_print`."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    context = ir.context()
    ir.load_dialects(context)
    make_backend(make_target(request.get("target", {}))).load_dialects(context)
    check_round_trip(request["triton_print"], request["generic"], context)
    return {"ok": True}


# --------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------

STAGE_SUFFIX = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "cubin": "cubin"}


def compile_kernel(request):
    import triton
    from triton._C.libtriton import ir
    from triton.compiler.compiler import IRSource, make_backend

    path = request["path"]
    out_dir = request["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    target = make_target(request.get("target", {}))
    backend = make_backend(target)
    context = ir.context()
    src = run_stage("parse", IRSource, path, context, backend)
    user_options = dict(request.get("options") or {})
    parse_user_options(backend, user_options)
    options = backend.parse_options(dict(user_options, **src.parse_options()))
    stages = {}
    backend.add_stages(stages, options, src.language)
    metadata = {"hash": src.hash(), "target": target, **options.__dict__, "triton_version": triton.__version__}
    codegen_fns = backend.get_codegen_implementation(options)
    module = src.make_ir(target, options, codegen_fns, module_map=backend.get_module_map(), context=context)
    name = src.name.lstrip("@")
    check_file_name(name, out_dir)
    files = {}
    # A .ttir input skips its own stage's passes, as triton.compile does;
    # `synco compile` runs canonicalize/cse before handing TTIR over. Of
    # that stage, only loop unrolling runs: the passes ask it for the loop
    # over a split loop's chunks (`tt.loop_unroll_factor`), and it leaves
    # loops without the attribute alone.
    run_stage("loop-unroll", unroll_loops, module, context)
    names = list(stages)
    files["ttir"] = write_artifact(out_dir, name, "ttir", module)
    for ext in names[names.index("ttir") + 1:]:
        module = run_stage(ext, stages[ext], module, metadata)
        files[ext] = write_artifact(out_dir, name, ext, module)
    keep = {
        k: v
        for k, v in metadata.items()
        if isinstance(v, (int, float, str, bool)) or v is None
    }
    signature = [src.signature[i] for i in sorted(src.signature)]
    return {
        "ok": True,
        "kernel": metadata.get("name", name),
        "tensordesc_meta": host_descriptor_meta(metadata.get("tensordesc_meta")),
        "files": files,
        "signature": signature,
        "param_names": param_names(src.src, name, len(signature)),
        "param_divisibility": param_divisibility(src.src, name, len(signature)),
        "metadata": keep,
        "triton_version": triton.__version__,
    }


def unroll_loops(module, context):
    """Triton's TTIR loop unrolling (loops with `tt.loop_unroll_factor`)."""
    from triton._C.libtriton import ir, passes

    pm = ir.pass_manager(context)
    passes.ttir.add_loop_unroll(pm)
    pm.run(module, "loop-unroll")


def host_descriptor_meta(metas):
    """Triton's `tensordesc_meta` (how the kernel reads each host tensor
    descriptor) with each data type as the host encodes it (a
    `CUtensorMapDataType`, which numbers some types differently from the
    device's)."""
    if not metas:
        return []
    from triton.backends.nvidia.driver import TMA_DTYPE_DEVICE_TO_HOST

    return [None if meta is None else {
        "swizzle": meta["swizzle"], "elem_size": meta["elem_size"],
        "data_type": TMA_DTYPE_DEVICE_TO_HOST[meta["elem_type"]],
        "block_size": list(meta["block_size"]), "fp4_padded": bool(meta["fp4_padded"]),
    } for meta in metas]


def param_names(text, kernel, count):
    """The kernel's parameter names, from the entry block of its `tt.func` in
    the generic text (Triton keeps Python names as name locations, which
    print as the SSA names); `argN` where a name is missing."""
    import re

    at = text.find(f'sym_name = "{kernel}"')
    header = re.search(r"\^bb0\((.*)\):", text[at:]) if at >= 0 else None
    names = re.findall(r"%([A-Za-z_][\w$.]*)\s*:", header.group(1)) if header else []
    if len(names) != count:
        names = [f"arg{i}" for i in range(count)]
    return names


def param_divisibility(text, kernel, count):
    """Per parameter, the `tt.divisibility` its `arg_attrs` give the kernel
    (what Triton compiles assuming of the value), or None; all None where
    the attribute list cannot be read."""
    import re

    at = text.find(f'sym_name = "{kernel}"')
    start = text.rfind('"tt.func"', 0, at) if at >= 0 else -1
    opened = text.find("arg_attrs = [", start) if start >= 0 else -1
    if opened < 0 or opened > at:
        return [None] * count
    depth, i = 0, opened + len("arg_attrs = ")
    for j in range(i, len(text)):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(text[j], 0)
        if depth == 0:
            break
    dicts = re.findall(r"\{[^{}]*\}", text[i + 1:j])
    if len(dicts) != count:
        return [None] * count
    found = [re.search(r"tt\.divisibility = (\d+)", d) for d in dicts]
    return [int(f.group(1)) if f else None for f in found]


def check_has_kernel(path):
    """Refuses a Triton IR file with no `tt.func` before Triton parses it
    (Triton 3.6 crashes on a module without one)."""
    with open(path, errors="replace") as f:
        text = f.read()
    if "tt.func" not in text:
        raise BridgeError("input", f"{path}: no tt.func in it; Triton IR holds one kernel")


def check_file_name(name, out_dir):
    """Refuses a kernel name that is not a plain file name: its stages are
    written to `<out_dir>/<name>.<stage>`, which must stay in `out_dir`."""
    plain = (
        name not in ("", ".", "..")
        and os.path.basename(name) == name
        and not any(c in name for c in "/\\\0")
    )
    if not plain:
        raise BridgeError(
            "input",
            f"the kernel's name {name!r} is not a plain file name: its stages would be "
            f"written outside {out_dir}; rename the tt.func",
        )


def write_artifact(out_dir, name, ext, module):
    path = os.path.join(out_dir, f"{name}.{STAGE_SUFFIX.get(ext, ext)}")
    if isinstance(module, bytes):
        with open(path, "wb") as f:
            f.write(module)
    else:
        with open(path, "w") as f:
            f.write(str(module))
    return path


def answer(response):
    """Writes the response to the answer file synco named (argv[1]), apart
    from stdout and stderr, which Triton and the user's code may print to."""
    with open(sys.argv[1], "w") as f:
        json.dump(response, f)


def main():
    try:
        request = json.load(sys.stdin)
    except Exception as exc:
        answer({"ok": False, "kind": "protocol", "message": f"bad request: {exc}"})
        return 2
    try:
        load_triton()
        if request.get("op") == "import":
            response = import_kernel(request)
        elif request.get("op") == "compile":
            response = compile_kernel(request)
        elif request.get("op") == "verify":
            response = verify_generic(request)
        else:
            raise BridgeError("protocol", f"unknown op {request.get('op')!r}")
    except BridgeError as exc:
        response = {"ok": False, "kind": exc.kind, "stage": exc.stage, "message": str(exc)}
    except Exception as exc:
        response = {
            "ok": False,
            "kind": "internal",
            "message": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
        }
    answer(response)
    return 0 if response.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
