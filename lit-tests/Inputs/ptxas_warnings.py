"""Assembles PTX files with the `ptxas` Triton compiles with, for sm_90a, and
prints its warnings and numbered notes, one per line, or that there were
none: what Triton hides (a serialised `wgmma` is the note "(C7515)
Potential Performance Loss").

    python ptxas_warnings.py KERNEL.ptx ...
"""
import os
import re
import subprocess
import sys
import tempfile

from triton.backends.nvidia.compiler import get_ptxas

# The one Triton runs (its bundled one, or TRITON_PTXAS_PATH's), as the
# bridge finds it.
PTXAS = get_ptxas(90).path


def warnings(ptx):
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [PTXAS, "-arch=sm_90a", "-v", ptx, "-o", os.path.join(out, "kernel.cubin")],
            capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{ptx}: ptxas failed: {done.stderr.strip()}")
    lines = (done.stdout + done.stderr).splitlines()
    return [line for line in lines if "warning" in line or re.search(r"\(C\d+\)", line)]


def main():
    for ptx in sys.argv[1:]:
        found = warnings(ptx)
        name = os.path.basename(ptx)
        for line in found:
            print(f"{name}: {line.strip()}")
        if not found:
            print(f"{name}: no ptxas warnings or notes")


if __name__ == "__main__":
    main()
