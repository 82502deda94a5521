# A kernel that uses the synchronisation Synco's lowering emits: an
# acquire/sys compare-and-swap spin on a flag, a release/sys exchange on a
# peer's flag reached through an integer address, and an inline-PTX
# acquire load.
import triton
import triton.language as tl


@triton.jit
def flag_kernel(flag_ptr, peer_flag_addr, out_ptr, epoch):
    seen = tl.atomic_cas(flag_ptr, epoch, epoch, sem="acquire", scope="sys")
    while seen < epoch:
        seen = tl.atomic_cas(flag_ptr, epoch, epoch, sem="acquire", scope="sys")
    peer_flag = peer_flag_addr.to(tl.pointer_type(tl.int32))
    tl.atomic_xchg(peer_flag, epoch, sem="release", scope="sys")
    loaded = tl.inline_asm_elementwise(
        "ld.acquire.sys.global.u32 $0, [$1];", "=r,l", [flag_ptr], dtype=tl.int32, is_pure=False, pack=1
    )
    tl.store(out_ptr, loaded + seen)


@triton.jit
def other_kernel(x_ptr):
    tl.store(x_ptr, 1)
