# synco.fx on CPU (no process group, no GPU): graphs with functional
# collectives next to matmuls, as torch.compile hands a backend (aten ops,
# traced by make_fx in fake mode) and as symbolic_trace makes them, get
# Synco's fused operators; the rest of each graph stays; what does not fit
# is left in place and reported with a warning.
#
# REQUIRES: synco-python
# RUN: %python %s | FileCheck %s

import warnings

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import synco.fx

F = torch.ops._c10d_functional
bf16 = lambda *shape: torch.randn(shape, dtype=torch.bfloat16)  # noqa: E731


def show(gm, report):
    for line in report:
        print("report:", line)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            print("node:", node.target, [str(a) for a in node.args])


# A tensor-parallel MLP layer at aten level: all-gather + matmul, an
# elementwise op, matmul + reduce-scatter.
def mlp(x, w_up, w_down):
    gathered = F.wait_tensor(F.all_gather_into_tensor(x, 2, "tp"))
    hidden = torch.relu(gathered @ w_up)
    return F.wait_tensor(F.reduce_scatter_tensor(hidden @ w_down, "sum", 2, "tp"))


gm = make_fx(mlp, tracing_mode="fake")(bf16(4, 8), bf16(8, 16), bf16(16, 8))
show(gm, synco.fx.fuse_collectives(gm))
# CHECK: report: fused all_gather_into_tensor and mm into synco.all_gather_matmul (all_gather_matmul)
# CHECK-NEXT: report: fused mm_1 and reduce_scatter_tensor into synco.matmul_reduce_scatter (matmul_reduce_scatter)
# CHECK-NEXT: node: synco.all_gather_matmul ['x_1', 'w_up_1', '2', 'tp']
# CHECK-NEXT: node: aten.relu.default ['all_gather_matmul']
# CHECK-NEXT: node: synco.matmul_reduce_scatter ['relu', 'w_down_1', '2', 'tp']
# CHECK-NOT: node:

# Sequence-parallel activations [S / W, B, H]: the gathered [S, B, H]
# reaches the product through a view that merges its leading dimensions,
# and the product leaves through one that splits them again before the
# reduce-scatter. The views move outside the fused operators (the same
# rows, in order); the graph's result keeps its shape.
def mlp_3d(x, w_up, w_down):
    g = F.wait_tensor(F.all_gather_into_tensor(x, 2, "tp"))
    hidden = torch.relu(g.view(-1, 8) @ w_up)
    out = (hidden @ w_down).view(8, 2, 8)
    return F.wait_tensor(F.reduce_scatter_tensor(out, "sum", 2, "tp"))


gm = make_fx(mlp_3d, tracing_mode="fake")(bf16(4, 2, 8), bf16(8, 16), bf16(16, 8))
show(gm, synco.fx.fuse_collectives(gm))
# CHECK: report: fused all_gather_into_tensor and mm into synco.all_gather_matmul (all_gather_matmul)
# CHECK-NEXT: report: fused mm_1 and reduce_scatter_tensor into synco.matmul_reduce_scatter ({{reshape[_a-z0-9]*}})
# CHECK-NEXT: node: aten.reshape.default ['x_1', '[-1, 8]']
# CHECK-NEXT: node: synco.all_gather_matmul ['[[FLAT:reshape[_a-z]*]]', 'w_up_1', '2', 'tp']
# CHECK-NEXT: node: aten.relu.default ['all_gather_matmul']
# CHECK-NEXT: node: synco.matmul_reduce_scatter ['relu', 'w_down_1', '2', 'tp']
# CHECK-NEXT: node: aten.reshape.default ['matmul_reduce_scatter', '[4, 2, 8]']
# CHECK-NOT: node:
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

with FakeTensorMode():
    print("3-d result:", tuple(gm(bf16(4, 2, 8), bf16(8, 16), bf16(16, 8)).shape))
# CHECK: 3-d result: (4, 2, 8)

# A view that merges the last dimension (rows are no longer rows): left.
def merged_columns(x, w):
    g = F.wait_tensor(F.all_gather_into_tensor(x, 2, "tp"))
    return g.view(8, 16) @ w


gm = make_fx(merged_columns, tracing_mode="fake")(bf16(4, 2, 8), bf16(16, 8))
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    print("report:", synco.fx.fuse_collectives(gm)[0])
# CHECK: report: left all_gather_into_tensor: view reshapes the gathered tensor other than by merging its leading dimensions into a matrix's rows (or the graph records no shapes)

# A view that splits the gathered rows into a 3-D operand (the product
# would be 3-D, the fused operator's 2-D): left.
def split_rows(x, w):
    g = F.wait_tensor(F.all_gather_into_tensor(x, 2, "tp"))
    return torch.matmul(g.view(4, 2, 8), w)


gm = make_fx(split_rows, tracing_mode="fake")(bf16(4, 8), bf16(8, 8))
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    print("report:", synco.fx.fuse_collectives(gm)[0])
# CHECK: report: left all_gather_into_tensor: {{.*}} reshapes the gathered tensor other than by merging its leading dimensions into a matrix's rows

# The same from symbolic_trace (torch-level ops), and an all-reduce.
def row_parallel(a, b):
    return F.wait_tensor(F.all_reduce(torch.matmul(a, b), "sum", "tp")) + 1


gm = torch.fx.symbolic_trace(row_parallel)
show(gm, synco.fx.fuse_collectives(gm))
# CHECK: report: fused matmul and all_reduce into synco.matmul_all_reduce (matmul_all_reduce)
# CHECK-NEXT: node: synco.matmul_all_reduce ['a', 'b', 'tp']
# CHECK-NEXT: node: <built-in function add> ['matmul_all_reduce', '1']

# Left alone, each with its reason and a warning: a max-reduction, partial
# sums something else reads, and a gathered tensor read twice.
def not_fused(a, b, x):
    p = a @ b
    top = F.wait_tensor(F.all_reduce(p, "max", "tp"))
    shared = a @ b
    total = F.wait_tensor(F.reduce_scatter_tensor(shared, "sum", 2, "tp")) + shared.sum()
    g = F.wait_tensor(F.all_gather_into_tensor(x, 2, "tp"))
    return top, total, g @ b, g.sum()


gm = make_fx(not_fused, tracing_mode="fake")(bf16(8, 8), bf16(8, 8), bf16(4, 8))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    report = synco.fx.fuse_collectives(gm)
for line in report:
    print("report:", line)
print("warnings:", len(caught), "collectives left:",
      sum("_c10d_functional" in str(n.target) and "wait" not in str(n.target)
          for n in gm.graph.nodes))
# CHECK: report: left all_reduce: its reduction is 'max', not 'sum'
# CHECK-NEXT: report: left reduce_scatter_tensor: something else also reads mm_1's partial sums
# CHECK-NEXT: report: left all_gather_into_tensor: the gathered tensor is not the left operand of one matmul alone
# CHECK-NEXT: warnings: 3 collectives left: 3
