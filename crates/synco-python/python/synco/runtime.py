"""Running fused kernels in a PyTorch job, one rank per process.

    group = synco.Group()                       # after dist.init_process_group
    a = group.empty((m, k), torch.bfloat16)     # symmetric: in every rank's heap
    kernel = group.load(synco.compile(...))
    kernel(grid, a, b, c, m, n, k, k, n, n)     # on torch's current stream
    group.wait()                                # the watchdog

A `Group` is this rank's symmetric heap (one CUDA allocation per rank,
its peers' mapped through CUDA IPC handles exchanged over the process
group) on the current CUDA device, the one PyTorch uses. Tensors the plan
moves between ranks must live in it, at the same offset on every rank:
`Group.empty` allocates them collectively (every rank, same shapes, same
order) and checks that the offsets agree. Launches go on torch's current
stream and every argument is checked before any work is issued: a wrong
shape, dtype, device or layout, a tensor outside the heap where the plan
needs a symmetric one, or a plan for another world size raises
`LaunchError` naming the argument.
"""

import math
from typing import NamedTuple, Optional

import torch
import torch.distributed as dist

from . import _native
from ._native import LaunchError, WatchdogError, descriptor_type

#: Torch dtypes of the element types in Triton signatures and plans.
DTYPES = {
    "bf16": torch.bfloat16, "fp16": torch.float16, "f16": torch.float16,
    "fp32": torch.float32, "f32": torch.float32, "fp64": torch.float64, "f64": torch.float64,
    "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i32": torch.int32,
    "i64": torch.int64, "i1": torch.bool,
}

DEFAULT_HEAP_BYTES = 1 << 30

#: Open groups by their process group's name (for `synco.ops`' custom ops).
GROUPS = {}


class SymmetryError(LaunchError):
    """Ranks allocated different symmetric buffers (shapes or order)."""


class Group:
    """This rank's share of a symmetric heap across `process_group` (the
    default group if none), on torch's current CUDA device. Opening it is
    collective. `peer_timeout`: seconds a launch may wait for a peer (its
    start, its kernel, its chunks) before `wait` raises `WatchdogError`."""

    def __init__(self, process_group=None, heap_bytes=DEFAULT_HEAP_BYTES, device=None,
                 peer_timeout=10.0):
        if not dist.is_initialized():
            raise RuntimeError("synco.Group needs torch.distributed: call "
                               "dist.init_process_group first")
        self.process_group = process_group or dist.group.WORLD
        self.rank = dist.get_rank(self.process_group)
        self.world_size = dist.get_world_size(self.process_group)
        self.device = torch.device("cuda", torch.cuda.current_device() if device is None
                                   else torch.device(device).index)
        # (The primary context PyTorch uses, made current.)
        torch.cuda.set_device(self.device)
        torch.cuda.current_stream(self.device).synchronize()
        self.heap_bytes = heap_bytes
        self._node = _native.Node.open_process(self.rank, self.world_size, self.device.index,
                                               heap_bytes, self._all_gather_bytes)
        self._node.set_peer_timeout(peer_timeout)
        self._bases = [self._node.heap_base(r) for r in range(self.world_size)]
        self.heap = Heap(self._bases[self.rank], heap_bytes)
        GROUPS[self.process_group.group_name] = self

    def _all_gather(self, value):
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, value, group=self.process_group)
        return gathered

    def _all_gather_bytes(self, mine):
        return [bytes(b) for b in self._all_gather(bytes(mine))]

    def empty(self, shape, dtype):
        """A tensor in the symmetric heap, uninitialised: collective, every
        rank with the same shape and dtype in the same order."""
        shape = tuple(int(s) for s in shape)
        nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        offset = self._node.alloc(max(nbytes, 1))
        placed = self._all_gather((offset, nbytes))
        if any(p != (offset, nbytes) for p in placed):
            raise SymmetryError(
                f"symmetric buffers differ between ranks: (offset, bytes) per rank {placed}; "
                "every rank must allocate the same shapes in the same order")
        return _HeapBytes(self, offset, nbytes).tensor().view(dtype).view(shape)

    def offset_of(self, tensor, name="tensor"):
        """`tensor`'s offset in this rank's heap (see `Heap.offset_of`)."""
        return self.heap.offset_of(tensor, name)

    def load(self, compiled):
        """A compiled kernel (`synco.compile`'s result) loaded on this rank."""
        return Kernel(self, compiled)

    def wait(self, timeout=60.0):
        """Waits at most `timeout` seconds for this rank's launches on
        torch's current stream (where launches go, and where a CUDA graph
        replays them), then checks its error buffer: `WatchdogError` names
        the rank, chunk and epoch of a wait that timed out on the GPU (a
        peer that never sent its chunk), or the peer a stream waited for
        longer than the group's `peer_timeout` (a peer that died or never
        launched); after it, the group launches nothing more."""
        self._node.wait(timeout, torch._C._cuda_getCurrentRawStream(self.device.index))

    def reset_heap(self):
        """Frees every symmetric buffer (collective; tensors from `empty`
        must not be used after it)."""
        self._node.reset_heap()


class _HeapBytes:
    """Bytes of the heap as a CUDA array (`__cuda_array_interface__`); the
    tensors made from it keep it, and so the group, alive."""

    def __init__(self, group, offset, nbytes):
        self.group = group
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "version": 3, "strides": None,
            "data": (group._bases[group.rank] + offset, False),
        }

    def tensor(self):
        return torch.as_tensor(self, device=self.group.device)


class Heap:
    """Where this rank's symmetric heap lies: `nbytes` from address `base`."""

    def __init__(self, base, nbytes):
        self.base, self.nbytes = base, nbytes

    def offset_of(self, tensor, name="tensor"):
        """`tensor`'s offset in the heap, or `LaunchError` naming `name` if
        it does not lie in it (a tensor the plan moves between ranks must
        be symmetric: from `Group.empty`)."""
        start = tensor.data_ptr() - self.base
        if start < 0 or start + tensor.nbytes > self.nbytes:
            raise LaunchError(f"{name} is not symmetric: the plan moves it between ranks, so it "
                              "must lie in the group's heap (allocate it with Group.empty)")
        return start


class _Spec(NamedTuple):
    """What a valid tensor argument is: its dtype (None: any), the plan
    buffer it carries and that buffer's shape (None: none), the block the
    kernel reads where the parameter is a host tensor descriptor (None: a
    pointer), and the element type as the kernel names it."""

    dtype: Optional[torch.dtype]
    plan_buffer: Optional[str]
    shape: Optional[tuple]
    block: Optional[list]
    element: str


class LaunchArguments:
    """A launch's arguments as the runtime takes them, checked first:
    tensors for pointer parameters (on `device`, of the parameter's dtype,
    contiguous; of the plan buffer's shape and in `heap` where the plan
    binds the argument), Python numbers for scalars, and `buffers` for
    plan buffers no argument carries. Needs no GPU (the checks are the
    same on any device)."""

    def __init__(self, manifest, device, heap):
        self.manifest, self.device, self.heap = manifest, torch.device(device), heap
        self.params = manifest.user_params
        self.plan_buffers = {name: (tuple(shape), element, arg)
                             for name, shape, element, arg in manifest.buffers}
        # Plan buffers by the position of the user parameter they bind (a
        # kernel argument index counts a host descriptor's parts too).
        position = {arg: i for i, arg in enumerate(manifest.user_param_args)}
        self.bound_args = {position[arg]: name for name, (_, _, arg) in self.plan_buffers.items()
                           if arg in position}
        # What a valid argument is, per parameter (None: a scalar), and per
        # plan buffer no argument carries.
        self._specs = [self._param_spec(ty, self.bound_args.get(i))
                       for i, (_, ty) in enumerate(self.params)]
        self._unbound = {name: self._spec(element, name)
                         for name, (_, element, arg) in self.plan_buffers.items() if arg is None}

    def _param_spec(self, ty, plan_buffer):
        if ty.startswith("*"):
            return self._spec(ty[1:], plan_buffer)
        descriptor = descriptor_type(ty)
        if descriptor is not None:
            element, block = descriptor
            return self._spec(element, plan_buffer, block)
        return None

    def _spec(self, element, plan_buffer, block=None):
        shape = self.plan_buffers[plan_buffer][0] if plan_buffer is not None else None
        return _Spec(DTYPES.get(element), plan_buffer, shape, block, element)

    def __call__(self, args, buffers=None):
        """`(values, bindings)`: the kernel's argument values (addresses
        for tensors) and `(plan buffer, heap offset, bytes)` per binding.
        One quick pass when every argument is right; otherwise the checks
        below say what is wrong."""
        valid = self._valid(args, buffers)
        return valid if valid is not None else self._checked(args, buffers)

    def _valid(self, args, buffers):
        if len(args) != len(self._specs):
            return None
        values, bindings = [], []
        fits = self._fits
        for spec, value in zip(self._specs, args):
            if spec is None:
                if isinstance(value, torch.Tensor):
                    return None
                values.append(value)
                continue
            address = fits(value, spec, bindings)
            if address is None:
                return None
            values.append(address if spec.block is None else rows_view(value, spec.block))
        if buffers:
            for name, tensor in buffers.items():
                spec = self._unbound.get(name)
                if spec is None or fits(tensor, spec, bindings) is None:
                    return None
        return values, bindings

    def _fits(self, tensor, spec, bindings):
        """`tensor`'s address if it is what `spec` asks for (its binding,
        if it is a plan buffer's, appended to `bindings`); else None."""
        dtype, plan_buffer, shape, _, _ = spec
        if not (isinstance(tensor, torch.Tensor) and tensor.device == self.device
                and (dtype is None or tensor.dtype == dtype) and tensor.is_contiguous()):
            return None
        address = tensor.data_ptr()
        if plan_buffer is None:
            return address
        offset = address - self.heap.base
        nbytes = tensor.nbytes
        if offset < 0 or offset + nbytes > self.heap.nbytes or tensor.shape != shape:
            return None
        bindings.append((plan_buffer, offset, nbytes))
        return address

    def _checked(self, args, buffers):
        """`__call__`'s result, each argument checked in turn: the first
        that is wrong raises `LaunchError` naming it."""
        if len(args) != len(self.params):
            raise LaunchError(f"kernel '{self.manifest.kernel}' takes {len(self.params)} "
                              f"arguments of its own ({', '.join(n for n, _ in self.params)}), "
                              f"{len(args)} were given")
        values, bindings = [], []
        for index, ((name, ty), value) in enumerate(zip(self.params, args)):
            spec = self._specs[index]
            if spec is not None and spec.block is not None:
                values.append(self._descriptor(name, value, spec, bindings))
                continue
            if not ty.startswith("*"):
                if isinstance(value, torch.Tensor):
                    raise LaunchError(f"argument '{name}' has type {ty}: pass a Python number, "
                                      "not a tensor")
                values.append(value)
                continue
            plan_buffer = self.bound_args.get(index)
            what = f"argument '{name}'"
            self._check_tensor(what, ty[1:], value, plan_buffer)
            if plan_buffer is not None:
                bindings.append((plan_buffer, self.heap.offset_of(value, what), value.nbytes))
            values.append(value.data_ptr())
        for name, tensor in (buffers or {}).items():
            if self.plan_buffers.get(name, (None, None, 0))[2] is not None:
                unbound = [n for n, (_, _, a) in self.plan_buffers.items() if a is None]
                raise LaunchError(f"buffers: the plan has no buffer @{name} that an argument does "
                                  f"not carry (those are {unbound})")
            what = f"buffers['{name}']"
            self._check_tensor(what, self.plan_buffers[name][1], tensor, name)
            bindings.append((name, self.heap.offset_of(tensor, what), tensor.nbytes))
        return values, bindings

    def _descriptor(self, name, value, spec, bindings):
        """The runtime's value of a host tensor descriptor parameter,
        `(address, shape, strides)`: from a tensor, a view of its rows
        (`rows_view`); from a Triton `TensorDescriptor` (anything with
        `base`, `shape`, `strides` and `block_shape`), its own view, its
        block the kernel's."""
        plan_buffer, block = spec.plan_buffer, spec.block
        what = f"argument '{name}'"
        if isinstance(value, torch.Tensor):
            tensor, view = value, None
        elif all(hasattr(value, a) for a in ("base", "shape", "strides", "block_shape")):
            tensor = value.base
            if list(value.block_shape) != list(block):
                raise LaunchError(f"{what} is a descriptor of {list(value.block_shape)} blocks, the "
                                  f"kernel reads {list(block)}")
            view = (tensor.data_ptr(), [int(n) for n in value.shape],
                    [int(n) for n in value.strides])
        else:
            raise LaunchError(f"{what} is a tensor descriptor: pass a tensor (read by rows) or a "
                              f"triton TensorDescriptor, not {type(value).__name__}")
        self._check_tensor(what, spec.element, tensor, plan_buffer)
        rows = rows_view(tensor, block)
        if plan_buffer is not None:
            bindings.append((plan_buffer, self.heap.offset_of(tensor, what), tensor.nbytes))
            if view is not None and view != rows:
                raise LaunchError(f"{what} views @{plan_buffer} as {view[1]} (strides {view[2]}): "
                                  f"the plan reads it by rows, {rows[1]} (strides {rows[2]})")
        return view if view is not None else rows

    def _check_tensor(self, what, element, tensor, plan_buffer):
        if not isinstance(tensor, torch.Tensor):
            raise LaunchError(f"{what} is a pointer: pass a tensor, not {type(tensor).__name__}")
        if tensor.device != self.device:
            raise LaunchError(f"{what} is on {tensor.device}, the group runs on {self.device}")
        dtype = DTYPES.get(element)
        if dtype is not None and tensor.dtype != dtype:
            raise LaunchError(f"{what} is {tensor.dtype}, the kernel takes {element} ({dtype})")
        if not tensor.is_contiguous():
            raise LaunchError(f"{what} is not contiguous (strides {tensor.stride()}): the kernel "
                              "reads it row-major")
        if plan_buffer is not None:
            shape = self.plan_buffers[plan_buffer][0]
            if tuple(tensor.shape) != shape:
                raise LaunchError(f"{what} has shape {tuple(tensor.shape)}, the plan's buffer "
                                  f"@{plan_buffer} is {shape}")


def rows_view(tensor, block):
    """The view a host tensor descriptor of `block`'s dimensions takes of a
    contiguous `tensor`, as Triton's fused-attention tutorial makes its
    descriptors: the tensor's last dimensions, its leading ones merged
    into the first (a [Z, H, N, D] tensor read by [BLOCK, D] blocks is
    [Z * H * N, D]), row-major; `(address, shape, strides)`."""
    rank = len(block)
    shape = list(tensor.shape)
    if len(shape) < rank:
        raise LaunchError(f"a tensor of {len(shape)} dimensions cannot be read by "
                          f"{rank}-dimensional blocks {list(block)}")
    rows = [math.prod(shape[:len(shape) - rank + 1]), *shape[len(shape) - rank + 1:]]
    strides = [math.prod(rows[d + 1:]) for d in range(rank)]
    return tensor.data_ptr(), rows, strides


def check_world_size(manifest, world_size):
    """`LaunchError` unless `manifest`'s plan is for `world_size` ranks."""
    if manifest.world_size not in (None, world_size):
        raise LaunchError(f"the kernel's plan is for {manifest.world_size} ranks, the group has "
                          f"{world_size}")


class Kernel:
    """A fused kernel on one rank; call it with the grid and the kernel's
    own arguments (see `LaunchArguments`)."""

    def __init__(self, group, compiled):
        check_world_size(compiled.manifest, group.world_size)
        self.group = group
        self.manifest = compiled.manifest
        self.arguments = LaunchArguments(self.manifest, group.device, group.heap)
        self._kernel = group._node.load(str(self.manifest.path))

    def __call__(self, grid, *args, buffers=None):
        values, bindings = self.arguments(args, buffers)
        self.launch_checked(grid, values, bindings)

    def launch_checked(self, grid, values, bindings):
        """Launches on the current stream with `values` and `bindings` as
        `arguments` gives them, for a caller that has checked the tensors
        behind them (an operator: its own buffers once, its operands on
        every call)."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        stream = torch._C._cuda_getCurrentRawStream(self.group.device.index)
        self._kernel.launch(grid, values, bindings, stream)

    @property
    def epoch(self):
        return self._kernel.epoch

    @property
    def replays(self):
        """Whether a launch of this kernel was captured in a CUDA graph
        (`torch.cuda.graph`, or Inductor's with `mode="reduce-overhead"`):
        its launches since, replayed or not, run between two barriers of
        every rank (crates/synco-runtime/docs/graph-capture.md)."""
        return self._kernel.replays


__all__ = ["DTYPES", "Group", "Heap", "Kernel", "LaunchArguments", "LaunchError", "SymmetryError",
           "WatchdogError", "check_world_size", "descriptor_type", "rows_view"]
