//===- ChunkAttrs.td - Types, enums and attributes ---------*- tablegen -*-===//

#ifndef SYNCO_CHUNK_ATTRS
#define SYNCO_CHUNK_ATTRS

include "synco/Dialect/Chunk/ChunkDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Chunk_BufferType : TypeDef<Chunk_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "A symmetric buffer: the same shape on every rank";
  let description = [{
    A buffer allocated with the same shape and element type on every rank, so
    that an offset into one rank's copy names the same element in every
    other rank's copy. Written like a static tensor shape:

    ```mlir
    !chunk.buffer<8192x4096xbf16>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of elements in the buffer.
    int64_t getNumElements() const;
    int64_t getRank() const { return getShape().size(); }
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Chunk_Backend : I32EnumAttr<"Backend", "how a chunk is moved", [
    I32EnumAttrCase<"copy_engine", 0>,
    I32EnumAttrCase<"tma", 1>,
    I32EnumAttrCase<"ldst", 2>,
    I32EnumAttrCase<"nvshmem", 3>,
    I32EnumAttrCase<"nccl_device", 4>,
    I32EnumAttrCase<"automatic", 5, "auto">]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    * `copy_engine`: `cudaMemcpyAsync`-style copies on a side stream, with a
      flag written by the stream when the copy is done;
    * `tma`: bulk tensor copies issued by dedicated programs of the fused
      kernel;
    * `ldst`: plain SM loads and stores issued by dedicated programs (for a
      reduction fused into its GEMM: by the tiles that produce the
      partials);
    * `nvshmem`, `nccl_device`: reserved for multi-node device APIs;
    * `auto` (collectives only): `chunk-select-backend` picks one of the
      above before the collective is expanded.
  }];
}

def Chunk_TransferMode : I32EnumAttr<"TransferMode",
    "which rank drives a transfer", [
    I32EnumAttrCase<"pull", 0>,
    I32EnumAttrCase<"push", 1>,
    I32EnumAttrCase<"local", 2>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    `pull`: the destination rank reads from the source; `push`: the source
    rank writes into the destination; `local`: source and destination are the
    same rank (the data is already in place, or is copied on the rank).
  }];
}

def Chunk_Reduction : I32EnumAttr<"Reduction",
    "how a transfer combines with the destination", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>]> {
  let cppNamespace = "::synco::chunk";
}

def Chunk_CollectiveKind : I32EnumAttr<"CollectiveKind",
    "the collective a transfer was expanded from", [
    I32EnumAttrCase<"all_gather", 0>,
    I32EnumAttrCase<"reduce_scatter", 1>,
    I32EnumAttrCase<"all_reduce", 2>,
    I32EnumAttrCase<"all_to_all", 3>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    Which collective a `chunk.transfer` implements (`chunk-expand-collectives`
    records it; a plan written out by hand states it): the passes read what
    to fuse from it, never from the transfer's `group` name.
  }];
}

def Chunk_CollectivePhase : I32EnumAttr<"CollectivePhase",
    "the phase of a two-phase collective a transfer belongs to", [
    I32EnumAttrCase<"reduce_scatter", 0>,
    I32EnumAttrCase<"all_gather", 1>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    A two-shot `all_reduce` is a reduce-scatter of the partials, then an
    all-gather of the reduced blocks: each of its transfers says which.
  }];
}

def Chunk_Algorithm : I32EnumAttr<"Algorithm",
    "how a collective is split into chunks", [
    I32EnumAttrCase<"direct", 0>,
    I32EnumAttrCase<"ring", 1>,
    I32EnumAttrCase<"one_shot", 2>,
    I32EnumAttrCase<"two_shot", 3>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    * `direct`: every rank exchanges with every peer, in rank-rotated order
      (rank `r` first talks to `r + 1`, then `r + 2`, ...);
    * `ring`: chunks travel around the ring `r + 1 -> r`, each forwarded
      after it arrived (rank `r` receives `r + 1`'s block first, then
      `r + 2`'s, ..., the direct order);
    * `one_shot`: (all-reduce) every rank reads every peer's partial and
      reduces locally;
    * `two_shot`: (all-reduce) reduce-scatter followed by all-gather.
  }];
}

def Chunk_BlockLayout : I32EnumAttr<"BlockLayout",
    "which blocks of a gathered dimension each rank owns", [
    I32EnumAttrCase<"contiguous", 0>,
    I32EnumAttrCase<"zigzag", 1>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    * `contiguous`: the dimension is cut into `world_size` blocks, rank `r`
      owns block `r`;
    * `zigzag`: it is cut into `2 * world_size` half-blocks, rank `r` owns
      half-blocks `r` and `2 * world_size - 1 - r` (the load-balanced
      sharding of causal attention: every rank's queries see as many keys).
  }];
}

def Chunk_MemSemantic : I32EnumAttr<"MemSemantic",
    "memory ordering of a flag access", [
    I32EnumAttrCase<"relaxed", 1>,
    I32EnumAttrCase<"acquire", 2>,
    I32EnumAttrCase<"release", 3>,
    I32EnumAttrCase<"acq_rel", 4>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    The values match Triton's `MemSemantic` encoding, so lowering copies them.
  }];
}

def Chunk_MemScope : I32EnumAttr<"MemScope", "visibility of a flag access", [
    I32EnumAttrCase<"gpu", 1>,
    I32EnumAttrCase<"cta", 2>,
    I32EnumAttrCase<"sys", 3>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    `sys` is needed for flags written by another GPU or by a copy engine. The
    values match Triton's `MemSyncScope` encoding.
  }];
}

def Chunk_TraceEvent : I32EnumAttr<"TraceEvent",
    "a point of a tile that `chunk.trace` records", [
    I32EnumAttrCase<"tile_begin", 0>,
    I32EnumAttrCase<"wait_begin", 1>,
    I32EnumAttrCase<"wait_end", 2>,
    I32EnumAttrCase<"signal", 3>,
    I32EnumAttrCase<"tile_end", 4>]> {
  let cppNamespace = "::synco::chunk";
  let description = [{
    The value is the index of the event's timestamp in a trace record (see
    `chunk.trace`).
  }];
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Chunk_RegionAttr : AttrDef<Chunk_Dialect, "Region"> {
  let mnemonic = "region";
  let summary = "A box of a symmetric buffer, its offsets affine in the rank";
  let description = [{
    `#chunk.region<@A[(r) -> (r * 1024, 0)] [1024, 4096]>` is, on rank `r`,
    the box of buffer `@A` starting at row `r * 1024`, column 0, of 1024 rows
    and 4096 columns. The offset map has exactly one dimension, the rank that
    evaluates it, and one result per buffer dimension; `mod` and `floordiv`
    express rotations such as `(r + 1) mod 4`.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$buffer,
                        "::mlir::AffineMap":$offsets,
                        ArrayRefParameter<"int64_t">:$sizes);
  let assemblyFormat =
      "`<` $buffer `[` custom<Offsets>($offsets) `]` `[` $sizes `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Offsets of the box on `rank` (nothing where they cannot be
    /// evaluated: see `evaluateOnRank`).
    std::optional<::llvm::SmallVector<int64_t>> getOffsetsOn(int64_t rank) const;
    /// Number of elements in the box.
    int64_t getNumElements() const;
  }];
}

#endif // SYNCO_CHUNK_ATTRS
