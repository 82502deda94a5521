//! What a fused launch did, for diagnosis: every tile of a traced kernel
//! (`--trace` builds) and the side streams' copies (`--timeline`).

use crate::{Launch, timing::median};
use anyhow::Result;
use serde::Serialize;
use std::time::Duration;
use synco_runtime::Node;

/// One traced launch.
#[derive(Serialize)]
pub(crate) struct KernelTrace {
    /// Per rank, its first tile's begin on its GPU's clock (ns): the clocks
    /// of two GPUs need not agree.
    t0_ns: Vec<u64>,
    /// Per rank, every tile (see [`TileRow`]).
    tiles: Vec<Vec<TileRow>>,
}

/// One traced tile: `[tile, sm, program x, program y, begin, wait begin,
/// wait end, signal, end]`, times in ns from the rank's first tile begin
/// (-1: not reached).
pub(crate) type TileRow = [i64; 9];

/// Every rank's tiles of the kernel's last launch (each tile's record holds
/// the last launch that ran it: the last timed one, issued back to back
/// with the others); prints each rank's span and waits.
pub(crate) fn read_trace(node: &Node, launch: &Launch, name: &str) -> Result<KernelTrace> {
    let mut ranks = Vec::new();
    let mut t0_ns = Vec::new();
    for rank in 0..node.world_size() {
        let tiles = node.read_trace(&launch.kernel, rank)?;
        let t0 = tiles.iter().map(|t| t.begin_ns).min().unwrap_or(0);
        t0_ns.push(t0);
        let at = |t: Option<u64>| t.map_or(-1, |t| t as i64 - t0 as i64);
        let rows: Vec<TileRow> = tiles
            .iter()
            .map(|t| {
                [
                    t.tile as i64,
                    t.sm as i64,
                    t.program[0] as i64,
                    t.program[1] as i64,
                    at(Some(t.begin_ns)),
                    at(t.wait.map(|w| w.0)),
                    at(t.wait.map(|w| w.1)),
                    at(t.signal_ns),
                    at(t.end_ns),
                ]
            })
            .collect();
        let span = rows.iter().map(|r| r[8]).max().unwrap_or(0);
        let waits: Vec<f64> = rows
            .iter()
            .filter(|r| r[5] >= 0 && r[6] >= 0)
            .map(|r| (r[6] - r[5]) as f64 / 1e3)
            .collect();
        eprintln!(
            "trace {name}: rank {rank}: {} tiles on {} SMs in {:.1} us; {} waited, {:.1} us in all, median {:.1} us, longest {:.1} us",
            rows.len(),
            rows.iter()
                .map(|r| r[1])
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            span as f64 / 1e3,
            waits.len(),
            waits.iter().sum::<f64>(),
            if waits.is_empty() {
                0.0
            } else {
                median(&waits)
            },
            waits.iter().copied().fold(0.0, f64::max),
        );
        ranks.push(rows);
    }
    Ok(KernelTrace {
        t0_ns,
        tiles: ranks,
    })
}

/// One launch of a fused variant, seen from the side streams.
#[derive(Serialize)]
pub(crate) struct Timeline {
    /// Per rank, from the launch's start to its end (after the kernel and
    /// the completion waits).
    pub(crate) launch_ms: Vec<f32>,
    /// Per rank, when the compute stream reached the kernel.
    pub(crate) kernel_start_ms: Vec<f32>,
    pub(crate) copies: Vec<CopyTime>,
}

#[derive(Serialize)]
pub(crate) struct CopyTime {
    pub(crate) rank: usize,
    pub(crate) what: String,
    pub(crate) bytes: u64,
    pub(crate) start_ms: f32,
    pub(crate) data_end_ms: f32,
    pub(crate) end_ms: f32,
}

/// Launches `launch` `after` times back to back, then once more with the
/// node's timeline on (behind the others, as in a timed run).
pub(crate) fn record_timeline(node: &mut Node, launch: &Launch, after: usize) -> Result<Timeline> {
    let once = |node: &mut Node| {
        node.launch(
            &launch.kernel,
            launch.grid,
            &|rank| launch.args[rank].clone(),
            launch.bindings,
        )
    };
    for _ in 0..after {
        once(node)?;
    }
    node.record_timeline(true)?;
    let launched = once(node).and_then(|()| node.wait(Duration::from_secs(60)));
    // Read before the timeline is turned off (that drops its events).
    let recorded = launched.and_then(|()| Ok((node.timeline()?, node.elapsed_ms()?)));
    node.record_timeline(false)?;
    let (recorded, launch_ms) = recorded?;
    let copies = recorded
        .copies
        .into_iter()
        .map(|c| CopyTime {
            rank: c.rank,
            what: c.what,
            bytes: c.bytes,
            start_ms: c.start_ms,
            data_end_ms: c.data_end_ms,
            end_ms: c.end_ms,
        })
        .collect();
    Ok(Timeline {
        launch_ms,
        kernel_start_ms: recorded.kernel_start_ms,
        copies,
    })
}
