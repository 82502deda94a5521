//! Reading a traced kernel's records (`chunk-trace-tiles`).
//!
//! A record is 8 little-endian `i64` words, written by `chunk.trace`:
//! timestamps (`%globaltimer`, ns) of the tile's begin, first wait's begin,
//! last wait's end, last signal and end, then `tile | smid << 32`,
//! `ctaid.x | ctaid.y << 32` and `ctaid.z`. A tile's begin rewrites its
//! whole record, so the record holds the last launch that ran the tile and
//! a timestamp of 0 was not reached in it; a record whose begin is 0 was
//! never used since [`Node::clear_trace`].

use crate::{FusedKernel, Node, error::Result, heap::Buffer};

/// Bytes of one record.
pub const RECORD_BYTES: usize = 64;

/// One tile of a traced launch, on one rank. Times are the GPU's
/// `%globaltimer` in ns (clocks of different GPUs are not aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileTrace {
    /// The tile index `chunk-reorder-tiles` marked (a row tile).
    pub tile: u32,
    /// The SM it ran on.
    pub sm: u32,
    /// The program (`ctaid`).
    pub program: [u32; 3],
    pub begin_ns: u64,
    /// When its first `chunk.wait` started and its last one returned.
    pub wait: Option<(u64, u64)>,
    /// When its last `chunk.signal` / `chunk.arrive` had published.
    pub signal_ns: Option<u64>,
    /// Set unless the launch ended early (a watchdog error).
    pub end_ns: Option<u64>,
}

/// Decodes the records of a trace buffer, in record order.
pub fn decode(bytes: &[u8]) -> Vec<TileTrace> {
    let word = |r: &[u8], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&r[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    let set = |v: u64| (v != 0).then_some(v);
    bytes
        .chunks_exact(RECORD_BYTES)
        .filter(|r| word(r, 0) != 0)
        .map(|r| {
            let (ids, xy) = (word(r, 5), word(r, 6));
            TileTrace {
                tile: ids as u32,
                sm: (ids >> 32) as u32,
                program: [xy as u32, (xy >> 32) as u32, word(r, 7) as u32],
                begin_ns: word(r, 0),
                wait: set(word(r, 1)).zip(set(word(r, 2))),
                signal_ns: set(word(r, 3)),
                end_ns: set(word(r, 4)),
            }
        })
        .collect()
}

impl FusedKernel {
    /// The trace buffer, if the kernel was compiled with
    /// `chunk-trace-tiles`.
    pub fn trace_buffer(&self) -> Option<Buffer> {
        let fused = self.manifest.fused.as_ref()?;
        let name = &fused.buffers.iter().find(|b| b.trace)?.name;
        self.staging
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, buffer)| *buffer)
    }
}

impl Node {
    /// Zeroes `kernel`'s trace records on every rank, so that records no
    /// later launch writes read as unused; a kernel without a trace buffer
    /// has nothing to clear. (Launches need no clearing in between: each
    /// tile rewrites its record.)
    pub fn clear_trace(&self, kernel: &FusedKernel) -> Result<()> {
        if let Some(buffer) = kernel.trace_buffer() {
            for rank in self.local_ranks() {
                self.fill(rank, &buffer, 0)?;
            }
        }
        Ok(())
    }

    /// The tiles `rank` recorded since the last [`Node::clear_trace`], each
    /// from the last launch that ran it (waits for the rank's work first);
    /// empty without a trace buffer.
    pub fn read_trace(&self, kernel: &FusedKernel, rank: usize) -> Result<Vec<TileTrace>> {
        match kernel.trace_buffer() {
            Some(buffer) => Ok(decode(&self.read(rank, &buffer)?)),
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(words: [u64; 8]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn decodes_records_and_skips_unused_ones() {
        let mut bytes = record([100, 150, 170, 180, 200, 7 | (42 << 32), 3 | (1 << 32), 0]);
        bytes.extend(record([0; 8]));
        bytes.extend(record([300, 0, 0, 310, 0, 9, 4, 2]));
        let tiles = decode(&bytes);
        assert_eq!(tiles.len(), 2);
        assert_eq!(
            tiles[0],
            TileTrace {
                tile: 7,
                sm: 42,
                program: [3, 1, 0],
                begin_ns: 100,
                wait: Some((150, 170)),
                signal_ns: Some(180),
                end_ns: Some(200),
            }
        );
        assert_eq!(tiles[1].wait, None);
        assert_eq!(tiles[1].end_ns, None);
        assert_eq!(tiles[1].program, [4, 0, 2]);
    }
}
