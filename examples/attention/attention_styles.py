"""The attention kernels of this folder written other usual ways than
`flash_attn.py`, by style, for the checks and benchmarks that run each
one as a user's own kernel (crates/synco-python/tests/ranks.py,
benches/attention/overhead.py):

* `blocks`: block pointers advanced in a helper's loop, causal attention
  in two stages (`flash_attn_blocks.py`);
* `strided`: pointers read at `start_n * stride` (`flash_attn_strided.py`);
* `moved`: pointers moved by `BLOCK_N * stride` each iteration (the same
  file);
* `descriptors`: tensor descriptors read at an offset the loop carries,
  causal attention in two stages (`flash_attn_desc.py`);
* `rows`: one descriptor over the whole K and V tensors, each head's
  columns read at its offset (`flash_attn_desc_rows.py`);
* `tutorial`: Triton's fused-attention tutorial's form, one descriptor over
  every head's rows of [heads, tokens, head_dim] tensors, read at offsets
  the loop carries from the head's first row (`flash_attn_tutorial.py`;
  layout `bhsd`: see `LAYOUTS`);
* `tutorial_host`: the same kernel as the tutorial runs it on Hopper, Q,
  K, V and the output passed as host tensor descriptors (`DESCRIPTORS`).
"""

import importlib.util
from pathlib import Path

#: (file in this folder, kernel) by style.
STYLES = {"blocks": ("flash_attn_blocks.py", "attn_fwd_blocks"),
          "strided": ("flash_attn_strided.py", "attn_fwd_strided"),
          "moved": ("flash_attn_strided.py", "attn_fwd_moved"),
          "descriptors": ("flash_attn_desc.py", "attn_fwd_desc"),
          "rows": ("flash_attn_desc_rows.py", "attn_fwd_desc_rows"),
          "tutorial": ("flash_attn_tutorial.py", "attn_fwd_tutorial"),
          "tutorial_host": ("flash_attn_tutorial.py", "attn_fwd_tutorial_host")}

#: The layout of Q, K, V and the output each style reads, where it is not
#: [tokens, heads * head_dim] (`synco.ops.AllGatherAttention`'s `layout`).
LAYOUTS = {"tutorial": "bhsd", "tutorial_host": "bhsd"}

#: The styles whose Q, K, V and output are host tensor descriptors
#: (`synco.ops.AllGatherAttention`'s `descriptors`).
DESCRIPTORS = {"tutorial_host"}


def layout(style):
    """`style`'s layout: "bshd" or "bhsd"."""
    return LAYOUTS.get(style, "bshd")


def kernel(style):
    """The `@triton.jit` kernel of `style`."""
    file, name = STYLES[style]
    spec = importlib.util.spec_from_file_location(file[:-3], Path(__file__).parent / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)

