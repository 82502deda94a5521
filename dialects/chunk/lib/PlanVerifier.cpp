//===- PlanVerifier.cpp - Whole-plan checks ----------------------------===//
//
// `chunk.plan`'s region verifier. It runs after every op inside the plan
// verified itself (bounds, sizes, rank maps) and checks what needs several
// ops at once:
//
//  * coverage: the transfers of one collective (`group`) write every element
//    of their destination buffer exactly once on every receiving rank; for
//    reductions, every written element receives exactly one contribution
//    from every rank;
//  * dependencies: `after` names transfers or producers of this plan, and
//    the dependency graph has no cycle (a cycle deadlocks the kernel);
//  * forwarding: a transfer that copies rows another transfer writes on the
//    rank it reads from waits for that transfer (a ring forwards a chunk
//    only once it arrived);
//  * producers: each buffer has at most one chunk.produce, a transfer that
//    waits for a producer copies from the buffer it produces, a transfer
//    that copies from a produced buffer waits for its producer (unless the
//    block stays in place), and no all-to-all moves a produced buffer (an
//    all-gather may: its expansion waits for the producer);
//  * consumers: a buffer that kernel tiles read is written by something;
//  * tiles: a consumer's or producer's tiles along a dimension that a
//    collective cuts into per-rank blocks fit those blocks, and, where the
//    collective gives its chunk count (not chunks(auto), which picks one
//    that fits), its chunks (checked first: such a plan would otherwise
//    expand into world_size^2 x chunks transfers before a pass refuses it).
//
// Coverage is exact and never builds a grid: a gather's boxes on a rank
// must be pairwise disjoint (a sweep along the dimension where the fewest
// pairs of boxes overlap compares only boxes that meet along it) and their
// volumes must add up to the buffer's; a reduction's boxes from each source
// must be disjoint and every source must cover what the widest one covers.
// That costs n log n plus the pairs compared, which are counted before any
// work and limited (a located error past the limit). A grid of the boxes'
// cut points, as before, cost the product of distinct edges per dimension:
// a few hundred boxes in a 3- to 8-D buffer ran it out of memory. Each
// rank's boxes are checked apart (an expanded all-gather has world_size^2 x
// chunks boxes, world_size x chunks per rank). Each
// transfer's maps are evaluated on every rank with integers
// (`evaluateOnRank`), not `AffineMap::compose`, which builds uniqued
// constant expressions (a two-shot all-reduce of world_size(72) in 8 chunks
// through chunk-expand-collectives: 1.2 s -> 0.37 s).
//
//===----------------------------------------------------------------------===//

#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

using namespace mlir;
using namespace synco::chunk;

namespace {

/// One instance of a transfer: what rank `rank` of the SPMD plan moves.
struct Placement {
  mutable TransferOp op;
  int64_t srcRank, dstRank;
  SmallVector<int64_t> offsets; // destination box
  ArrayRef<int64_t> sizes;
};

/// Describes the box of `p` for diagnostics, e.g. "[0:1024, 0:4096]".
std::string describeBox(ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  std::string text = "[";
  for (auto [i, offset] : llvm::enumerate(offsets)) {
    if (i)
      text += ", ";
    text += std::to_string(offset) + ":" + std::to_string(offset + sizes[i]);
  }
  return text + "]";
}

/// `@name` of a symbol op, for diagnostics.
FlatSymbolRefAttr symbolRef(Operation *symbol) {
  return FlatSymbolRefAttr::get(SymbolTable::getSymbolName(symbol));
}

/// The number of elements two boxes share (0: none). Both lie inside one
/// buffer (each transfer verified its regions on every rank), so neither the
/// ends nor the product overflow: the product is at most a box's volume.
int64_t sharedVolume(const Placement &a, const Placement &b) {
  int64_t volume = 1;
  for (auto [dim, offset] : llvm::enumerate(a.offsets)) {
    int64_t lo = std::max(offset, b.offsets[dim]);
    int64_t hi = std::min(offset + a.sizes[dim],
                          b.offsets[dim] + b.sizes[dim]);
    if (hi <= lo)
      return 0;
    volume *= hi - lo;
  }
  return volume;
}

/// The number of elements in a box.
int64_t volumeOf(const Placement &p) {
  int64_t volume = 1;
  for (int64_t size : p.sizes)
    volume *= size;
  return volume;
}

/// How many pairs of `boxes` overlap along `dim` (their extents along it
/// intersect): all pairs less those where one ends before the other starts.
int64_t pairsOverlappingAlong(ArrayRef<const Placement *> boxes, size_t dim) {
  SmallVector<int64_t> ends;
  ends.reserve(boxes.size());
  for (const Placement *p : boxes)
    ends.push_back(p->offsets[dim] + p->sizes[dim]);
  llvm::sort(ends);
  int64_t n = boxes.size();
  int64_t apart = 0;
  for (const Placement *p : boxes)
    apart += llvm::upper_bound(ends, p->offsets[dim]) - ends.begin();
  return n * (n - 1) / 2 - apart;
}

/// The most pairs of boxes one sweep compares (about a second): the plans
/// the templates write stay far below it; past it the plan is refused, never
/// verified for minutes or not at all.
constexpr int64_t kMaxComparedPairs = int64_t{1} << 26;

/// The pairs of boxes that share elements, found by a sweep along the
/// dimension where the fewest pairs overlap: each box is compared only with
/// the boxes whose extents along that dimension it meets. That costs
/// n log n plus those pairs (for the plans the templates write, chunks cut
/// one dimension and the pairs are few; a 2-D grid of a x a boxes compares
/// a^3 / 2; at worst every box spans every other along every dimension).
class OverlapSweep {
public:
  explicit OverlapSweep(ArrayRef<const Placement *> boxes) : boxes(boxes) {
    size_t rank = boxes.empty() ? 0 : boxes.front()->offsets.size();
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (size_t dim = 0; dim < rank && boxes.size() >= 2; ++dim)
      if (int64_t along = pairsOverlappingAlong(boxes, dim); along < fewest) {
        fewest = along;
        sweepDim = dim;
      }
  }

  /// Calls `fn(a, b)` for every pair of boxes that share elements, `a`
  /// before `b` in `boxes`, until `fn` returns true. Fails, having called
  /// `fn` for some pairs only, once it compared kMaxComparedPairs pairs.
  template <typename Fn> LogicalResult forEachOverlap(Fn fn) const {
    SmallVector<size_t> byStart(boxes.size());
    std::iota(byStart.begin(), byStart.end(), 0);
    auto start = [&](size_t i) { return boxes[i]->offsets[sweepDim]; };
    auto end = [&](size_t i) { return start(i) + boxes[i]->sizes[sweepDim]; };
    llvm::stable_sort(byStart,
                      [&](size_t a, size_t b) { return start(a) < start(b); });
    SmallVector<size_t> open; // boxes whose extent reaches the sweep
    int64_t compared = 0;
    for (size_t next : byStart) {
      llvm::erase_if(open, [&](size_t i) { return end(i) <= start(next); });
      compared += open.size();
      if (compared > kMaxComparedPairs)
        return failure();
      for (size_t i : open)
        if (sharedVolume(*boxes[i], *boxes[next]) > 0 &&
            fn(boxes[std::min(i, next)], boxes[std::max(i, next)]))
          return success();
      open.push_back(next);
    }
    return success();
  }

private:
  ArrayRef<const Placement *> boxes;
  size_t sweepDim = 0;
};

class PlanVerifier {
public:
  explicit PlanVerifier(PlanOp plan) : plan(plan), symbols(plan) {}

  LogicalResult verify() {
    return success(succeeded(verifyTilesInBlocks()) &&
                   succeeded(verifyCoverage()) &&
                   succeeded(verifyProducers()) &&
                   succeeded(verifyDependencies()) &&
                   succeeded(verifyForwarding()) &&
                   succeeded(verifyConsumers()));
  }

private:
  LogicalResult verifyTilesInBlocks();
  LogicalResult verifyCoverage();
  LogicalResult verifyGroupOnRank(StringRef group, BufferOp buffer,
                                  int64_t dstRank,
                                  ArrayRef<const Placement *> boxes,
                                  bool reduction);
  LogicalResult verifyDisjoint(StringRef group, BufferOp buffer,
                               int64_t dstRank,
                               ArrayRef<const Placement *> boxes,
                               bool reduction);
  FailureOr<int64_t> sharedBetweenSources(StringRef group, int64_t dstRank,
                                          ArrayRef<const Placement *> boxes);
  LogicalResult tooManyPairs(StringRef group, int64_t dstRank);
  LogicalResult verifyProducers();
  LogicalResult verifyDependencies();
  LogicalResult verifyForwarding();
  LogicalResult verifyConsumers();

  /// The buffer named `name`, or null. (One symbol table for the plan: a
  /// scan per lookup made verifying thousands of collectives quadratic.)
  BufferOp lookupBuffer(FlatSymbolRefAttr name) {
    return dyn_cast_or_null<BufferOp>(symbols.lookup(name.getAttr()));
  }

  PlanOp plan;
  SymbolTable symbols;
};

} // namespace

LogicalResult PlanVerifier::verifyTilesInBlocks() {
  int64_t worldSize = plan.getWorldSize();
  // The collective that cuts each (buffer, dimension) into world_size
  // blocks, and the one whose explicit chunks(n) cut it into chunks (with
  // the chunks' extent along it).
  // (A zigzag all-gather cuts its dimension in 2 * world_size blocks.)
  llvm::DenseMap<std::pair<Attribute, int64_t>, std::pair<Operation *, int64_t>>
      cuts;
  llvm::DenseMap<std::pair<Attribute, int64_t>, std::pair<Operation *, int64_t>>
      chunkCuts;
  auto cut = [&](FlatSymbolRefAttr buffer, int64_t dim,
                 std::optional<uint64_t> chunks, std::optional<uint64_t> split,
                 Operation *op, int64_t blocks) {
    cuts.try_emplace({buffer, dim}, op, blocks);
    BufferOp decl = lookupBuffer(buffer);
    if (!chunks || !decl)
      return;
    // (Each op verified itself first: the dimensions are in range and the
    // chunks cut them evenly.)
    ArrayRef<int64_t> shape = decl.getBufferType().getShape();
    int64_t chunked = split ? static_cast<int64_t>(*split) : dim;
    int64_t extent = split ? shape[chunked] : shape[dim] / worldSize;
    chunkCuts.try_emplace({buffer, chunked},
                          op, extent / static_cast<int64_t>(*chunks));
  };
  for (Operation &op : plan.getBody().front()) {
    if (auto ag = dyn_cast<AllGatherOp>(op))
      cut(ag.getBufferAttr(), ag.getDim(), ag.getChunks(), ag.getSplit(), &op,
          ag.getBlocks() == BlockLayout::zigzag ? 2 * worldSize : worldSize);
    else if (auto rs = dyn_cast<ReduceScatterOp>(op))
      cut(rs.getSrcAttr(), rs.getDim(), rs.getChunks(), std::nullopt, &op,
          worldSize);
    else if (auto ar = dyn_cast<AllReduceOp>(op))
      cut(ar.getSrcAttr(), ar.getDim(), ar.getChunks(), std::nullopt, &op,
          worldSize);
    else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
      // (A re-shard, `to(t)`: the source's blocks along dim, the
      // destination's along t, the chunks cutting t on both.)
      // (With split(dim), the chunks cut each block along dim.)
      std::optional<uint64_t> to = a2a.getTo();
      bool reshards = to && *to != a2a.getDim();
      bool cutsDim = a2a.getSplit() && *a2a.getSplit() == a2a.getDim();
      cut(a2a.getSrcAttr(), a2a.getDim(), a2a.getChunks(),
          reshards && !cutsDim ? to : std::nullopt, &op, worldSize);
      cut(a2a.getDstAttr(), reshards ? *to : a2a.getDim(), a2a.getChunks(),
          cutsDim ? std::optional<uint64_t>(a2a.getDim()) : std::nullopt, &op,
          worldSize);
    }
  }
  auto check = [&](Operation *user, FlatSymbolRefAttr name, int64_t dim,
                   int64_t tile) -> LogicalResult {
    BufferOp buffer = lookupBuffer(name);
    if (!buffer)
      return success();
    if (auto [blocks, count] = cuts.lookup({name, dim}); blocks) {
      int64_t extent = buffer.getBufferType().getShape()[dim];
      int64_t block = extent / count;
      if (block % tile != 0) {
        InFlightDiagnostic diag =
            user->emitOpError()
            << "tiles of " << tile << " along dimension " << dim << " of "
            << name << " do not fit its per-rank blocks of " << block << " ("
            << extent
            << (count == worldSize ? " / world_size " : " / zigzag half-blocks ")
            << count << "): a tile would span two ranks' blocks, and a tile waits for "
               "(or signals) one chunk";
        diag.attachNote(blocks->getLoc()) << "the blocks are cut here";
        return diag;
      }
    }
    auto chunked = chunkCuts.find({name, dim});
    if (chunked == chunkCuts.end())
      return success();
    auto [collective, chunk] = chunked->second;
    if (chunk % tile == 0)
      return success();
    InFlightDiagnostic diag =
        user->emitOpError()
        << "tiles of " << tile << " along dimension " << dim << " of " << name
        << " do not fit its chunks of " << chunk
        << ": a tile would span two chunks, and a tile waits for (or signals) "
           "one chunk; pick a chunk count whose chunks hold whole tiles";
    diag.attachNote(collective->getLoc()) << "the chunks are cut here";
    return diag;
  };
  for (auto consume : plan.getBody().getOps<ConsumeOp>())
    if (failed(check(consume, consume.getBufferAttr(), consume.getDim(),
                     consume.getTile())))
      return failure();
  for (auto produce : plan.getBody().getOps<ProduceOp>())
    if (failed(check(produce, produce.getBufferAttr(), produce.getDim(),
                     produce.getTile())))
      return failure();
  return success();
}

LogicalResult PlanVerifier::verifyCoverage() {
  int64_t worldSize = plan.getWorldSize();
  // group -> all placements of its transfers, in program order.
  llvm::MapVector<StringRef, SmallVector<Placement>> groups;
  for (auto transfer : plan.getBody().getOps<TransferOp>()) {
    if (!transfer.getGroup())
      continue;
    auto &placements = groups[*transfer.getGroup()];
    for (int64_t rank = 0; rank < worldSize; ++rank)
      placements.push_back(
          // (The transfer verified: its maps evaluate on every rank.)
          {transfer, (*evaluateOnRank(transfer.getSrcRank(), rank))[0],
           (*evaluateOnRank(transfer.getDstRank(), rank))[0],
           *transfer.getDst().getOffsetsOn(rank), transfer.getDst().getSizes()});
  }

  for (auto &[group, placements] : groups) {
    TransferOp first = placements.front().op;
    FlatSymbolRefAttr bufferName = first.getDst().getBuffer();
    bool reduction = first.getReduce().has_value();
    for (const Placement &p : placements) {
      if (p.op.getDst().getBuffer() != bufferName)
        return p.op.emitOpError()
               << "writes " << p.op.getDst().getBuffer() << " but group \""
               << group << "\" writes " << bufferName
               << "; a group's transfers share their destination buffer";
      if (p.op.getReduce().has_value() != reduction)
        return p.op.emitOpError()
               << "mixes reducing and plain transfers in group \"" << group
               << "\"";
      if (p.op.getCollective() != first.getCollective() ||
          p.op.getPhase() != first.getPhase())
        return p.op.emitOpError()
               << "is not of the collective (and phase) of group \"" << group
               << "\"'s first transfer, "
               << symbolRef(first.getOperation());
    }
    BufferOp buffer = lookupBuffer(bufferName);
    // Bucket once by receiving rank (rank maps are checked to stay in
    // [0, world_size) by the transfer's own verifier).
    SmallVector<SmallVector<const Placement *>> boxesOnRank(worldSize);
    for (const Placement &p : placements)
      boxesOnRank[p.dstRank].push_back(&p);
    for (int64_t rank = 0; rank < worldSize; ++rank)
      if (failed(verifyGroupOnRank(group, buffer, rank, boxesOnRank[rank],
                                   reduction)))
        return failure();
  }
  return success();
}

LogicalResult PlanVerifier::verifyGroupOnRank(StringRef group, BufferOp buffer,
                                              int64_t dstRank,
                                              ArrayRef<const Placement *> boxes,
                                              bool reduction) {
  if (!reduction) {
    // A gather writes every element once: its boxes are disjoint and their
    // volumes add up to the buffer's.
    if (failed(verifyDisjoint(group, buffer, dstRank, boxes, reduction)))
      return failure();
    int64_t covered = 0;
    for (const Placement *p : boxes)
      covered += volumeOf(*p); // disjoint boxes of one buffer: no overflow
    int64_t elements = buffer.getBufferType().getNumElements();
    if (covered == elements)
      return success();
    return plan.emitOpError()
           << "the transfers of group \"" << group << "\" leave part of "
           << symbolRef(buffer) << " unwritten on rank " << dstRank
           << " (they write " << covered << " of " << elements
           << " elements): add the missing chunks, including the rank's "
              "own block as a 'local' transfer";
  }

  // A reduction gives each written element one contribution from every
  // source rank: each source's boxes are disjoint, and every source covers
  // the same elements. Each source is compared with the one that covers the
  // most (`widest`): a source that covers less than its overlap with it
  // misses elements; where it covers more, `widest` misses them.
  int64_t worldSize = plan.getWorldSize();
  SmallVector<SmallVector<const Placement *>> fromSource(worldSize);
  for (const Placement *p : boxes)
    fromSource[p->srcRank].push_back(p);
  SmallVector<int64_t> covered(worldSize, 0);
  for (auto [src, ownBoxes] : llvm::enumerate(fromSource)) {
    if (failed(verifyDisjoint(group, buffer, dstRank, ownBoxes, reduction)))
      return failure();
    for (const Placement *p : ownBoxes)
      covered[src] += volumeOf(*p);
  }
  int64_t widest = llvm::max_element(covered) - covered.begin();
  SmallVector<bool> missing(worldSize, false);
  for (int64_t src = 0; src < worldSize; ++src) {
    if (src == widest)
      continue;
    SmallVector<const Placement *> pair(fromSource[src]);
    llvm::append_range(pair, fromSource[widest]);
    FailureOr<int64_t> shared =
        sharedBetweenSources(group, dstRank, pair);
    if (failed(shared))
      return failure();
    if (*shared < covered[widest])
      missing[src] = true;
    if (*shared < covered[src])
      missing[widest] = true;
  }
  if (!llvm::is_contained(missing, true))
    return success();
  InFlightDiagnostic diag = plan.emitOpError()
                            << "the reduction of group \"" << group
                            << "\" into " << symbolRef(buffer) << " on rank "
                            << dstRank << " gets no contribution from rank";
  // (The first few: a plan of 1024 ranks can miss a thousand.)
  constexpr int64_t kListed = 8;
  int64_t count = llvm::count(missing, true), listed = 0;
  for (int64_t src = 0; src < worldSize && listed < kListed; ++src)
    if (missing[src]) {
      diag << " " << src;
      ++listed;
    }
  if (count > listed)
    diag << " and " << (count - listed) << " other ranks";
  diag << " for some elements: every rank must contribute to every "
          "reduced element exactly once";
  return diag;
}

LogicalResult PlanVerifier::verifyDisjoint(StringRef group, BufferOp buffer,
                                           int64_t dstRank,
                                           ArrayRef<const Placement *> boxes,
                                           bool reduction) {
  const Placement *earlier = nullptr, *later = nullptr;
  if (failed(OverlapSweep(boxes).forEachOverlap(
          [&](const Placement *a, const Placement *b) {
            earlier = a;
            later = b;
            return true;
          })))
    return tooManyPairs(group, dstRank);
  if (!later)
    return success();
  InFlightDiagnostic diag =
      later->op.emitOpError()
      << "writes " << describeBox(later->offsets, later->sizes) << " of "
      << symbolRef(buffer) << " on rank " << dstRank << ", which "
      << symbolRef(earlier->op) << " already writes: group \"" << group
      << "\" must write each element exactly once"
      << (reduction ? " per source rank" : "");
  diag.attachNote(earlier->op.getLoc()) << "the other writer is here";
  return diag;
}

FailureOr<int64_t>
PlanVerifier::sharedBetweenSources(StringRef group, int64_t dstRank,
                                   ArrayRef<const Placement *> boxes) {
  // Each source's boxes are disjoint: only pairs across the two overlap.
  int64_t shared = 0;
  if (failed(OverlapSweep(boxes).forEachOverlap(
          [&](const Placement *a, const Placement *b) {
            shared += sharedVolume(*a, *b);
            return false;
          })))
    return tooManyPairs(group, dstRank);
  return shared;
}

LogicalResult PlanVerifier::tooManyPairs(StringRef group, int64_t dstRank) {
  return plan.emitOpError()
         << "the coverage check of group \"" << group << "\" on rank "
         << dstRank << " stopped at its limit of " << kMaxComparedPairs
         << " compared pairs of boxes (along every dimension, too many of "
            "its boxes' extents meet): cut the buffer into fewer boxes, or "
            "along fewer dimensions";
}

LogicalResult PlanVerifier::verifyDependencies() {
  // Resolve every `after` entry, then look for a cycle by depth-first search.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> edges;
  SmallVector<Operation *> nodes;
  // (A two-shot all-reduce's gather transfers each wait for every rank's
  // reduce-scatter chunk: looking each name up by a scan of the plan made
  // this quadratic in its transfers, 12 s for world_size(512), chunks(4).)
  for (Operation &op : plan.getBody().front()) {
    auto transfer = dyn_cast<TransferOp>(op);
    if (isa<ProduceOp>(op))
      nodes.push_back(&op);
    if (!transfer)
      continue;
    nodes.push_back(&op);
    if (!transfer.getAfter())
      continue;
    for (auto name : transfer.getAfter()->getAsRange<FlatSymbolRefAttr>()) {
      Operation *dep = symbols.lookup(name.getAttr());
      if (!dep || !isa<TransferOp, ProduceOp>(dep))
        return transfer.emitOpError()
               << "waits for " << name
               << ", which is not a chunk.transfer or chunk.produce of plan @"
               << plan.getSymName() << ": nothing would ever signal it";
      if (dep == &op)
        return transfer.emitOpError() << "waits for itself";
      if (auto producer = dyn_cast<ProduceOp>(dep);
          producer &&
          producer.getBufferAttr() != transfer.getSrc().getBuffer())
        return transfer.emitOpError()
               << "waits for the tiles that produce "
               << producer.getBufferAttr() << ", but copies from "
               << transfer.getSrc().getBuffer()
               << ": that wait would not order anything it reads";
      edges[&op].push_back(dep);
    }
  }

  enum class Mark { unvisited, active, done };
  llvm::DenseMap<Operation *, Mark> marks;
  SmallVector<Operation *> stack;
  std::function<Operation *(Operation *)> visit =
      [&](Operation *node) -> Operation * {
    marks[node] = Mark::active;
    stack.push_back(node);
    for (Operation *next : edges.lookup(node)) {
      Mark m = marks.lookup(next);
      if (m == Mark::active)
        return next;
      if (m == Mark::unvisited)
        if (Operation *cycle = visit(next))
          return cycle;
    }
    stack.pop_back();
    marks[node] = Mark::done;
    return nullptr;
  };
  for (Operation *node : nodes) {
    if (marks.lookup(node) != Mark::unvisited)
      continue;
    Operation *start = visit(node);
    if (!start)
      continue;
    auto first = llvm::find(stack, start);
    std::string path;
    for (auto it = first; it != stack.end(); ++it)
      path += "@" +
              SymbolTable::getSymbolName(*it).getValue().str() + " -> ";
    path += "@" + SymbolTable::getSymbolName(start).getValue().str();
    return start->emitOpError()
           << "is part of a dependency cycle, which would deadlock: " << path;
  }
  return success();
}

namespace {
/// The boxes transfers write into one buffer on one rank, sorted along the
/// dimension where their starts differ most, to find the boxes a read box
/// meets without comparing it with all of them.
class WrittenBoxes {
public:
  void add(Placement p) { boxes.push_back(std::move(p)); }

  void index() {
    size_t rank = boxes.empty() ? 0 : boxes.front().offsets.size();
    size_t most = 0;
    for (size_t d = 0; d < rank; ++d) {
      llvm::DenseSet<int64_t> starts;
      for (const Placement &p : boxes)
        starts.insert(p.offsets[d]);
      if (starts.size() > most) {
        most = starts.size();
        dim = d;
      }
    }
    llvm::sort(boxes, [&](const Placement &a, const Placement &b) {
      return a.offsets[dim] < b.offsets[dim];
    });
    for (const Placement &p : boxes)
      widest = std::max(widest, p.sizes[dim]);
  }

  /// Calls `fn(box)` for every written box that shares elements with
  /// `read`, until `fn` returns true (then returns that box).
  template <typename Fn>
  const Placement *findMeeting(const Placement &read, Fn fn) const {
    if (boxes.empty())
      return nullptr;
    int64_t lo = read.offsets[dim] - widest + 1;
    int64_t hi = read.offsets[dim] + read.sizes[dim];
    auto it = llvm::partition_point(
        boxes, [&](const Placement &p) { return p.offsets[dim] < lo; });
    for (; it != boxes.end() && it->offsets[dim] < hi; ++it)
      if (sharedVolume(read, *it) > 0 && fn(*it))
        return &*it;
    return nullptr;
  }

private:
  SmallVector<Placement> boxes;
  size_t dim = 0;
  int64_t widest = 0;
};

/// Whether `t` leaves its rows where they are (an all-gather's own block).
bool staysInPlace(TransferOp t) {
  return t.getSrc() == t.getDst() && t.getSrcRank() == t.getDstRank();
}
} // namespace

LogicalResult PlanVerifier::verifyForwarding() {
  // Rows that a transfer writes into a rank's buffer exist there only once
  // it landed: whatever copies them on (a ring forwards each chunk it
  // received) must wait for it. Boxes are indexed by (buffer, rank) and
  // each read box meets only the written boxes it overlaps.
  int64_t worldSize = plan.getWorldSize();
  llvm::DenseMap<std::pair<Attribute, int64_t>, WrittenBoxes> written;
  SmallVector<TransferOp> moving;
  for (auto t : plan.getBody().getOps<TransferOp>()) {
    if (staysInPlace(t))
      continue;
    moving.push_back(t);
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      int64_t dst = (*evaluateOnRank(t.getDstRank(), rank))[0];
      written[{t.getDst().getBuffer(), dst}].add(
          {t, (*evaluateOnRank(t.getSrcRank(), rank))[0], dst,
           *t.getDst().getOffsetsOn(rank), t.getDst().getSizes()});
    }
  }
  for (auto &[key, boxes] : written)
    boxes.index();
  for (TransferOp t : moving) {
    llvm::SmallPtrSet<Operation *, 4> awaited;
    if (t.getAfter())
      for (auto name : t.getAfter()->getAsRange<FlatSymbolRefAttr>())
        awaited.insert(symbols.lookup(name.getAttr()));
    Attribute from = t.getSrc().getBuffer();
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      int64_t src = (*evaluateOnRank(t.getSrcRank(), rank))[0];
      auto boxes = written.find({from, src});
      if (boxes == written.end())
        continue;
      Placement read{t, src, rank, *t.getSrc().getOffsetsOn(rank),
                     t.getSrc().getSizes()};
      const Placement *unawaited =
          boxes->second.findMeeting(read, [&](const Placement &w) {
            return w.op != t && !awaited.contains(w.op.getOperation());
          });
      if (!unawaited)
        continue;
      InFlightDiagnostic diag =
          t.emitOpError()
          << "copies " << describeBox(read.offsets, read.sizes) << " of "
          << t.getSrc().getBuffer() << " from rank " << src << " (on rank "
          << rank << "), rows that " << symbolRef(unawaited->op)
          << " writes there, without waiting for it (after ["
          << symbolRef(unawaited->op)
          << "]): it could copy rows that have not arrived";
      diag.attachNote(unawaited->op.getLoc()) << "the writing transfer is here";
      return diag;
    }
  }
  return success();
}

LogicalResult PlanVerifier::verifyProducers() {
  llvm::SmallDenseMap<Attribute, ProduceOp> producers;
  for (auto produce : plan.getBody().getOps<ProduceOp>()) {
    auto [it, inserted] =
        producers.try_emplace(produce.getBufferAttr(), produce);
    if (!inserted) {
      InFlightDiagnostic diag =
          produce.emitOpError()
          << "produces " << produce.getBufferAttr() << ", which "
          << symbolRef(it->second) << " already produces: every chunk must "
          << "have exactly one producer";
      diag.attachNote(it->second.getLoc()) << "the other producer is here";
      return diag;
    }
  }
  // A produced buffer's rows exist only once their tiles are done: whatever
  // copies from it must wait for them. Reductions, all-gathers and
  // re-sharding all-to-alls do (their expanded transfers wait for the
  // producer); an all-to-all within one splitting is not fused so.
  auto producedBy = [&](Attribute buffer) -> ProduceOp {
    return producers.lookup(buffer);
  };
  for (Operation &op : plan.getBody().front()) {
    auto a2a = dyn_cast<AllToAllOp>(op);
    bool reshards = a2a && a2a.getTo() && *a2a.getTo() != a2a.getDim();
    if (ProduceOp producer =
            a2a && !reshards ? producedBy(a2a.getSrcAttr()) : ProduceOp()) {
      InFlightDiagnostic diag =
          op.emitOpError()
          << "moves " << a2a.getSrcAttr() << ", which kernel tiles produce ("
          << symbolRef(producer) << "): an all-to-all of a produced buffer "
          << "is supported as a re-shard only (to(t), t != dim)";
      diag.attachNote(producer.getLoc()) << "the producer is here";
      return diag;
    }
    auto transfer = dyn_cast<TransferOp>(op);
    if (!transfer)
      continue;
    ProduceOp producer = producedBy(transfer.getSrc().getBuffer());
    // A block that stays where it is (an all-gather's own block) reads
    // nothing early.
    bool inPlace = staysInPlace(transfer);
    if (!producer || inPlace)
      continue;
    bool waits =
        transfer.getAfter() &&
        llvm::any_of(transfer.getAfter()->getAsRange<FlatSymbolRefAttr>(),
                     [&](FlatSymbolRefAttr name) {
                       return name.getValue() == producer.getSymName();
                     });
    if (!waits) {
      InFlightDiagnostic diag =
          transfer.emitOpError()
          << "copies from " << transfer.getSrc().getBuffer()
          << ", which " << symbolRef(producer)
          << " produces, without waiting for it (after ["
          << symbolRef(producer) << "]): it could copy rows the tiles have "
          << "not written yet";
      diag.attachNote(producer.getLoc()) << "the producer is here";
      return diag;
    }
  }
  return success();
}

LogicalResult PlanVerifier::verifyConsumers() {
  llvm::SmallDenseSet<Attribute> written;
  for (Operation &op : plan.getBody().front()) {
    if (auto t = dyn_cast<TransferOp>(op))
      written.insert(t.getDst().getBuffer());
    else if (auto ag = dyn_cast<AllGatherOp>(op))
      written.insert(ag.getBufferAttr());
    else if (auto rs = dyn_cast<ReduceScatterOp>(op))
      written.insert(rs.getDstAttr());
    else if (auto ar = dyn_cast<AllReduceOp>(op))
      written.insert(ar.getDstAttr());
    else if (auto a2a = dyn_cast<AllToAllOp>(op))
      written.insert(a2a.getDstAttr());
  }
  for (auto consume : plan.getBody().getOps<ConsumeOp>())
    if (!written.contains(consume.getBufferAttr()))
      return consume.emitOpError()
             << "reads " << consume.getBufferAttr()
             << " but no transfer or collective of the plan writes it, so "
                "its tiles would wait forever";
  return success();
}

LogicalResult PlanOp::verifyRegions() { return PlanVerifier(*this).verify(); }
