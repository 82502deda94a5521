"""Synco's fused operators in a `torch.fx` graph: the functional
collectives next to the matrix products that consume or produce them, as
`torch.compile` hands a backend (or `torch.fx.symbolic_trace` makes), are
rewritten into `torch.ops.synco.*`, the rest of the graph untouched:

    all_gather_into_tensor(x, W, g) -> wait_tensor -> mm(., b)
        => synco.all_gather_matmul(x, b, W, g)
    mm(a, b) -> reduce_scatter_tensor(., "sum", W, g) -> wait_tensor
        => synco.matmul_reduce_scatter(a, b, W, g)
    mm(a, b) -> all_reduce(., "sum", g) -> wait_tensor
        => synco.matmul_all_reduce(a, b, g)

(`mm` is `torch.mm`, `torch.matmul`, `@` or `aten.mm` / `aten.matmul`.)
Activations of more than two dimensions (a sequence-sharded [S / W, B,
H] gathered along dim 0) usually reach the product through a view that
flattens their leading dimensions, and leave it through one that
restores them before the reduction:

    all_gather -> wait -> view(S * B, H) -> mm
        => synco.all_gather_matmul(view(x, (S / W * B, H)), b, W, g)
    mm -> view(S, B, N) -> reduce_scatter (dim 0) -> wait
        => view(synco.matmul_reduce_scatter(a, b, W, g), (S / W, B, N))

(the same rows in the same order, row-major), where the graph records
the shapes (`torch.compile`'s graphs do; `view`, `reshape` and
`_unsafe_view`).
A collective that does not fit (another reduction, an intermediate that
something else reads too, no product beside it) is left as it was and
reported: `fuse_collectives` returns one line per collective, and warns
for those left alone. The fused operators run on the `synco.Group` opened
for the collective's process group (see `synco.ops`).

    gm = torch.fx.symbolic_trace(layer)
    report = synco.fx.fuse_collectives(gm)
    torch.compile(layer, backend=synco.fx.backend)
"""

import operator
import warnings

import torch

from . import ops  # noqa: F401  (registers torch.ops.synco.*)

_FUNCTIONAL = torch.ops._c10d_functional
_MATMULS = {torch.mm, torch.matmul, operator.matmul, torch.ops.aten.mm, torch.ops.aten.matmul}


def _packet(target):
    """An op overload's packet (`aten.mm.default` -> `aten.mm`); anything
    else as it is."""
    return getattr(target, "overloadpacket", target)


def _is(node, *targets):
    return node.op == "call_function" and _packet(node.target) in targets


def _arg(node, index, name):
    return node.args[index] if len(node.args) > index else node.kwargs.get(name)


def _only_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _is_matmul(node):
    return _is(node, *_MATMULS) and len(node.args) == 2 and not node.kwargs


_VIEWS = {torch.ops.aten.view, torch.ops.aten.reshape, torch.ops.aten._unsafe_view,
          torch.reshape, "view", "reshape"}


def _shape(node):
    """The shape the graph records for `node`'s value, if it does."""
    value = node.meta.get("val", node.meta.get("example_value"))
    shape = getattr(value, "shape", None)
    return None if shape is None else tuple(int(d) for d in shape)


def _is_view(node):
    if node.op == "call_method":
        return node.target in _VIEWS
    return _is(node, *(v for v in _VIEWS if not isinstance(v, str)))


def _flattens_rows(before, after):
    """Whether a view from shape `before` to `after` only merges or splits
    the leading dimensions, keeping the last: rows stay rows, in order."""
    return (before is not None and after is not None and len(before) >= 2 and len(after) >= 2
            and before[-1] == after[-1] and _rows(before) == _rows(after))


def _rows(shape):
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return rows


def fuse_collectives(gm):
    """Rewrites `gm` (a `torch.fx.GraphModule`) in place; returns what it
    did, one line per collective."""
    report = []
    for node in list(gm.graph.nodes):
        if node.graph is None:  # erased by an earlier rewrite
            continue
        if _is(node, _FUNCTIONAL.all_gather_into_tensor):
            report.append(_fuse_gather(gm, node))
        elif _is(node, _FUNCTIONAL.reduce_scatter_tensor, _FUNCTIONAL.all_reduce):
            report.append(_fuse_reduction(gm, node))
    for line in report:
        if not line.startswith("fused"):
            warnings.warn(f"synco.fx: {line}", stacklevel=2)
    gm.graph.lint()
    gm.recompile()
    return report


def _fuse_gather(gm, gather):
    name = gather.name
    wait = _only_user(gather)
    if wait is None or not _is(wait, _FUNCTIONAL.wait_tensor):
        return f"left {name}: its result is not awaited by one wait_tensor"
    product, view = _only_user(wait), None
    if product is not None and _is_view(product):
        view, product = product, _only_user(product)
        if not _flattens_rows(_shape(wait), _shape(view)) or len(_shape(view)) != 2:
            return (f"left {name}: {view.name} reshapes the gathered tensor other than by "
                    "merging its leading dimensions into a matrix's rows (or the graph "
                    "records no shapes)")
    operand = view if view is not None else wait
    if product is None or not _is_matmul(product) or product.args[0] is not operand:
        return f"left {name}: the gathered tensor is not the left operand of one matmul alone"
    x, size = _arg(gather, 0, "input"), _arg(gather, 1, "group_size")
    group = _arg(gather, 2, "group_name")
    with gm.graph.inserting_before(product):
        if view is not None:
            x = gm.graph.call_function(torch.ops.aten.reshape.default,
                                       (x, [-1, _shape(view)[-1]]))
        fused = gm.graph.call_function(torch.ops.synco.all_gather_matmul,
                                       (x, product.args[1], size, group))
    product.replace_all_uses_with(fused)
    matmul = product.name
    for dead in (product, view, wait, gather):
        if dead is not None:
            gm.graph.erase_node(dead)
    return f"fused {name} and {matmul} into synco.all_gather_matmul ({fused.name})"


def _fuse_reduction(gm, collective):
    name = collective.name
    scatter = _is(collective, _FUNCTIONAL.reduce_scatter_tensor)
    reduce_op = _arg(collective, 1, "reduce_op")
    group = _arg(collective, 3 if scatter else 2, "group_name")
    product, view = collective.args[0], None
    if reduce_op != "sum":
        return f"left {name}: its reduction is {reduce_op!r}, not 'sum'"
    if isinstance(product, torch.fx.Node) and _is_view(product):
        view, product = product, product.args[0]
        if _only_user(view) is not collective:
            return f"left {name}: something else also reads {view.name}'s partial sums"
        if not isinstance(product, torch.fx.Node) or not _flattens_rows(_shape(product),
                                                                          _shape(view)) \
                or len(_shape(product)) != 2:
            return (f"left {name}: {view.name} reshapes the product other than by splitting "
                    "a matrix's rows (or the graph records no shapes)")
    if not isinstance(product, torch.fx.Node) or not _is_matmul(product):
        return f"left {name}: its input is no matmul's result"
    if _only_user(product) is not (view or collective):
        return f"left {name}: something else also reads {product.name}'s partial sums"
    wait = _only_user(collective)
    if wait is None or not _is(wait, _FUNCTIONAL.wait_tensor):
        return f"left {name}: its result is not awaited by one wait_tensor"
    fused_op = "matmul_reduce_scatter" if scatter else "matmul_all_reduce"
    with gm.graph.inserting_before(wait):
        sized = (_arg(collective, 2, "group_size"),) if scatter else ()
        fused = gm.graph.call_function(getattr(torch.ops.synco, fused_op),
                                       (product.args[0], product.args[1], *sized, group))
        if view is not None:
            # (The collectives scatter dim 0: [S, B, N] -> [S / W, B, N].)
            rows, *rest = _shape(view)
            shape = [rows // sized[0] if scatter else rows, *rest]
            fused = gm.graph.call_function(torch.ops.aten.reshape.default, (fused, shape))
    wait.replace_all_uses_with(fused)
    matmul = product.name
    for dead in (wait, collective, view, product):
        if dead is not None:
            gm.graph.erase_node(dead)
    return f"fused {matmul} and {name} into synco.{fused_op} ({fused.name})"


def backend(gm, example_inputs):
    """A `torch.compile` backend: the graph with Synco's fused operators,
    run as it is (eager)."""
    del example_inputs
    fuse_collectives(gm)
    return gm.forward


__all__ = ["backend", "fuse_collectives"]
