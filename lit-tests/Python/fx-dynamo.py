# synco.fx.backend under torch.compile on CPU: Dynamo hands the backend a
# graph of torch-level ops with functional collectives on a real process
# group (gloo, one rank); the backend fuses both collectives into Synco's
# operators, keeps the rest, and runs the fused graph, whose first fused
# operator asks for the synco.Group of that process group (none is open
# here: the error names the group, and nothing ran). A GPU run with a Group
# open is ranks.py's check_fx.
#
# REQUIRES: synco-python
# RUN: %python %s | FileCheck %s

import os
import socket

import torch
import torch.distributed as dist

import synco
import synco.fx

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
dist.init_process_group("gloo", rank=0, world_size=1)
F = torch.ops._c10d_functional
GROUP = dist.group.WORLD.group_name


def layer(x, w_up, w_down):
    gathered = F.wait_tensor(F.all_gather_into_tensor(x, 1, GROUP))
    hidden = torch.relu(gathered @ w_up)
    return F.wait_tensor(F.reduce_scatter_tensor(hidden @ w_down, "sum", 1, GROUP))


def printing_backend(gm, example_inputs):
    """synco.fx.backend, then the graph it runs."""
    forward = synco.fx.backend(gm, example_inputs)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            print("node:", getattr(node.target, "__name__", node.target))
    return forward


compiled = torch.compile(layer, backend=printing_backend, fullgraph=True)
try:
    compiled(torch.randn(4, 8), torch.randn(8, 16), torch.randn(16, 8))
    print("ran")
except synco.LaunchError as e:
    print("LaunchError:", e)
# CHECK: node: all_gather_matmul
# CHECK-NEXT: node: relu
# CHECK-NEXT: node: matmul_reduce_scatter
# CHECK-NOT: node:
# CHECK: LaunchError: no synco.Group for process group '{{.*}}': open one first
dist.destroy_process_group()
