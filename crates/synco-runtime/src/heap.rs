//! Where symmetric buffers go in a node's heap: the bookkeeping alone, the
//! same on every rank, with no GPU involved.
//!
//! The caller's buffers ([`HeapLayout::alloc`]) grow from the heap's start
//! and are freed all at once ([`HeapLayout::reset`]); kernels' own storage
//! (flags and staging buffers, [`HeapLayout::alloc_kernel_storage`]) grows
//! from its end, survives `reset`, and goes back in reverse order of
//! allocation ([`HeapLayout::release_kernel_storage`]).

use crate::error::{Result, RuntimeError};

/// Alignment of every symmetric buffer in the heap.
pub(crate) const ALIGN: usize = 512;

/// A symmetric buffer: the same offset in every rank's heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub offset: usize,
    pub bytes: usize,
}

/// The occupied parts of a heap of `bytes` bytes.
#[derive(Debug)]
pub(crate) struct HeapLayout {
    bytes: usize,
    /// Bytes used from the heap's start by the caller's buffers.
    used: usize,
    /// Bytes used from the heap's end by kernels' own storage.
    kernel_bytes: usize,
}

/// `bytes` rounded up to [`ALIGN`].
pub(crate) fn aligned(bytes: usize) -> usize {
    bytes.div_ceil(ALIGN) * ALIGN
}

impl HeapLayout {
    pub(crate) fn new(bytes: usize) -> HeapLayout {
        HeapLayout {
            bytes,
            used: 0,
            kernel_bytes: 0,
        }
    }

    /// Where kernels' storage starts.
    fn kernel_start(&self) -> usize {
        self.bytes - self.kernel_bytes
    }

    /// A caller's buffer of `bytes`, after the previous one.
    pub(crate) fn alloc(&mut self, bytes: usize) -> Result<Buffer> {
        let offset = aligned(self.used);
        if offset + bytes > self.kernel_start() {
            return Err(RuntimeError::HeapFull {
                wanted: bytes,
                free: self.kernel_start().saturating_sub(offset),
            });
        }
        self.used = offset + bytes;
        Ok(Buffer { offset, bytes })
    }

    /// A kernel's storage of at least `bytes`, below the previous kernel's.
    /// The buffer spans up to that storage (alignment padding included),
    /// so that releasing it gives back exactly what it took.
    pub(crate) fn alloc_kernel_storage(&mut self, bytes: usize) -> Result<Buffer> {
        let taken = aligned(self.kernel_bytes + bytes);
        let offset = self.bytes.checked_sub(taken).filter(|o| *o >= self.used);
        let Some(offset) = offset else {
            return Err(RuntimeError::HeapFull {
                wanted: bytes,
                free: self.kernel_start().saturating_sub(self.used),
            });
        };
        let region = taken - self.kernel_bytes;
        self.kernel_bytes = taken;
        Ok(Buffer {
            offset,
            bytes: region,
        })
    }

    /// Gives back a kernel's storage if it is the latest still held;
    /// otherwise it stays taken (returns whether it was given back).
    pub(crate) fn release_kernel_storage(&mut self, storage: Buffer) -> bool {
        if storage.offset != self.kernel_start() {
            return false;
        }
        self.kernel_bytes -= storage.bytes;
        true
    }

    /// Frees every caller's buffer; kernels' storage stays.
    pub(crate) fn reset(&mut self) {
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_from_the_start_kernels_from_the_end() {
        let mut heap = HeapLayout::new(64 * ALIGN);
        let a = heap.alloc(100).expect("room");
        let b = heap.alloc(ALIGN).expect("room");
        assert_eq!((a.offset, b.offset), (0, ALIGN));
        let k = heap.alloc_kernel_storage(3 * ALIGN + 1).expect("room");
        assert_eq!(
            k,
            Buffer {
                offset: 60 * ALIGN,
                bytes: 4 * ALIGN
            }
        );
        // A reset keeps the kernel's storage, and buffers stop below it.
        heap.reset();
        assert!(heap.alloc(60 * ALIGN).is_ok());
        assert!(matches!(
            heap.alloc(1),
            Err(RuntimeError::HeapFull { wanted: 1, free: 0 })
        ));
    }

    #[test]
    fn kernel_storage_comes_back_in_reverse_order() {
        let mut heap = HeapLayout::new(64 * ALIGN);
        let first = heap.alloc_kernel_storage(10).expect("room");
        let second = heap.alloc_kernel_storage(ALIGN + 10).expect("room");
        assert_eq!(second.offset + second.bytes, first.offset);
        // Not the latest: it stays taken.
        assert!(!heap.release_kernel_storage(first));
        assert!(heap.release_kernel_storage(second));
        assert!(heap.release_kernel_storage(first));
        // Everything is free again: one buffer can take the whole heap.
        assert!(heap.alloc(64 * ALIGN).is_ok());
    }

    #[test]
    fn loading_and_unloading_in_turn_reuses_the_same_bytes() {
        let mut heap = HeapLayout::new(1 << 20);
        let problem = heap.alloc(600 * 1024).expect("room");
        let mut offsets = Vec::new();
        for _ in 0..100 {
            let storage = heap.alloc_kernel_storage(300 * 1024).expect("room");
            offsets.push(storage.offset);
            assert!(heap.release_kernel_storage(storage));
        }
        assert!(
            offsets
                .iter()
                .all(|&o| o == offsets[0] && o >= problem.bytes)
        );
    }

    #[test]
    fn kernel_storage_never_overlaps_buffers() {
        let mut heap = HeapLayout::new(8 * ALIGN);
        heap.alloc(5 * ALIGN).expect("room");
        assert!(matches!(
            heap.alloc_kernel_storage(4 * ALIGN),
            Err(RuntimeError::HeapFull { free, .. }) if free == 3 * ALIGN
        ));
        assert!(heap.alloc_kernel_storage(3 * ALIGN).is_ok());
    }
}
