"""The kernel `rate.py` fuses its all-gathers into (in a file of its own,
so that the compile cache, which keys on the kernel's source file, outlives
edits to the benchmark)."""

import triton
import triton.language as tl


@triton.jit
def first_columns(a_ptr, out_ptr, K, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Copies the first COLS columns of program pid's ROWS rows of A."""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    x = tl.load(a_ptr + rows[:, None] * K + cols[None, :])
    tl.store(out_ptr + rows[:, None] * COLS + cols[None, :], x)
