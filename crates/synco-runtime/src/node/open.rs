//! Opening a node: every rank in this process ([`Node::open`],
//! [`Node::open_shared`]), or one rank of a job with a process per rank
//! ([`Node::open_process`]), whose peers' heaps are mapped from CUDA IPC
//! handles exchanged through the caller's rendezvous (a PyTorch process
//! group's store, say).

use super::{Gpu, Node, RankPlace, check};
use crate::{
    error::{Result, RuntimeError},
    heap::HeapLayout,
    timeline::LaunchMarks,
};
use cudarc::driver::{
    CudaContext,
    sys::{self, CUdeviceptr, CUevent, CUresult},
};

/// The rendezvous of [`Node::open_process`]: given this rank's bytes,
/// returns every rank's, in rank order (an all-gather), or why it could
/// not.
pub type Exchange<'a> = dyn FnMut(Vec<u8>) -> std::result::Result<Vec<Vec<u8>>, String> + 'a;

impl Node {
    /// Opens GPUs `0..world_size`, one rank each, each with a symmetric
    /// heap of `heap_bytes` and an error buffer, and enables peer access
    /// between every pair.
    pub fn open(world_size: usize, heap_bytes: usize) -> Result<Node> {
        Node::open_shared(world_size, world_size, heap_bytes)
    }

    /// Opens `world_size` ranks on GPUs `0..devices`: rank `r` runs on GPU
    /// `r mod devices`, and ranks on one GPU share its context (each has
    /// its own streams and heap). This tests plans of more ranks than the
    /// machine has GPUs, for correctness only: ranks that share a GPU
    /// share its SMs and bandwidth, and a fused kernel whose tiles wait for
    /// another rank's tiles completes only if the kernels of all ranks on
    /// a GPU fit on it together (otherwise the watchdog reports the wait).
    pub fn open_shared(world_size: usize, devices: usize, heap_bytes: usize) -> Result<Node> {
        if devices == 0 || devices > world_size {
            return Err(RuntimeError::BadSharing {
                world_size,
                devices,
            });
        }
        check_gpus(devices)?;
        let gpus = (0..world_size)
            .map(|rank| Gpu::open(rank, rank % devices, heap_bytes, world_size))
            .collect::<Result<Vec<_>>>()?;
        let places = gpus
            .iter()
            .map(|g| {
                Ok(RankPlace {
                    heap: g.heap,
                    gpu: g.uuid()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        for a in 0..world_size {
            for b in 0..world_size {
                // Ranks on one GPU share its context: nothing to enable.
                if gpus[a].device != gpus[b].device {
                    enable_peer_access(&gpus[a], &gpus[b])?;
                }
            }
        }
        Node::assemble(gpus, 0, places, Vec::new(), heap_bytes)
    }

    /// Opens rank `rank` of `world_size`, one rank per process, on CUDA
    /// device `device` (this process's ordinal; its primary context, the
    /// one PyTorch uses): a heap of `heap_bytes`, whose CUDA IPC handle
    /// goes to every peer through `exchange`, and the peers' heaps mapped
    /// from theirs. Every rank must call it with the same `world_size`
    /// and `heap_bytes`. Ranks may share a GPU (processes on one GPU take
    /// turns on it unless MPS runs: correct, not fast).
    pub fn open_process(
        rank: usize,
        world_size: usize,
        device: usize,
        heap_bytes: usize,
        exchange: &mut Exchange<'_>,
    ) -> Result<Node> {
        if rank >= world_size {
            return Err(RuntimeError::NoSuchRank { rank, world_size });
        }
        check_gpus(device + 1)?;
        let gpu = Gpu::open(rank, device, heap_bytes, world_size)?;
        let own = Rendezvous {
            rank,
            world_size,
            heap_bytes,
            pid: std::process::id(),
            gpu: gpu.uuid()?,
            handle: ipc_handle(&gpu)?,
        };
        let all = exchange(own.encode()).map_err(|message| RuntimeError::Rendezvous {
            rank,
            message: format!("the exchange of heap handles failed: {message}"),
        })?;
        if all.len() != world_size {
            return Err(RuntimeError::Rendezvous {
                rank,
                message: format!(
                    "the exchange gave {} ranks' handles, not {world_size}",
                    all.len()
                ),
            });
        }
        let mut places = Vec::with_capacity(world_size);
        let mut imported = Vec::new();
        for (peer, bytes) in all.iter().enumerate() {
            let theirs = Rendezvous::decode(bytes).map_err(|message| RuntimeError::Rendezvous {
                rank,
                message: format!("rank {peer}'s handle: {message}"),
            })?;
            theirs
                .check_matches(&own, peer)
                .map_err(|message| RuntimeError::Rendezvous { rank, message })?;
            let heap = if peer == rank {
                gpu.heap
            } else {
                let heap = open_ipc_handle(&gpu, peer, &theirs.handle)?;
                imported.push((peer, heap));
                heap
            };
            places.push(RankPlace {
                heap,
                gpu: theirs.gpu,
            });
        }
        Node::assemble(vec![gpu], rank, places, imported, heap_bytes)
    }

    /// The node over `gpus` (ranks `first_rank` and up), with every
    /// rank's heap-base table written.
    fn assemble(
        gpus: Vec<Gpu>,
        first_rank: usize,
        places: Vec<RankPlace>,
        imported: Vec<(usize, CUdeviceptr)>,
        heap_bytes: usize,
    ) -> Result<Node> {
        let bases: Vec<u64> = places.iter().map(|p| p.heap).collect();
        for gpu in &gpus {
            gpu.bind()?;
            unsafe {
                check(
                    gpu.rank,
                    "cuMemcpyHtoD",
                    sys::cuMemcpyHtoD_v2(gpu.heap_bases, bases.as_ptr().cast(), 8 * bases.len()),
                )?;
            }
        }
        Ok(Node {
            scratch: vec![(0, 0); gpus.len()],
            ring_step: None,
            ring_call: false,
            gpus,
            first_rank,
            places,
            imported,
            failed: Default::default(),
            layout: HeapLayout::new(heap_bytes),
            epoch: 0,
            captured: false,
            timeline_on: false,
            timeline: Vec::new(),
            marks: LaunchMarks::default(),
            stream_waits: Default::default(),
            peer_timeout: super::DEFAULT_PEER_TIMEOUT,
            fault: super::Fault::None,
        })
    }
}

/// The driver is there and sees at least `devices` GPUs.
fn check_gpus(devices: usize) -> Result<()> {
    // SAFETY: only tries to load libcuda.so.
    if !unsafe { sys::is_culib_present() } {
        return Err(RuntimeError::NoDriver);
    }
    let found = CudaContext::device_count().map_err(|e| RuntimeError::Open {
        gpu: 0,
        message: e.to_string(),
    })? as usize;
    if found < devices {
        return Err(RuntimeError::NotEnoughGpus {
            wanted: devices,
            found,
        });
    }
    Ok(())
}

impl Gpu {
    /// Rank `rank` on CUDA device `device`: its streams, a zeroed heap of
    /// `heap_bytes`, its heap-base table (for `world_size` ranks), error
    /// buffer and events.
    fn open(rank: usize, device: usize, heap_bytes: usize, world_size: usize) -> Result<Gpu> {
        let ctx = CudaContext::new(device).map_err(|e| RuntimeError::Open {
            gpu: device,
            message: e.to_string(),
        })?;
        ctx.bind_to_thread().map_err(|e| RuntimeError::Open {
            gpu: device,
            message: e.to_string(),
        })?;
        let stream = || -> Result<sys::CUstream> {
            let mut stream = std::ptr::null_mut();
            let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
            // SAFETY: creates a stream in the bound context.
            check(rank, "cuStreamCreate", unsafe {
                sys::cuStreamCreate(&mut stream, flags)
            })?;
            Ok(stream)
        };
        let alloc = |bytes: usize| -> Result<CUdeviceptr> {
            let mut p = 0;
            // SAFETY: a fresh allocation in the bound context, zeroed.
            unsafe {
                check(rank, "cuMemAlloc", sys::cuMemAlloc_v2(&mut p, bytes))?;
                check(rank, "cuMemsetD8", sys::cuMemsetD8_v2(p, 0, bytes))?;
            }
            Ok(p)
        };
        let sync_event = || -> Result<CUevent> {
            let mut event = std::ptr::null_mut();
            let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
            // SAFETY: creates an event in the bound context.
            check(rank, "cuEventCreate", unsafe {
                sys::cuEventCreate(&mut event, flags)
            })?;
            Ok(event)
        };
        Ok(Gpu {
            rank,
            device,
            compute: stream()?,
            copy: stream()?,
            signal: stream()?,
            watch: stream()?,
            heap: alloc(heap_bytes)?,
            heap_bases: alloc(8 * world_size)?,
            errors: alloc(16)?,
            start: sync_event()?,
            end: sync_event()?,
            kernel_done: sync_event()?,
            copies_done: sync_event()?,
            entered: sync_event()?,
            signals_sent: sync_event()?,
            ctx,
        })
    }

    /// The UUID of the rank's GPU.
    fn uuid(&self) -> Result<[u8; 16]> {
        let mut uuid = sys::CUuuid { bytes: [0; 16] };
        // SAFETY: writes the device's UUID into `uuid`.
        check(self.rank, "cuDeviceGetUuid", unsafe {
            sys::cuDeviceGetUuid_v2(&mut uuid, self.ctx.cu_device())
        })?;
        Ok(uuid.bytes.map(|b| b as u8))
    }
}

/// Peer access from `a`'s context to `b`'s memory.
fn enable_peer_access(a: &Gpu, b: &Gpu) -> Result<()> {
    a.bind()?;
    let mut can = 0;
    // SAFETY: queries and enables peer access between two open contexts.
    unsafe {
        check(
            a.rank,
            "cuDeviceCanAccessPeer",
            sys::cuDeviceCanAccessPeer(&mut can, a.ctx.cu_device(), b.ctx.cu_device()),
        )?;
        if can == 0 {
            return Err(RuntimeError::NoPeerAccess {
                a: a.device,
                b: b.device,
            });
        }
        let code = sys::cuCtxEnablePeerAccess(b.ctx.cu_ctx(), 0);
        if code != CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            check(a.rank, "cuCtxEnablePeerAccess", code)?;
        }
    }
    Ok(())
}

/// The CUDA IPC handle of `gpu`'s heap.
fn ipc_handle(gpu: &Gpu) -> Result<[u8; 64]> {
    let mut handle = sys::CUipcMemHandle { reserved: [0; 64] };
    // SAFETY: the heap is a cuMemAlloc allocation of the bound context.
    check(gpu.rank, "cuIpcGetMemHandle", unsafe {
        sys::cuIpcGetMemHandle(&mut handle, gpu.heap)
    })?;
    Ok(handle.reserved.map(|b| b as u8))
}

/// Maps `peer`'s heap, from its IPC handle, into `gpu`'s context.
fn open_ipc_handle(gpu: &Gpu, peer: usize, handle: &[u8; 64]) -> Result<CUdeviceptr> {
    let handle = sys::CUipcMemHandle {
        reserved: handle.map(|b| b as std::ffi::c_char),
    };
    let mut heap = 0;
    let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
    // SAFETY: maps a peer process's allocation; the handle came from it.
    let code = unsafe { sys::cuIpcOpenMemHandle_v2(&mut heap, handle, flags) };
    if code != CUresult::CUDA_SUCCESS {
        return Err(RuntimeError::Rendezvous {
            rank: gpu.rank,
            message: format!(
                "cannot map rank {peer}'s heap (cuIpcOpenMemHandle: {code:?}): its GPU must be \
                 reachable from this one (peer access), and it must run in another process"
            ),
        });
    }
    Ok(heap)
}

/// What a rank tells its peers at [`Node::open_process`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rendezvous {
    rank: usize,
    world_size: usize,
    heap_bytes: usize,
    pid: u32,
    gpu: [u8; 16],
    handle: [u8; 64],
}

const MAGIC: &[u8; 8] = b"SYNCOHP1";
const ENCODED: usize = 8 + 8 * 3 + 4 + 16 + 64;

impl Rendezvous {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENCODED);
        out.extend_from_slice(MAGIC);
        for value in [self.rank, self.world_size, self.heap_bytes] {
            out.extend_from_slice(&(value as u64).to_le_bytes());
        }
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.gpu);
        out.extend_from_slice(&self.handle);
        out
    }

    fn decode(bytes: &[u8]) -> std::result::Result<Rendezvous, String> {
        if bytes.len() != ENCODED || &bytes[..8] != MAGIC {
            return Err(format!(
                "not a Synco heap handle ({} bytes; another version of Synco?)",
                bytes.len()
            ));
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w) as usize
        };
        let mut pid = [0u8; 4];
        pid.copy_from_slice(&bytes[32..36]);
        let mut gpu = [0u8; 16];
        gpu.copy_from_slice(&bytes[36..52]);
        let mut handle = [0u8; 64];
        handle.copy_from_slice(&bytes[52..116]);
        Ok(Rendezvous {
            rank: word(8),
            world_size: word(16),
            heap_bytes: word(24),
            pid: u32::from_le_bytes(pid),
            gpu,
            handle,
        })
    }

    /// `self`, the handle in `peer`'s place, agrees with `own`.
    fn check_matches(&self, own: &Rendezvous, peer: usize) -> std::result::Result<(), String> {
        if self.rank != peer {
            return Err(format!(
                "the handle in rank {peer}'s place is rank {}'s: the exchange must return \
                 the ranks in order",
                self.rank
            ));
        }
        if self.world_size != own.world_size || self.heap_bytes != own.heap_bytes {
            return Err(format!(
                "rank {peer} opened {} ranks with a heap of {} bytes, this rank {} with {}: \
                 every rank must open the same",
                self.world_size, self.heap_bytes, own.world_size, own.heap_bytes
            ));
        }
        if peer != own.rank && self.pid == own.pid {
            return Err(format!(
                "rank {peer} runs in this process: open every rank of one process with \
                 Node::open_shared instead"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: usize, pid: u32) -> Rendezvous {
        Rendezvous {
            rank,
            world_size: 2,
            heap_bytes: 1 << 20,
            pid,
            gpu: [rank as u8; 16],
            handle: [7; 64],
        }
    }

    #[test]
    fn handles_round_trip_and_must_agree() {
        let own = rank(0, 10);
        let peer = rank(1, 11);
        assert_eq!(Rendezvous::decode(&peer.encode()).as_ref(), Ok(&peer));
        assert!(peer.check_matches(&own, 1).is_ok());
        let err = peer.check_matches(&own, 0).unwrap_err();
        assert!(err.contains("rank 1's"), "{err}");
        let bigger = Rendezvous {
            heap_bytes: 2 << 20,
            ..peer.clone()
        };
        assert!(bigger.check_matches(&own, 1).unwrap_err().contains("same"));
        let same_process = rank(1, 10);
        assert!(
            same_process
                .check_matches(&own, 1)
                .unwrap_err()
                .contains("this process")
        );
        assert!(
            Rendezvous::decode(b"junk")
                .unwrap_err()
                .contains("not a Synco heap handle")
        );
    }

    /// Without a GPU (CI), opening a rank of a process group is an error
    /// before any exchange.
    #[test]
    fn refuses_a_rank_outside_the_world_before_any_exchange() {
        let mut exchange = |_: Vec<u8>| -> std::result::Result<Vec<Vec<u8>>, String> {
            panic!("no exchange for a rank outside the world")
        };
        assert!(matches!(
            Node::open_process(2, 2, 0, 1 << 20, &mut exchange),
            Err(RuntimeError::NoSuchRank { rank: 2, .. })
        ));
    }
}
