//===- ChunkOps.cpp - Per-op verifiers and custom syntax ---------------===//
//
// Each op checks what it can see from itself and the plan's symbol table.
// Checks that span several ops (coverage, dependency cycles) live in
// PlanVerifier.cpp.
//
//===----------------------------------------------------------------------===//

#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace synco::chunk;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `chunks(auto)` or `chunks(<n>)`: an absent attribute means auto.
static ParseResult parseChunkCount(OpAsmParser &parser, IntegerAttr &count) {
  if (succeeded(parser.parseOptionalKeyword("auto")))
    return success();
  int64_t value;
  SMLoc loc = parser.getCurrentLocation();
  OptionalParseResult parsed = parser.parseOptionalInteger(value);
  if (!parsed.has_value())
    return parser.emitError(loc, "expected a chunk count or 'auto'");
  if (failed(*parsed))
    return failure();
  count = parser.getBuilder().getI64IntegerAttr(value);
  return success();
}

static void printChunkCount(OpAsmPrinter &printer, Operation *,
                            IntegerAttr count) {
  if (count)
    printer << count.getInt();
  else
    printer << "auto";
}

/// A rank map written as a bare affine map: `(r) -> ((r + 1) mod 4)`.
static ParseResult parseRankMap(OpAsmParser &parser, AffineMapAttr &map) {
  AffineMap value;
  if (parseAffineMapAsWritten(parser, value))
    return failure();
  map = AffineMapAttr::get(value);
  return success();
}

static void printRankMap(OpAsmPrinter &printer, Operation *,
                         AffineMapAttr map) {
  map.getValue().print(printer.getStream());
}

#define GET_OP_CLASSES
#include "synco/Dialect/Chunk/ChunkOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Resolves `name` to a buffer of the enclosing plan, or reports `what` on
/// `op` and returns null. The ops that name buffers check them in
/// `verifySymbolUses`, where `symbols` holds one symbol table per plan for
/// the whole verification: a scan of the plan per lookup made verifying a
/// plan of n transfers cost n^2 (3,000 all-gathers, expanded: 11 s).
static BufferOp lookupBufferOrError(Operation *op, FlatSymbolRefAttr name,
                                    StringRef what,
                                    SymbolTableCollection &symbols) {
  auto plan = op->getParentOfType<PlanOp>();
  if (!plan)
    return {};
  auto buffer = symbols.lookupSymbolIn<BufferOp>(plan, name);
  if (!buffer)
    op->emitOpError() << what << " " << name
                      << " is not a chunk.buffer of plan @"
                      << plan.getSymName();
  return buffer;
}

static int64_t worldSizeOf(Operation *op) {
  return op->getParentOfType<PlanOp>().getWorldSize();
}

/// Whether a `chunk.produce` of `buffer` is in `op`'s plan.
static bool producedInPlan(Operation *op, FlatSymbolRefAttr buffer) {
  auto plan = op->getParentOfType<PlanOp>();
  if (!plan)
    return false;
  bool found = false;
  plan.walk([&](ProduceOp produce) {
    found |= produce.getBufferAttr() == buffer;
  });
  return found;
}

/// Checks a rank map: one dimension, one result, values in [0, worldSize).
static LogicalResult verifyRankMap(Operation *op, AffineMap map,
                                   StringRef what, int64_t worldSize) {
  if (map.getNumDims() != 1 || map.getNumSymbols() != 0 ||
      map.getNumResults() != 1)
    return op->emitOpError()
           << what << " must be an affine map (r) -> (rank), got "
           << AffineMapAttr::get(map);
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    std::optional<SmallVector<int64_t>> values = evaluateOnRank(map, rank);
    if (!values)
      return op->emitOpError()
             << what << " " << AffineMapAttr::get(map)
             << " cannot be evaluated on rank " << rank << ": "
             << kUnevaluableMap;
    int64_t value = (*values)[0];
    if (value < 0 || value >= worldSize)
      return op->emitOpError()
             << what << " " << AffineMapAttr::get(map) << " gives rank " << value << " on rank "
             << rank << ", outside [0, " << worldSize << ")";
  }
  return success();
}

/// Checks that `region` lies inside its buffer on every rank.
static LogicalResult verifyRegionInBounds(Operation *op, RegionAttr region,
                                          StringRef what, BufferOp buffer,
                                          int64_t worldSize) {
  ArrayRef<int64_t> shape = buffer.getBufferType().getShape();
  ArrayRef<int64_t> sizes = region.getSizes();
  if (sizes.size() != shape.size())
    return op->emitOpError()
           << what << " region has " << sizes.size()
           << " dimensions but buffer " << region.getBuffer() << " has "
           << shape.size();
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    std::optional<SmallVector<int64_t>> offsets = region.getOffsetsOn(rank);
    if (!offsets)
      return op->emitOpError()
             << what << " region offsets "
             << AffineMapAttr::get(region.getOffsets())
             << " cannot be evaluated on rank " << rank << ": "
             << kUnevaluableMap;
    for (auto [dim, offset] : llvm::enumerate(*offsets)) {
      int64_t end;
      bool wraps = llvm::AddOverflow(offset, sizes[dim], end);
      if (offset < 0 || wraps || end > shape[dim]) {
        std::string span =
            wraps ? std::to_string(offset) + " + " + std::to_string(sizes[dim])
                  : std::to_string(end);
        return op->emitOpError()
               << what << " region is out of bounds on rank " << rank
               << ": dimension " << dim << " spans [" << offset << ", "
               << span << ") but " << region.getBuffer() << " has "
               << shape[dim];
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PlanOp
//===----------------------------------------------------------------------===//

void PlanOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   int64_t worldSize) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getWorldSizeAttrName(state.name),
                     builder.getI64IntegerAttr(worldSize));
  Region *body = state.addRegion();
  body->emplaceBlock();
}

BufferOp PlanOp::lookupBuffer(FlatSymbolRefAttr name) {
  return dyn_cast_or_null<BufferOp>(
      ::mlir::SymbolTable::lookupSymbolIn(getOperation(), name.getAttr()));
}

//===----------------------------------------------------------------------===//
// TransferOp
//===----------------------------------------------------------------------===//

/// A transfer's `collective` and `phase` agree with each other and with
/// whether it reduces.
static LogicalResult verifyCollective(TransferOp op) {
  std::optional<CollectiveKind> kind = op.getCollective();
  std::optional<CollectivePhase> phase = op.getPhase();
  if (phase && kind != CollectiveKind::all_reduce)
    return op.emitOpError()
           << "has phase(" << stringifyCollectivePhase(*phase)
           << "), which only a two-shot all_reduce's transfers have";
  if (!kind)
    return success();
  bool reduces = *kind == CollectiveKind::reduce_scatter ||
                 (*kind == CollectiveKind::all_reduce &&
                  phase != CollectivePhase::all_gather);
  if (op.getReduce().has_value() == reduces)
    return success();
  return op.emitOpError()
         << (reduces ? "does not reduce, but is" : "reduces, but is")
         << " a transfer of " << stringifyCollectiveKind(*kind)
         << (phase ? " (phase " + stringifyCollectivePhase(*phase).str() + ")"
                   : std::string());
}

LogicalResult TransferOp::verify() {
  if (getBackend() == Backend::automatic)
    return emitOpError() << "backend 'auto' is for collectives: "
                            "chunk-select-backend picks one before they are "
                            "expanded into transfers";
  if (failed(verifyCollective(*this)))
    return failure();
  int64_t worldSize = worldSizeOf(*this);
  if (failed(verifyRankMap(*this, getSrcRank(), "source rank", worldSize)) ||
      failed(verifyRankMap(*this, getDstRank(), "destination rank", worldSize)))
    return failure();
  if (getMode() == TransferMode::local) {
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      // (Both rank maps evaluate on every rank: verifyRankMap above.)
      int64_t from = (*evaluateOnRank(getSrcRank(), rank))[0];
      int64_t to = (*evaluateOnRank(getDstRank(), rank))[0];
      if (from != to)
        return emitOpError() << "is 'local' but moves data from rank " << from
                             << " to rank " << to << " (on rank " << rank
                             << "); use 'pull' or 'push'";
    }
  }
  return success();
}

LogicalResult TransferOp::verifySymbolUses(SymbolTableCollection &symbols) {
  BufferOp src =
      lookupBufferOrError(*this, getSrc().getBuffer(), "source", symbols);
  BufferOp dst = lookupBufferOrError(*this, getDst().getBuffer(),
                                     "destination", symbols);
  if (!src || !dst)
    return failure();
  int64_t worldSize = worldSizeOf(*this);
  if (failed(verifyRegionInBounds(*this, getSrc(), "source", src, worldSize)) ||
      failed(verifyRegionInBounds(*this, getDst(), "destination", dst,
                                  worldSize)))
    return failure();

  Type srcElement = src.getBufferType().getElementType();
  Type dstElement = dst.getBufferType().getElementType();
  if (srcElement != dstElement)
    return emitOpError() << "moves " << srcElement << " elements into a "
                         << dstElement << " buffer";
  if (getSrc().getNumElements() != getDst().getNumElements())
    return emitOpError() << "transfer sizes do not match: the source region "
                            "holds "
                         << getSrc().getNumElements()
                         << " elements, the destination region "
                         << getDst().getNumElements();
  if (getReduce() && src == dst && getSrc() == getDst() &&
      getSrcRank() == getDstRank())
    return emitOpError() << "reduces a region into itself";
  return success();
}

//===----------------------------------------------------------------------===//
// ConsumeOp / ProduceOp
//===----------------------------------------------------------------------===//

template <typename TileOp>
static LogicalResult verifyTileOp(TileOp op, SymbolTableCollection &symbols) {
  BufferOp buffer =
      lookupBufferOrError(op, op.getBufferAttr(), "buffer", symbols);
  if (!buffer)
    return failure();
  ArrayRef<int64_t> shape = buffer.getBufferType().getShape();
  int64_t dim = op.getDim();
  if (dim >= static_cast<int64_t>(shape.size()))
    return op.emitOpError() << "dimension " << op.getDim()
                            << " is out of range for " << op.getBufferAttr()
                            << " of rank " << shape.size();
  if (static_cast<int64_t>(op.getTile()) > shape[dim])
    return op.emitOpError() << "tile of " << op.getTile()
                            << " is larger than dimension " << op.getDim()
                            << " of " << op.getBufferAttr() << " ("
                            << shape[op.getDim()] << ")";
  return success();
}

LogicalResult ConsumeOp::verify() {
  if (getLoop() && (getIndex() || getSource()))
    return emitOpError()
           << "loop(\"" << *getLoop()
           << "\") says a kernel loop walks the blocks; it excludes "
           << (getIndex() ? "index(...)" : "source(...)");
  return success();
}

LogicalResult ConsumeOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyTileOp(*this, symbols);
}
LogicalResult ProduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyTileOp(*this, symbols);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks what every collective shares: `dim` is a dimension of `shape` that
/// splits into `worldSize` blocks of `chunks` equal chunks each.
static LogicalResult verifySplit(Operation *op, FlatSymbolRefAttr name,
                                 ArrayRef<int64_t> shape, int64_t dim,
                                 std::optional<int64_t> chunks,
                                 int64_t worldSize) {
  if (dim >= static_cast<int64_t>(shape.size()))
    return op->emitOpError() << "dimension " << dim
                             << " is out of range for " << name << " of rank "
                             << shape.size();
  if (shape[dim] % worldSize != 0)
    return op->emitOpError()
           << "cannot split dimension " << dim << " of " << name << " ("
           << shape[dim] << ") into " << worldSize << " equal blocks";
  int64_t block = shape[dim] / worldSize;
  if (chunks && block % *chunks != 0)
    return op->emitOpError() << "cannot split a block of " << block
                             << " along dimension " << dim << " into "
                             << *chunks << " equal chunks";
  return success();
}

static LogicalResult verifyAlgorithm(Operation *op, Algorithm algorithm,
                                     ArrayRef<Algorithm> allowed) {
  if (llvm::is_contained(allowed, algorithm))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << "does not support algorithm '"
                            << stringifyAlgorithm(algorithm)
                            << "'; expected one of:";
  for (Algorithm a : allowed)
    diag << " '" << stringifyAlgorithm(a) << "'";
  return diag;
}

/// `blocks(zigzag)`: a direct all-gather, cut along `dim` only, into
/// `2 * world_size` half-blocks that an even chunk count divides.
static LogicalResult verifyZigzag(AllGatherOp op, ArrayRef<int64_t> shape) {
  if (op.getAlgorithm() != Algorithm::direct)
    return op.emitOpError() << "blocks(zigzag) is supported with algorithm "
                               "'direct' only, not '"
                            << stringifyAlgorithm(op.getAlgorithm()) << "'";
  if (op.getSplit() && *op.getSplit() != op.getDim())
    return op.emitOpError()
           << "blocks(zigzag) cannot split dimension " << *op.getSplit()
           << ": its chunks cut the zigzag dimension " << op.getDim();
  int64_t halves = 2 * worldSizeOf(op);
  if (failed(verifySplit(op, op.getBufferAttr(), shape, op.getDim(),
                         std::nullopt, halves)))
    return failure();
  std::optional<uint64_t> chunks = op.getChunks();
  if (!chunks)
    return success();
  int64_t n = static_cast<int64_t>(*chunks);
  int64_t half = shape[op.getDim()] / halves;
  if (n % 2 != 0 || half % (n / 2) != 0)
    return op.emitOpError()
           << "blocks(zigzag) needs an even chunk count whose halves cut "
              "each half-block of "
           << half << " along dimension " << op.getDim()
           << " evenly, not chunks(" << n << ")";
  return success();
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  BufferOp buffer =
      lookupBufferOrError(*this, getBufferAttr(), "buffer", symbols);
  if (!buffer)
    return failure();
  if (failed(verifyAlgorithm(*this, getAlgorithm(),
                             {Algorithm::direct, Algorithm::ring})))
    return failure();
  ArrayRef<int64_t> shape = buffer.getBufferType().getShape();
  std::optional<uint64_t> split = getSplit();
  if (getBlocks() == BlockLayout::zigzag)
    return verifyZigzag(*this, shape);
  if (!split || static_cast<int64_t>(*split) == static_cast<int64_t>(getDim()))
    return verifySplit(*this, getBufferAttr(), shape, getDim(), getChunks(),
                       worldSizeOf(*this));
  if (failed(verifySplit(*this, getBufferAttr(), shape, getDim(),
                         std::nullopt, worldSizeOf(*this))))
    return failure();
  int64_t across = static_cast<int64_t>(*split);
  if (across >= static_cast<int64_t>(shape.size()))
    return emitOpError() << "split dimension " << across
                         << " is out of range for " << getBufferAttr()
                         << " of rank " << shape.size();
  if (std::optional<uint64_t> chunks = getChunks();
      chunks && shape[across] % static_cast<int64_t>(*chunks) != 0)
    return emitOpError() << "cannot split dimension " << across << " of "
                         << getBufferAttr() << " (" << shape[across]
                         << ") into " << *chunks << " equal chunks";
  return success();
}

/// Shared by the ops with a `src` and a `dst` buffer. `dstDivided` says
/// whether `dst` is `src` with `dim` divided by the world size; `to`, an
/// all-to-all's re-shard, that it is `src` with `dim` divided and `to`
/// multiplied by it (the chunks then cut `src`'s `to`).
template <typename OpT>
static LogicalResult verifySrcDst(OpT op, bool dstDivided,
                                  SymbolTableCollection &symbols,
                                  std::optional<int64_t> to = std::nullopt,
                                  bool cutsDim = false) {
  BufferOp src = lookupBufferOrError(op, op.getSrcAttr(), "source", symbols);
  BufferOp dst =
      lookupBufferOrError(op, op.getDstAttr(), "destination", symbols);
  if (!src || !dst)
    return failure();
  int64_t worldSize = worldSizeOf(op);
  BufferType srcType = src.getBufferType(), dstType = dst.getBufferType();
  if (srcType.getElementType() != dstType.getElementType())
    return op.emitOpError()
           << "source holds " << srcType.getElementType()
           << " but destination holds " << dstType.getElementType();
  ArrayRef<int64_t> shape = srcType.getShape();
  SmallVector<int64_t> expected(shape);
  if (!to) {
    if (failed(verifySplit(op, op.getSrcAttr(), shape, op.getDim(),
                           op.getChunks(), worldSize)))
      return failure();
    if (dstDivided)
      expected[op.getDim()] /= worldSize;
  } else {
    if (*to >= static_cast<int64_t>(shape.size()))
      return op.emitOpError() << "to(" << *to << ") is out of range for "
                              << op.getSrcAttr() << " of rank " << shape.size();
    if (failed(verifySplit(op, op.getSrcAttr(), shape, op.getDim(),
                           std::nullopt, worldSize)))
      return failure();
    // Chunks cut `to`; of a buffer kernel tiles produce, or with
    // `split(dim)`, each rank's block along `dim` (the order its tiles
    // finish it in; the heads a consumer reads).
    bool alongDim = cutsDim || producedInPlan(op, op.getSrcAttr());
    int64_t cut = alongDim ? static_cast<int64_t>(op.getDim()) : *to;
    int64_t extent = alongDim ? shape[cut] / worldSize : shape[cut];
    if (std::optional<uint64_t> chunks = op.getChunks();
        chunks && extent % static_cast<int64_t>(*chunks) != 0)
      return op.emitOpError()
             << "cannot cut " << (alongDim ? "each rank's block along " : "")
             << "dimension " << cut << " of " << op.getSrcAttr() << " ("
             << extent << ") into " << *chunks << " equal chunks";
    expected[op.getDim()] /= worldSize;
    if (llvm::MulOverflow(expected[*to], worldSize, expected[*to]))
      return op.emitOpError() << "dimension " << *to << " of "
                              << op.getDstAttr() << " overflows 64 bits";
  }
  if (ArrayRef<int64_t>(expected) != dstType.getShape()) {
    InFlightDiagnostic diag = op.emitOpError() << "destination "
                                               << op.getDstAttr()
                                               << " must have shape ";
    llvm::interleave(expected, diag, "x");
    if (to)
      diag << " (" << op.getSrcAttr() << " with dimension " << op.getDim()
           << " divided and " << *to << " multiplied by the world size)";
    return diag;
  }
  return success();
}

LogicalResult ReduceScatterOp::verifySymbolUses(
    SymbolTableCollection &symbols) {
  if (failed(verifyAlgorithm(*this, getAlgorithm(),
                             {Algorithm::direct, Algorithm::ring})))
    return failure();
  return verifySrcDst(*this, /*dstDivided=*/true, symbols);
}

LogicalResult AllReduceOp::verifySymbolUses(
    SymbolTableCollection &symbols) {
  if (failed(verifyAlgorithm(*this, getAlgorithm(),
                             {Algorithm::one_shot, Algorithm::two_shot})))
    return failure();
  return verifySrcDst(*this, /*dstDivided=*/false, symbols);
}

LogicalResult AllToAllOp::verifySymbolUses(
    SymbolTableCollection &symbols) {
  if (failed(verifyAlgorithm(*this, getAlgorithm(), {Algorithm::direct})))
    return failure();
  if (getSrc() == getDst())
    return emitOpError() << "needs distinct source and destination buffers";
  std::optional<uint64_t> to = getTo();
  std::optional<uint64_t> split = getSplit();
  bool reshards = to && *to != getDim();
  if (split && (!reshards || (*split != getDim() && *split != *to)))
    return emitOpError()
           << "split(" << *split << ") chooses the dimension a re-shard's "
           << "chunks cut, dim(" << getDim() << ") or to(t)"
           << (reshards ? "" : ", and this all-to-all has no to(t) != dim");
  if (!reshards)
    return verifySrcDst(*this, /*dstDivided=*/false, symbols);
  return verifySrcDst(*this, /*dstDivided=*/false, symbols,
                      static_cast<int64_t>(*to),
                      /*cutsDim=*/split && *split == getDim());
}

//===----------------------------------------------------------------------===//
// Kernel-level synchronisation
//===----------------------------------------------------------------------===//

LogicalResult WaitOp::verify() {
  if (getSem() == MemSemantic::release)
    return emitOpError() << "a wait only reads its flag, so 'release' orders "
                            "nothing; use 'acquire'";
  return success();
}

LogicalResult ArriveOp::verify() {
  if (getSem() == MemSemantic::acquire || getSem() == MemSemantic::relaxed)
    return emitOpError() << "an arrival publishes the program's writes, so it "
                            "needs 'release' or 'acq_rel'";
  return success();
}

LogicalResult SignalOp::verify() {
  if (getSem() == MemSemantic::acquire)
    return emitOpError() << "a signal only writes its flag, so 'acquire' "
                            "orders nothing; use 'release'";
  return success();
}
