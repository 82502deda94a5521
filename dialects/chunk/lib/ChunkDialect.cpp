//===- ChunkDialect.cpp - Dialect, types and attributes ----------------===//

#include "synco/Dialect/Chunk/ChunkDialect.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <map>
#include <optional>
#include <string>

using namespace mlir;
using namespace synco::chunk;

#include "synco/Dialect/Chunk/ChunkDialect.cpp.inc"
#include "synco/Dialect/Chunk/ChunkEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "synco/Dialect/Chunk/ChunkTypes.cpp.inc"

//===----------------------------------------------------------------------===//
// Affine maps as written
//===----------------------------------------------------------------------===//

namespace {
/// The results of an affine map as its text writes them, each a sum of
/// terms times coefficients (the rank, and every `mod`, `floordiv` or
/// `ceildiv` of a sum that is not constant, keyed by what it divides),
/// combined as MLIR folds them when it builds the map (`(x * c1) * c2` is
/// `x * (c1 * c2)`, `(x + c1) + c2` is `x + (c1 + c2)`, `x * c1 + x * c2`
/// is `x * (c1 + c2)`), but with checked arithmetic.
class WrittenMap {
public:
  explicit WrittenMap(StringRef text) : rest(text) {}

  /// Whether a coefficient of a result leaves 64 bits. False too for a map
  /// this reader does not follow (an alias, symbols): it is left to the
  /// verifiers.
  bool overflows() {
    if (!readDims() || !consume("->") || !consume("("))
      return false;
    do {
      if (!expr())
        return overflowed;
    } while (consume(","));
    return false;
  }

private:
  struct Sum {
    int64_t constant = 0;
    std::map<std::string, int64_t> terms;

    std::string key() const {
      std::string text = std::to_string(constant);
      for (const auto &[term, coefficient] : terms)
        text += " + " + std::to_string(coefficient) + " * " + term;
      return text;
    }
  };
  using MaybeSum = std::optional<Sum>;

  StringRef rest;
  SmallVector<StringRef> dims;
  bool overflowed = false;

  static bool isIdChar(char c) {
    return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
  }

  void skipSpace() {
    while (true) {
      rest = rest.ltrim();
      if (!rest.consume_front("//"))
        return;
      rest = rest.drop_until([](char c) { return c == '\n'; });
    }
  }

  bool consume(StringRef token) {
    skipSpace();
    return rest.consume_front(token);
  }

  bool consumeKeyword(StringRef keyword) {
    skipSpace();
    if (!rest.starts_with(keyword) ||
        (rest.size() > keyword.size() && isIdChar(rest[keyword.size()])))
      return false;
    rest = rest.drop_front(keyword.size());
    return true;
  }

  StringRef identifier() {
    skipSpace();
    if (rest.empty() || !(llvm::isAlpha(rest[0]) || rest[0] == '_'))
      return {};
    StringRef id = rest.take_while(isIdChar);
    rest = rest.drop_front(id.size());
    return id;
  }

  bool readDims() {
    if (!consume("("))
      return false;
    if (consume(")"))
      return !consume("[");
    do {
      StringRef dim = identifier();
      if (dim.empty())
        return false;
      dims.push_back(dim);
    } while (consume(","));
    return consume(")") && !consume("[");
  }

  MaybeSum fail(bool overflow) {
    overflowed |= overflow;
    return std::nullopt;
  }

  MaybeSum add(Sum lhs, const MaybeSum &rhs) {
    if (!rhs || llvm::AddOverflow(lhs.constant, rhs->constant, lhs.constant))
      return fail(rhs.has_value());
    for (const auto &[term, coefficient] : rhs->terms) {
      int64_t &sum = lhs.terms[term];
      if (llvm::AddOverflow(sum, coefficient, sum))
        return fail(true);
      if (sum == 0)
        lhs.terms.erase(term);
    }
    return lhs;
  }

  MaybeSum scale(Sum sum, int64_t factor) {
    if (llvm::MulOverflow(sum.constant, factor, sum.constant))
      return fail(true);
    for (auto &[term, coefficient] : sum.terms)
      if (llvm::MulOverflow(coefficient, factor, coefficient))
        return fail(true);
    if (factor == 0)
      sum.terms.clear();
    return sum;
  }

  MaybeSum multiply(const Sum &lhs, const MaybeSum &rhs) {
    if (!rhs)
      return std::nullopt;
    if (rhs->terms.empty())
      return scale(lhs, rhs->constant);
    if (lhs.terms.empty())
      return scale(*rhs, lhs.constant);
    return std::nullopt;
  }

  /// `lhs` `kind` `rhs`: folded where `lhs` is constant (the only fold of
  /// a division that computes), else a term of its own.
  MaybeSum divide(StringRef kind, const Sum &lhs, const MaybeSum &rhs) {
    if (!rhs || !rhs->terms.empty() || rhs->constant <= 0)
      return std::nullopt;
    int64_t divisor = rhs->constant;
    Sum result;
    if (lhs.terms.empty()) {
      result.constant = kind == "mod" ? llvm::mod(lhs.constant, divisor)
                        : kind == "floordiv"
                            ? llvm::divideFloorSigned(lhs.constant, divisor)
                            : llvm::divideCeilSigned(lhs.constant, divisor);
      return result;
    }
    result.terms["(" + lhs.key() + ") " + kind.str() + " " +
                 std::to_string(divisor)] = 1;
    return result;
  }

  MaybeSum expr() {
    MaybeSum sum = term();
    while (sum) {
      if (consume("+"))
        sum = add(*sum, term());
      else if (consume("-")) {
        MaybeSum rhs = term();
        sum = rhs ? add(*sum, scale(*rhs, -1)) : rhs;
      } else
        return sum;
    }
    return sum;
  }

  MaybeSum term() {
    MaybeSum value = operand();
    while (value) {
      if (consume("*"))
        value = multiply(*value, operand());
      else if (StringRef kind = divisionKeyword(); !kind.empty())
        value = divide(kind, *value, operand());
      else
        return value;
    }
    return value;
  }

  StringRef divisionKeyword() {
    for (StringRef kind : {"mod", "floordiv", "ceildiv"})
      if (consumeKeyword(kind))
        return kind;
    return {};
  }

  MaybeSum operand() {
    if (consume("-")) {
      MaybeSum value = operand();
      return value ? scale(*value, -1) : value;
    }
    if (consume("(")) {
      MaybeSum value = expr();
      return value && consume(")") ? value : std::nullopt;
    }
    skipSpace();
    StringRef digits = rest.take_while(llvm::isDigit);
    if (!digits.empty()) {
      rest = rest.drop_front(digits.size());
      Sum constant;
      if (digits.getAsInteger(10, constant.constant))
        return std::nullopt;
      return constant;
    }
    StringRef id = identifier();
    const auto *dim = llvm::find(dims, id);
    if (id.empty() || dim == dims.end())
      return std::nullopt;
    Sum sum;
    sum.terms["d" + std::to_string(dim - dims.begin())] = 1;
    return sum;
  }
};
} // namespace

ParseResult synco::chunk::parseAffineMapAsWritten(AsmParser &parser,
                                                  AffineMap &map) {
  SMLoc start = parser.getCurrentLocation();
  if (parser.parseAffineMap(map))
    return failure();
  const char *end = parser.getCurrentLocation().getPointer();
  StringRef text(start.getPointer(), end - start.getPointer());
  if (!WrittenMap(text).overflows())
    return success();
  return parser.emitError(start)
         << "affine map " << text.rtrim()
         << " overflows 64 bits as written (MLIR builds it as "
         << AffineMapAttr::get(map) << ")";
}

/// A region's offsets, as written (see `parseAffineMapAsWritten`).
static ParseResult parseOffsets(AsmParser &parser, AffineMap &offsets) {
  return parseAffineMapAsWritten(parser, offsets);
}

static void printOffsets(AsmPrinter &printer, AffineMap offsets) {
  printer.printStrippedAttrOrType(offsets);
}

#define GET_ATTRDEF_CLASSES
#include "synco/Dialect/Chunk/ChunkAttrs.cpp.inc"

void ChunkDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "synco/Dialect/Chunk/ChunkTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "synco/Dialect/Chunk/ChunkAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "synco/Dialect/Chunk/ChunkOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// BufferType
//===----------------------------------------------------------------------===//

Type BufferType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return BufferType::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), shape, elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << '<';
  for (int64_t dim : getShape())
    printer << dim << 'x';
  printer << getElementType() << '>';
}

/// `shape` as `AxBxC`.
static std::string describeShape(ArrayRef<int64_t> shape) {
  std::string text;
  for (auto [i, dim] : llvm::enumerate(shape))
    text += (i ? "x" : "") + std::to_string(dim);
  return text;
}

LogicalResult
BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                   ArrayRef<int64_t> shape, Type elementType) {
  if (shape.empty())
    return emitError() << "a symmetric buffer needs at least one dimension";
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << "symmetric buffer dimensions must be positive, got "
                         << dim;
  if (!elementType.isIntOrFloat())
    return emitError() << "symmetric buffer elements must be integers or "
                          "floats, got "
                       << elementType;
  // Every size and offset the passes and the runtime compute lies within
  // the buffer's bytes: they must fit an int64_t.
  int64_t bytes = llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
  for (int64_t dim : shape)
    if (llvm::MulOverflow(bytes, dim, bytes))
      return emitError() << "a symmetric buffer of " << describeShape(shape)
                         << " elements of " << elementType
                         << " holds more bytes than a 64-bit size can count";
  return success();
}

int64_t BufferType::getNumElements() const {
  int64_t n = 1;
  for (int64_t dim : getShape())
    n *= dim;
  return n;
}

//===----------------------------------------------------------------------===//
// RegionAttr
//===----------------------------------------------------------------------===//

LogicalResult RegionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 FlatSymbolRefAttr buffer, AffineMap offsets,
                                 ArrayRef<int64_t> sizes) {
  if (offsets.getNumDims() != 1 || offsets.getNumSymbols() != 0)
    return emitError() << "region offsets must be a map of one dimension (the "
                          "rank) and no symbols, got "
                       << AffineMapAttr::get(offsets);
  if (offsets.getNumResults() != sizes.size())
    return emitError() << "region has " << offsets.getNumResults()
                       << " offsets but " << sizes.size() << " sizes";
  int64_t elements = 1;
  for (int64_t size : sizes) {
    if (size <= 0)
      return emitError() << "region sizes must be positive, got " << size;
    if (llvm::MulOverflow(elements, size, elements))
      return emitError() << "region of " << describeShape(sizes)
                         << " holds more elements than a 64-bit count can "
                            "count";
  }
  return success();
}

/// `expr` on dimension values `dims`, or nothing (see `evaluateOnRank`;
/// also for a symbol or a dimension beyond `dims`, which verified maps do
/// not have).
static std::optional<int64_t> evaluate(AffineExpr expr,
                                       ArrayRef<int64_t> dims) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return constant.getValue();
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    if (dim.getPosition() >= dims.size())
      return std::nullopt;
    return dims[dim.getPosition()];
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<int64_t> lhs = evaluate(binary.getLHS(), dims);
  std::optional<int64_t> rhs = evaluate(binary.getRHS(), dims);
  if (!lhs || !rhs)
    return std::nullopt;
  int64_t result;
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    if (llvm::AddOverflow(*lhs, *rhs, result))
      return std::nullopt;
    return result;
  case AffineExprKind::Mul:
    if (llvm::MulOverflow(*lhs, *rhs, result))
      return std::nullopt;
    return result;
  case AffineExprKind::Mod:
    if (*rhs <= 0)
      return std::nullopt;
    return llvm::mod(*lhs, *rhs);
  case AffineExprKind::FloorDiv:
    if (*rhs <= 0)
      return std::nullopt;
    return llvm::divideFloorSigned(*lhs, *rhs);
  case AffineExprKind::CeilDiv:
    if (*rhs <= 0)
      return std::nullopt;
    return llvm::divideCeilSigned(*lhs, *rhs);
  default:
    return std::nullopt;
  }
}

std::optional<SmallVector<int64_t>>
synco::chunk::evaluateOnRank(AffineMap map, int64_t rank) {
  SmallVector<int64_t> results;
  results.reserve(map.getNumResults());
  for (AffineExpr expr : map.getResults()) {
    std::optional<int64_t> value = evaluate(expr, rank);
    if (!value)
      return std::nullopt;
    results.push_back(*value);
  }
  return results;
}

std::optional<SmallVector<int64_t>>
RegionAttr::getOffsetsOn(int64_t rank) const {
  return evaluateOnRank(getOffsets(), rank);
}

int64_t RegionAttr::getNumElements() const {
  int64_t n = 1;
  for (int64_t size : getSizes())
    n *= size;
  return n;
}

//===----------------------------------------------------------------------===//
// Discardable attributes: what one pass tells the next
//===----------------------------------------------------------------------===//

namespace {
enum class AttrValue { Unit, String, Integer, Names, List, Dictionary };

/// The discardable `chunk.` attributes and the kind of value each holds
/// (the table in the dialect's description).
std::optional<AttrValue> discardableAttrValue(StringRef name) {
  return llvm::StringSwitch<std::optional<AttrValue>>(name)
      .Cases({"staging", "trace", "fused", "ring_step", "moved_pointer"},
             AttrValue::Unit)
      .Cases({"flag_implied_by", "tile_index", "source_index", "chunk_index",
              "chunk_loop", "present_path", "present_loop"},
             AttrValue::String)
      .Cases({"flag_layout", "reduction_copies", "completion", "scalar_args",
              "index_bounds"},
             AttrValue::List)
      .Case("host_schedule", AttrValue::Dictionary)
      .Cases({"abi_first_arg", "chunk_rows", "chunk_count", "slots",
              "step_state_bytes"},
             AttrValue::Integer)
      .Cases({"staged", "abi_buffers"}, AttrValue::Names)
      .Default(std::nullopt);
}
} // namespace

LogicalResult
ChunkDialect::verifyOperationAttribute(Operation *op,
                                       NamedAttribute attribute) {
  StringRef name =
      attribute.getName().strref().drop_front(getNamespace().size() + 1);
  std::optional<AttrValue> kind = discardableAttrValue(name);
  if (!kind)
    return op->emitError() << "'" << attribute.getName().strref()
                           << "' is not an attribute of the chunk dialect";
  Attribute value = attribute.getValue();
  auto isNames = [](Attribute attr) {
    auto array = dyn_cast<ArrayAttr>(attr);
    return array && llvm::all_of(array, llvm::IsaPred<StringAttr>);
  };
  bool ok = false;
  StringRef expected;
  switch (*kind) {
  case AttrValue::Unit:
    ok = isa<UnitAttr>(value), expected = "a unit attribute";
    break;
  case AttrValue::String:
    ok = isa<StringAttr>(value), expected = "a string";
    break;
  case AttrValue::Integer:
    ok = isa<IntegerAttr>(value), expected = "an integer";
    break;
  case AttrValue::Names:
    ok = isNames(value), expected = "an array of buffer names";
    break;
  case AttrValue::List:
    ok = isa<ArrayAttr>(value), expected = "an array (a typed record)";
    break;
  case AttrValue::Dictionary:
    ok = isa<DictionaryAttr>(value),
    expected = "a dictionary (a typed record)";
    break;
  }
  if (ok)
    return success();
  return op->emitError() << "'" << attribute.getName().strref() << "' must be "
                         << expected << ", not " << value;
}
