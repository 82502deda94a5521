//! How a launch orders one rank's streams after another rank's, without
//! CUDA events, which do not cross processes: the *sync words* a kernel
//! keeps after its flags in the symmetric heap, and which rank waits for
//! which.
//!
//! Three moments of a launch on a rank matter to its peers: its *start*
//! (its previous work on the compute stream is done: what it wrote there
//! is in place, and a peer may overwrite what it read), its *kernel done*
//! (its tiles and copy programs have stopped reading and writing peers'
//! heaps) and its *copies done* (its side stream's reduction copies of
//! this launch have landed). A rank signals a moment to the peers that
//! wait for it by copying the launch's epoch, 4 bytes, into a word of each
//! peer's heap that only it writes (`started_by[rank]`,
//! `kernel_done_by[rank]`, `copies_done_by[rank]`); a peer waits on its
//! own word (`cuStreamWaitValue32`, >= the epoch). The same words serve
//! ranks of one process and ranks of many. Within a rank, its streams
//! still order each other with events.
//!
//! A launch is ordered on each rank's stream as a collective is: what the
//! rank's stream did before the launch (a producer writing a shard, a
//! poisoned output) happens before any peer reads or writes that rank's
//! heap for it, and what its stream does after the launch happens after
//! every peer's access of it. Copies on the side streams wait for the
//! starts of the ranks they write into; a kernel that reaches into peers'
//! heaps itself (copy programs, tiles that push or pull partials) waits for
//! every peer's start, and every peer's launch ends after that kernel is
//! done.
//!
//! Waiters and signallers come from one rule ([`SyncPlan::new`]), so a
//! rank signals exactly the peers that wait for it: a wait that nobody
//! signals would hang the stream.

use synco_manifest::{Copy, FusedPlan};

/// Where a kernel's sync words lie in its flags buffer (as word indices):
/// after the manifest's `num_flags` flags, the copy stream's epoch word
/// (the source of the arrival flags its reduction copies set, see
/// `Node::enqueue_reduction_copies`), the signal stream's epoch word, then
/// `started_by`, `copies_done_by` and `kernel_done_by`, one word per rank
/// each. Then the words of launches that replay (see
/// `docs/graph-capture.md`): `ended_by` and `entered_by`, one per rank
/// each, and a word that holds 1, the source of their signals. A replayed
/// launch zeroes every word before `entered_by` as it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncWords {
    pub num_flags: usize,
    pub world_size: usize,
}

impl SyncWords {
    /// Words in the flags buffer: the manifest's flags and the sync words.
    pub fn count(&self) -> usize {
        self.one() + 1
    }

    /// The words a replayed launch zeroes as it starts (see
    /// `docs/graph-capture.md`): the flags, the counters and every sync
    /// word before `entered_by`.
    pub fn zeroed(&self) -> usize {
        self.entered_by(0)
    }

    pub fn copy_epoch(&self) -> usize {
        self.num_flags
    }

    pub fn signal_epoch(&self) -> usize {
        self.num_flags + 1
    }

    /// Set by `peer` when its launch starts.
    pub fn started_by(&self, peer: usize) -> usize {
        self.num_flags + 2 + peer
    }

    /// Set by `peer` when its reduction copies of the launch are done.
    pub fn copies_done_by(&self, peer: usize) -> usize {
        self.num_flags + 2 + self.world_size + peer
    }

    /// Set by `peer` when its kernel, which reaches into this rank's heap,
    /// is done.
    pub fn kernel_done_by(&self, peer: usize) -> usize {
        self.num_flags + 2 + 2 * self.world_size + peer
    }

    /// Set by `peer` when its replayed launch is done with this rank's
    /// heap (the barrier at its end).
    pub fn ended_by(&self, peer: usize) -> usize {
        self.num_flags + 2 + 3 * self.world_size + peer
    }

    /// Set by `peer` when its replayed launch has zeroed its words (the
    /// barrier at its start).
    pub fn entered_by(&self, peer: usize) -> usize {
        self.num_flags + 2 + 4 * self.world_size + peer
    }

    /// Holds 1 (written before each use): the source of the `ended_by`
    /// and `entered_by` signals.
    pub fn one(&self) -> usize {
        self.num_flags + 2 + 5 * self.world_size
    }

    /// What waiting on word `index` waits for.
    pub fn awaited(&self, index: usize) -> Awaited {
        let peer_word = |base: usize| index.checked_sub(base).filter(|&p| p < self.world_size);
        let started = self.started_by(0);
        if let Some(peer) = peer_word(started) {
            Awaited::Start(peer)
        } else if let Some(peer) = peer_word(self.copies_done_by(0)) {
            Awaited::Copies(peer)
        } else if let Some(peer) = peer_word(self.kernel_done_by(0)) {
            Awaited::Kernel(peer)
        } else if let Some(peer) = peer_word(self.ended_by(0)) {
            Awaited::Ended(peer)
        } else if let Some(peer) = peer_word(self.entered_by(0)) {
            Awaited::Entered(peer)
        } else {
            Awaited::Flag(index)
        }
    }
}

/// What a stream waits for when it waits on a word of a kernel's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Awaited {
    /// A peer's start of the launch.
    Start(usize),
    /// A peer's kernel done.
    Kernel(usize),
    /// A peer's reduction copies done.
    Copies(usize),
    /// A peer's replayed launch at its start barrier.
    Entered(usize),
    /// A peer's replayed launch at its end barrier.
    Ended(usize),
    /// A chunk's flag or counter (the manifest's flag index).
    Flag(usize),
    /// A peer's arrival flag of a chunk this rank forwards (a ring).
    PeerFlag { owner: usize, flag: usize },
}

impl std::fmt::Display for Awaited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Awaited::Start(peer) => write!(f, "rank {peer} to start the launch"),
            Awaited::Kernel(peer) => write!(f, "rank {peer}'s kernel to finish"),
            Awaited::Copies(peer) => write!(f, "rank {peer}'s side-stream copies"),
            Awaited::Entered(peer) => write!(f, "rank {peer} to enter the replayed launch"),
            Awaited::Ended(peer) => write!(f, "rank {peer} to end the replayed launch"),
            Awaited::Flag(flag) => write!(f, "flag {flag} (a chunk's arrival or counter)"),
            Awaited::PeerFlag { owner, flag } => write!(
                f,
                "flag {flag} of rank {owner} (the arrival there of a chunk this rank forwards)"
            ),
        }
    }
}

/// Per rank, the peers it waits for and the peers it signals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RankSync {
    /// Peers whose start the copy stream waits for before the rank's copies
    /// between GPUs: the destinations it pushes into (their previous
    /// kernels may still read the rows).
    pub copies_wait_start: Vec<usize>,
    /// Peers whose start the copy stream waits for before the rank's
    /// reduction copies, where the streams keep the epochs apart: the
    /// copies' owners (their tiles have read the previous epoch's rows).
    pub reduction_copies_wait_start: Vec<usize>,
    /// Peers whose start the compute stream waits for before the rank's
    /// kernel and the copies in front of it: the sources of copies into the
    /// rank within its GPU (their previous work wrote the rows), and every
    /// peer where the kernel itself reaches into peers' heaps.
    pub kernel_waits_start: Vec<usize>,
    /// Peers whose kernels reach into this rank's heap, and peers that copy
    /// rows of this rank's heap within its GPU (in front of their kernel):
    /// the launch ends once they signal their kernel done.
    pub waits_kernel_done: Vec<usize>,
    /// Peers whose copies into the rank set no flag: the launch ends once
    /// they signal their copies done.
    pub waits_copies_done: Vec<usize>,
    /// The rank's arrival flags that its launch ends on: of each peer on
    /// another GPU that pushes into it, the flag its last copy sets (a
    /// chunk the kernel never waits for, past a causal bound, may still
    /// land after the kernel; each peer's copies land in order).
    pub waits_last_arrivals: Vec<usize>,
    /// Whether the rank's launches put work on its copy stream (copies
    /// between GPUs, reduction copies): otherwise its launches leave the
    /// copy stream alone.
    pub uses_copy_stream: bool,
    /// Peers to signal at the start, when the kernel is done, and when the
    /// copies are done.
    pub signals_start: Vec<usize>,
    pub signals_kernel_done: Vec<usize>,
    pub signals_copies_done: Vec<usize>,
}

impl RankSync {
    /// The peers whose start any of the rank's streams waits for (some
    /// more than once).
    pub fn waits_start(&self) -> impl Iterator<Item = usize> + '_ {
        self.copies_wait_start
            .iter()
            .chain(&self.reduction_copies_wait_start)
            .chain(&self.kernel_waits_start)
            .copied()
    }
}

/// Every rank's [`RankSync`] for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SyncPlan {
    pub ranks: Vec<RankSync>,
}

/// Whether a copy stays within one GPU (the destination's compute stream
/// makes it, in front of its kernel), given which GPU each rank runs on.
pub(crate) fn within_gpu(copy: &Copy, same_gpu: &dyn Fn(usize, usize) -> bool) -> bool {
    copy.before_kernel || same_gpu(copy.src_rank as usize, copy.dst_rank as usize)
}

impl SyncPlan {
    /// The waits of `fused`'s launches and the signals that meet them;
    /// `same_gpu(a, b)` says whether ranks `a` and `b` run on one GPU.
    pub fn new(fused: &FusedPlan, same_gpu: &dyn Fn(usize, usize) -> bool) -> SyncPlan {
        let world = world_of(fused);
        let mut ranks: Vec<RankSync> = (0..world)
            .map(|rank| waits_of(fused, rank, same_gpu))
            .collect();
        for waiter in 0..world {
            let w = ranks[waiter].clone();
            for peer in w.waits_start() {
                push_unique(&mut ranks[peer].signals_start, waiter);
            }
            for &peer in &w.waits_kernel_done {
                push_unique(&mut ranks[peer].signals_kernel_done, waiter);
            }
            for &peer in &w.waits_copies_done {
                push_unique(&mut ranks[peer].signals_copies_done, waiter);
            }
        }
        for rank in &mut ranks {
            rank.signals_start.sort_unstable();
            rank.signals_kernel_done.sort_unstable();
            rank.signals_copies_done.sort_unstable();
        }
        SyncPlan { ranks }
    }

    /// `rank`'s waits and signals (none for a rank the plan does not have).
    pub fn rank(&self, rank: usize) -> &RankSync {
        static NONE: RankSync = RankSync {
            copies_wait_start: Vec::new(),
            reduction_copies_wait_start: Vec::new(),
            kernel_waits_start: Vec::new(),
            waits_kernel_done: Vec::new(),
            uses_copy_stream: false,
            waits_copies_done: Vec::new(),
            waits_last_arrivals: Vec::new(),
            signals_start: Vec::new(),
            signals_kernel_done: Vec::new(),
            signals_copies_done: Vec::new(),
        };
        self.ranks.get(rank).unwrap_or(&NONE)
    }
}

/// What `rank` waits for (its signals are filled in by [`SyncPlan::new`]).
fn waits_of(fused: &FusedPlan, rank: usize, same_gpu: &dyn Fn(usize, usize) -> bool) -> RankSync {
    let mut sync = RankSync::default();
    let peer = |r: i64| Some(r as usize).filter(|&r| r != rank);
    for copy in fused.copies.get(rank).into_iter().flatten() {
        if within_gpu(copy, same_gpu) {
            continue;
        }
        sync.uses_copy_stream = true;
        if let Some(dst) = peer(copy.dst_rank) {
            push_unique(&mut sync.copies_wait_start, dst);
        }
    }
    sync.uses_copy_stream |= fused
        .reduction_copies
        .get(rank)
        .is_some_and(|c| !c.is_empty());
    if fused.copies_ordered_by_streams() {
        for copy in fused.reduction_copies.get(rank).into_iter().flatten() {
            if let Some(owner) = peer(copy.owner) {
                push_unique(&mut sync.reduction_copies_wait_start, owner);
            }
        }
    }
    // A copy within one GPU is made by the destination's compute stream,
    // in front of its kernel: it starts after the source's start, and the
    // source's launch ends after the destination's kernel (the copy has
    // read the rows the source's later work may overwrite).
    for copy in fused.copies.iter().flatten() {
        if !within_gpu(copy, same_gpu) {
            continue;
        }
        if copy.dst_rank as usize == rank
            && let Some(src) = peer(copy.src_rank)
        {
            push_unique(&mut sync.kernel_waits_start, src);
        }
        if copy.src_rank as usize == rank
            && let Some(dst) = peer(copy.dst_rank)
        {
            push_unique(&mut sync.waits_kernel_done, dst);
        }
    }
    // A kernel that reaches into peers' heaps (copy programs pulling or
    // pushing chunks, tiles pushing partials or reading peers') starts
    // after every peer's start, and every peer's launch ends after it.
    if fused.kernel_reaches_peers() {
        for peer in (0..world_of(fused)).filter(|&p| p != rank) {
            push_unique(&mut sync.kernel_waits_start, peer);
            push_unique(&mut sync.waits_kernel_done, peer);
        }
    }
    sync.waits_copies_done = fused
        .sources_ordered_by_streams(rank)
        .into_iter()
        .filter(|&s| s != rank)
        .collect();
    // (A copy without a flag is implied by a later flagged one to the
    // same rank: the last flagged copy lands after every copy before it.)
    for (source, copies) in fused.copies.iter().enumerate() {
        let last_flag = copies
            .iter()
            .rev()
            .filter(|c| c.dst_rank as usize == rank && !within_gpu(c, same_gpu))
            .find_map(|c| c.flag);
        if let Some(flag) = last_flag.filter(|_| source != rank) {
            push_unique(&mut sync.waits_last_arrivals, flag as usize);
        }
    }
    sync
}

fn world_of(fused: &FusedPlan) -> usize {
    fused.world_size.max(0) as usize
}

fn push_unique(list: &mut Vec<usize>, value: usize) {
    if !list.contains(&value) {
        list.push(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(json: &str) -> FusedPlan {
        serde_json::from_str(json).expect("a fused plan")
    }

    fn copy(src: i64, dst: i64) -> String {
        format!(
            r#"{{"order": 0, "src_rank": {src}, "dst_rank": {dst}, "src_buffer": "A", "dst_buffer": "A",
                "src_offset": 0, "dst_offset": 0, "rows": 1, "row_elems": 4, "src_pitch": 4,
                "dst_pitch": 4, "flag": 0}}"#
        )
    }

    /// A pushed all-gather on 3 ranks: each rank waits for the start of the
    /// ranks it pushes into, and they signal it; ranks on one GPU copy in
    /// front of the destination's kernel, which waits for the source.
    #[test]
    fn every_wait_is_signalled() {
        let copies: Vec<String> = (0..3)
            .map(|src| {
                let row: Vec<String> = (0..3).filter(|&d| d != src).map(|d| copy(src, d)).collect();
                format!("[{}]", row.join(","))
            })
            .collect();
        let fused = plan(&format!(
            r#"{{"plan": "p", "world_size": 3, "num_flags": 3, "buffers": [], "chunks": [],
                "copies": [{}]}}"#,
            copies.join(",")
        ));
        let apart = SyncPlan::new(&fused, &|a, b| a == b);
        assert_eq!(apart.rank(0).copies_wait_start, vec![1, 2]);
        assert!(apart.rank(0).kernel_waits_start.is_empty());
        assert_eq!(apart.rank(1).signals_start, vec![0, 2]);
        // Ranks 0 and 1 share a GPU: their copies to each other move to the
        // destination's compute stream, which waits for the source.
        let shared = SyncPlan::new(&fused, &|a, b| a == b || a + b == 1);
        assert_eq!(shared.rank(0).copies_wait_start, vec![2]);
        assert_eq!(shared.rank(0).kernel_waits_start, vec![1]);
        assert_eq!(shared.rank(1).signals_start, vec![0, 2]);
        assert_eq!(shared.rank(2).signals_start, vec![0, 1]);
        // ...and the source's launch ends after the destination's kernel
        // (the copy in front of it has read the source's rows), a wait
        // that ranks on separate GPUs do not need (their own copy streams
        // read what they push).
        assert_eq!(shared.rank(1).waits_kernel_done, vec![0]);
        assert_eq!(shared.rank(0).signals_kernel_done, vec![1]);
        assert!(apart.ranks.iter().all(|r| r.waits_kernel_done.is_empty()));

        assert!(apart.ranks.iter().all(|r| r.uses_copy_stream));
        // Every rank on one GPU: every copy goes in front of a kernel.
        let one_gpu = SyncPlan::new(&fused, &|_, _| true);
        assert!(one_gpu.ranks.iter().all(|r| !r.uses_copy_stream));
        assert_eq!(one_gpu.rank(2).waits_kernel_done, vec![0, 1]);
        for sync in [&apart, &shared, &one_gpu] {
            for (rank, r) in sync.ranks.iter().enumerate() {
                for &peer in r.copies_wait_start.iter().chain(&r.kernel_waits_start) {
                    assert!(sync.rank(peer).signals_start.contains(&rank));
                }
                for &peer in &r.waits_kernel_done {
                    assert!(sync.rank(peer).signals_kernel_done.contains(&rank));
                }
            }
        }
        // No reduction copies: nobody waits for copies done.
        assert!(apart.ranks.iter().all(|r| r.signals_copies_done.is_empty()));
        assert_eq!(
            SyncPlan::new(&fused, &|a, b| a == b).rank(7),
            &RankSync::default()
        );
    }

    /// A launch ends once the last chunk each peer on another GPU pushes
    /// into it has landed (a causal kernel never waits for some), on that
    /// chunk's flag; a copy within its GPU needs no such wait.
    #[test]
    fn launch_ends_on_the_last_pushed_chunk() {
        let push = |src: i64, dst: i64, flag: i64| {
            format!(
                r#"{{"order": 0, "src_rank": {src}, "dst_rank": {dst}, "src_buffer": "K",
                    "dst_buffer": "K", "src_offset": 0, "dst_offset": 0, "rows": 1,
                    "row_elems": 4, "src_pitch": 4, "dst_pitch": 4, "flag": {flag}}}"#
            )
        };
        let fused = plan(&format!(
            r#"{{"plan": "p", "world_size": 3, "num_flags": 8, "buffers": [], "chunks": [],
                "copies": [[{}, {}, {}], [{}], [{}, {}]]}}"#,
            push(0, 1, 0),
            push(0, 2, 4),
            push(0, 1, 1),
            push(1, 0, 2),
            push(2, 0, 3),
            push(2, 1, 5)
        ));
        let apart = SyncPlan::new(&fused, &|a, b| a == b);
        assert_eq!(apart.rank(0).waits_last_arrivals, vec![2, 3]);
        assert_eq!(apart.rank(1).waits_last_arrivals, vec![1, 5]);
        assert_eq!(apart.rank(2).waits_last_arrivals, vec![4]);
        // Ranks 0 and 2 share a GPU: their copies to each other are made in
        // front of the destination's kernel.
        let shared = SyncPlan::new(&fused, &|a, b| a == b || a + b == 2);
        assert_eq!(shared.rank(0).waits_last_arrivals, vec![2]);
        assert!(shared.rank(2).waits_last_arrivals.is_empty());
    }

    /// A copy-engine reduce-scatter on 2 ranks: each rank's partial goes to
    /// its owner with no flag, so the owner's launch ends on the source's
    /// signal, and the copies wait for the owner's start.
    #[test]
    fn reduction_copies_without_flags_are_ordered_by_signals() {
        let partial = |owner: i64| {
            format!(
                r#"[{{"src_buffer": "P", "dst_buffer": "S", "owner": {owner}, "src_offset": 0,
                     "dst_offset": 0, "bytes": 64, "produced": [0, 1]}}]"#
            )
        };
        let fused = plan(&format!(
            r#"{{"plan": "p", "world_size": 2, "num_flags": 2, "buffers": [], "chunks": [],
                "copies": [[], []], "reduction_copies": [{}, {}]}}"#,
            partial(1),
            partial(0)
        ));
        let sync = SyncPlan::new(&fused, &|a, b| a == b);
        for (rank, peer) in [(0, 1), (1, 0)] {
            let r = sync.rank(rank);
            assert_eq!(r.reduction_copies_wait_start, vec![peer]);
            assert_eq!(r.waits_copies_done, vec![peer]);
            assert_eq!(r.signals_copies_done, vec![peer]);
            assert_eq!(r.signals_start, vec![peer]);
            assert!(r.copies_wait_start.is_empty());
            assert!(r.uses_copy_stream);
        }
    }

    /// Copy programs that pull an all-gather's chunks (`ldst`): every
    /// rank's kernel waits for every peer's start, and every launch ends
    /// after every peer's kernel.
    #[test]
    fn kernels_that_reach_into_peers_wait_for_them_both_ways() {
        let fused = plan(
            r#"{"plan": "p", "world_size": 3, "num_flags": 6, "copy_programs": 4, "buffers": [],
                "chunks": [], "copies": [[], [], []]}"#,
        );
        let sync = SyncPlan::new(&fused, &|a, b| a == b);
        for rank in 0..3 {
            let others: Vec<usize> = (0..3).filter(|&p| p != rank).collect();
            let r = sync.rank(rank);
            assert_eq!(r.kernel_waits_start, others);
            assert_eq!(r.waits_kernel_done, others);
            assert_eq!(r.signals_start, others);
            assert_eq!(r.signals_kernel_done, others);
            assert!(r.copies_wait_start.is_empty() && r.waits_copies_done.is_empty());
            assert!(!r.uses_copy_stream);
        }
    }

    #[test]
    fn words_follow_the_flags() {
        let words = SyncWords {
            num_flags: 5,
            world_size: 4,
        };
        assert_eq!(words.count(), 5 + 2 + 20 + 1);
        assert_eq!(words.copy_epoch(), 5);
        assert_eq!(words.signal_epoch(), 6);
        assert_eq!(words.started_by(0), 7);
        assert_eq!(words.copies_done_by(3), 14);
        assert_eq!(words.kernel_done_by(0), 15);
        assert_eq!(words.ended_by(0), words.kernel_done_by(3) + 1);
        // A replayed launch zeroes everything but its start barrier's
        // words and the word that holds 1.
        assert_eq!(words.zeroed(), words.ended_by(3) + 1);
        assert_eq!(words.entered_by(3) + 1, words.one());
        assert_eq!(words.count(), words.one() + 1);
        assert_eq!(words.awaited(4), Awaited::Flag(4));
        assert_eq!(words.awaited(8), Awaited::Start(1));
        assert_eq!(words.awaited(14), Awaited::Copies(3));
        assert_eq!(words.awaited(16), Awaited::Kernel(1));
        assert_eq!(words.awaited(16).to_string(), "rank 1's kernel to finish");
        assert_eq!(words.awaited(19), Awaited::Ended(0));
        assert_eq!(words.awaited(26), Awaited::Entered(3));
        assert_eq!(
            words.awaited(26).to_string(),
            "rank 3 to enter the replayed launch"
        );
    }
}
