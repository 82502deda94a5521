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
// Coverage is computed exactly on a compressed grid: the boundaries of every
// box along each dimension cut the buffer into cells, and each cell's
// writers are counted. That is linear in the number of cells the boxes
// touch, not in the buffer's size, and each rank's cells are built from that
// rank's boxes only: an expanded all-gather (world_size^2 x chunks boxes)
// verifies in time proportional to its boxes (world_size(1024): 12 s for the
// whole synco-ag-gemm pipeline, before: 100 s, most of it here). Each
// transfer's maps are evaluated on every rank with integers
// (`evaluateOnRank`), not `AffineMap::compose`, which builds uniqued
// constant expressions (a two-shot all-reduce of world_size(72) in 8 chunks
// through chunk-expand-collectives: 1.2 s -> 0.37 s).
//
//===----------------------------------------------------------------------===//

#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

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

/// The cells of the grid that the boundaries of `boxes` cut `shape` into.
struct CompressedGrid {
  SmallVector<SmallVector<int64_t>> cuts; // sorted unique, per dimension

  CompressedGrid(ArrayRef<int64_t> shape, ArrayRef<const Placement *> boxes) {
    cuts.resize(shape.size());
    for (auto [dim, extent] : llvm::enumerate(shape)) {
      cuts[dim] = {0, extent};
      for (const Placement *p : boxes) {
        cuts[dim].push_back(p->offsets[dim]);
        cuts[dim].push_back(p->offsets[dim] + p->sizes[dim]);
      }
      llvm::sort(cuts[dim]);
      cuts[dim].erase(llvm::unique(cuts[dim]), cuts[dim].end());
    }
  }

  int64_t numCells() const {
    int64_t n = 1;
    for (const auto &c : cuts)
      n *= c.size() - 1;
    return n;
  }

  /// Calls `fn(cellIndex, cellVolume)` for every cell inside `p`'s box.
  template <typename Fn> void forEachCell(const Placement &p, Fn fn) const {
    size_t rank = cuts.size();
    SmallVector<size_t> lo(rank), hi(rank), idx(rank);
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = llvm::lower_bound(cuts[d], p.offsets[d]) - cuts[d].begin();
      hi[d] = llvm::lower_bound(cuts[d], p.offsets[d] + p.sizes[d]) -
              cuts[d].begin();
      idx[d] = lo[d];
      if (lo[d] == hi[d])
        return;
    }
    while (true) {
      int64_t cell = 0, volume = 1;
      for (size_t d = 0; d < rank; ++d) {
        cell = cell * (cuts[d].size() - 1) + idx[d];
        volume *= cuts[d][idx[d] + 1] - cuts[d][idx[d]];
      }
      fn(cell, volume);
      size_t d = rank;
      while (d > 0) {
        --d;
        if (++idx[d] < hi[d])
          break;
        idx[d] = lo[d];
        if (d == 0)
          return;
      }
    }
  }
};

class PlanVerifier {
public:
  explicit PlanVerifier(PlanOp plan) : plan(plan) {}

  LogicalResult verify() {
    return success(succeeded(verifyTilesInBlocks()) &&
                   succeeded(verifyCoverage()) &&
                   succeeded(verifyProducers()) &&
                   succeeded(verifyDependencies()) &&
                   succeeded(verifyConsumers()));
  }

private:
  LogicalResult verifyTilesInBlocks();
  LogicalResult verifyCoverage();
  LogicalResult verifyGroupOnRank(StringRef group, BufferOp buffer,
                                  int64_t dstRank,
                                  ArrayRef<const Placement *> boxes,
                                  bool reduction);
  LogicalResult verifyProducers();
  LogicalResult verifyDependencies();
  LogicalResult verifyConsumers();

  PlanOp plan;
};

} // namespace

LogicalResult PlanVerifier::verifyTilesInBlocks() {
  int64_t worldSize = plan.getWorldSize();
  // The collective that cuts each (buffer, dimension) into world_size
  // blocks, and the one whose explicit chunks(n) cut it into chunks (with
  // the chunks' extent along it).
  llvm::DenseMap<std::pair<Attribute, int64_t>, Operation *> cuts;
  llvm::DenseMap<std::pair<Attribute, int64_t>, std::pair<Operation *, int64_t>>
      chunkCuts;
  auto cut = [&](FlatSymbolRefAttr buffer, int64_t dim,
                 std::optional<uint64_t> chunks, std::optional<uint64_t> split,
                 Operation *op) {
    cuts.try_emplace({buffer, dim}, op);
    BufferOp decl = plan.lookupBuffer(buffer);
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
      cut(ag.getBufferAttr(), ag.getDim(), ag.getChunks(), ag.getSplit(), &op);
    else if (auto rs = dyn_cast<ReduceScatterOp>(op))
      cut(rs.getSrcAttr(), rs.getDim(), rs.getChunks(), std::nullopt, &op);
    else if (auto ar = dyn_cast<AllReduceOp>(op))
      cut(ar.getSrcAttr(), ar.getDim(), ar.getChunks(), std::nullopt, &op);
    else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
      cut(a2a.getSrcAttr(), a2a.getDim(), a2a.getChunks(), std::nullopt, &op);
      cut(a2a.getDstAttr(), a2a.getDim(), a2a.getChunks(), std::nullopt, &op);
    }
  }
  auto check = [&](Operation *user, FlatSymbolRefAttr name, int64_t dim,
                   int64_t tile) -> LogicalResult {
    BufferOp buffer = plan.lookupBuffer(name);
    if (!buffer)
      return success();
    if (Operation *blocks = cuts.lookup({name, dim})) {
      int64_t extent = buffer.getBufferType().getShape()[dim];
      int64_t block = extent / worldSize;
      if (block % tile != 0) {
        InFlightDiagnostic diag =
            user->emitOpError()
            << "tiles of " << tile << " along dimension " << dim << " of "
            << name << " do not fit its per-rank blocks of " << block << " ("
            << extent << " / world_size " << worldSize
            << "): a tile would span two ranks' blocks, and a tile waits for "
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
    BufferOp buffer = plan.lookupBuffer(bufferName);
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
  ArrayRef<int64_t> shape = buffer.getBufferType().getShape();
  CompressedGrid grid(shape, boxes);
  int64_t worldSize = plan.getWorldSize();
  // The first box covering each cell (null: none yet) and, for reductions
  // only, the first from each source rank. A gather clashes with any earlier
  // writer of the cell, a reduction only with an earlier writer from the
  // same source. (A gather's per-source table would cost cells x world_size
  // per rank, cubic in the world size over the plan.)
  int64_t numCells = grid.numCells();
  SmallVector<const Placement *> writers(reduction ? numCells * worldSize : 0,
                                         nullptr);
  SmallVector<const Placement *> anyWriter(numCells, nullptr);
  for (const Placement *p : boxes) {
    const Placement *clash = nullptr;
    grid.forEachCell(*p, [&](int64_t cell, int64_t) {
      const Placement *&earlier =
          reduction ? writers[cell * worldSize + p->srcRank] : anyWriter[cell];
      if (earlier && !clash)
        clash = earlier;
      if (!earlier)
        earlier = p;
      if (!anyWriter[cell])
        anyWriter[cell] = p;
    });
    if (clash) {
      InFlightDiagnostic diag =
          p->op.emitOpError()
          << "writes " << describeBox(p->offsets, p->sizes) << " of "
          << symbolRef(buffer) << " on rank " << dstRank << ", which "
          << symbolRef(clash->op) << " already writes: group \"" << group
          << "\" must write each element exactly once"
          << (reduction ? " per source rank" : "");
      diag.attachNote(clash->op.getLoc()) << "the other writer is here";
      return diag;
    }
  }

  // Every cell: gathers need exactly one writer everywhere; reductions need
  // either nothing, or one contribution from every rank.
  int64_t missing = 0;
  SmallVector<int64_t> missingSources;
  for (int64_t cell = 0; cell < numCells; ++cell) {
    bool any = anyWriter[cell] != nullptr;
    if (!reduction) {
      if (!any)
        ++missing;
      continue;
    }
    if (!any)
      continue;
    ArrayRef<const Placement *> sources(&writers[cell * worldSize], worldSize);
    for (int64_t src = 0; src < worldSize; ++src)
      if (!sources[src] && !llvm::is_contained(missingSources, src))
        missingSources.push_back(src);
  }
  if (!reduction && missing > 0) {
    int64_t covered = 0;
    for (const Placement *p : boxes) {
      int64_t n = 1;
      for (int64_t s : p->sizes)
        n *= s;
      covered += n;
    }
    return plan.emitOpError()
           << "the transfers of group \"" << group << "\" leave part of "
           << symbolRef(buffer) << " unwritten on rank " << dstRank
           << " (they write " << covered << " of "
           << buffer.getBufferType().getNumElements()
           << " elements): add the missing chunks, including the rank's "
              "own block as a 'local' transfer";
  }
  if (reduction && !missingSources.empty()) {
    InFlightDiagnostic diag = plan.emitOpError()
                              << "the reduction of group \"" << group
                              << "\" into " << symbolRef(buffer)
                              << " on rank " << dstRank
                              << " gets no contribution from rank";
    for (int64_t src : missingSources)
      diag << " " << src;
    diag << " for some elements: every rank must contribute to every "
            "reduced element exactly once";
    return diag;
  }
  return success();
}

LogicalResult PlanVerifier::verifyDependencies() {
  // Resolve every `after` entry, then look for a cycle by depth-first search.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> edges;
  SmallVector<Operation *> nodes;
  // One symbol table for the plan: a two-shot all-reduce's gather
  // transfers each wait for every rank's reduce-scatter chunk, and looking
  // each name up by a scan of the plan made this quadratic in its
  // transfers (12 s for world_size(512), chunks(4)).
  SymbolTable symbols(plan);
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
  // copies from it must wait for them. Reductions and all-gathers do (their
  // expanded transfers wait for the producer); an all-to-all does not.
  auto producedBy = [&](Attribute buffer) -> ProduceOp {
    return producers.lookup(buffer);
  };
  for (Operation &op : plan.getBody().front()) {
    auto a2a = dyn_cast<AllToAllOp>(op);
    if (ProduceOp producer = a2a ? producedBy(a2a.getSrcAttr()) : ProduceOp()) {
      InFlightDiagnostic diag =
          op.emitOpError()
          << "moves " << a2a.getSrcAttr() << ", which kernel tiles produce ("
          << symbolRef(producer) << "): an all-to-all of a produced buffer "
          << "is not supported (its chunks would be copied before the tiles "
          << "write them)";
      diag.attachNote(producer.getLoc()) << "the producer is here";
      return diag;
    }
    auto transfer = dyn_cast<TransferOp>(op);
    if (!transfer)
      continue;
    ProduceOp producer = producedBy(transfer.getSrc().getBuffer());
    // A block that stays where it is (an all-gather's own block) reads
    // nothing early.
    bool inPlace = transfer.getSrc() == transfer.getDst() &&
                   transfer.getSrcRank() == transfer.getDstRank();
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
