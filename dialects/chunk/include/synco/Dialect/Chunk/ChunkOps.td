//===- ChunkOps.td - chunk dialect operations --------------*- tablegen -*-===//
//
// Three groups of ops:
//  * the plan and its contents (buffers, transfers, consumers, producers);
//  * collectives, which `chunk-expand-collectives` turns into transfers;
//  * kernel-level synchronisation, inserted into the fused Triton kernel.
//
//===----------------------------------------------------------------------===//

#ifndef SYNCO_CHUNK_OPS
#define SYNCO_CHUNK_OPS

include "synco/Dialect/Chunk/ChunkDialect.td"
include "synco/Dialect/Chunk/ChunkAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Plan structure
//===----------------------------------------------------------------------===//

def Chunk_PlanOp : Chunk_Op<"plan", [Symbol, SymbolTable, NoTerminator,
    SingleBlock, IsolatedFromAbove, NoRegionArguments]> {
  let summary = "An SPMD communication plan for one fused kernel";
  let description = [{
    Holds the buffers, collectives and transfers of one fused operator. Every
    op inside is evaluated once per rank `r` in `[0, world_size)`, with
    `world_size` from 1 to 1024 (collectives expand into a transfer per rank
    pair and chunk, and the launch manifest lists every rank's copies).

    `kernel`, if present, names the local Triton function (`tt.func`) the
    plan is fused into; buffers bind to its arguments by position.

    The plan's verifier checks the plan as a whole (after each op checked
    itself):

    * every region lies inside its buffer on every rank, and every rank a
      transfer names is in `[0, world_size)`;
    * a transfer's source and destination hold the same number of elements
      of the same type;
    * the transfers expanded from one collective cover their buffer exactly
      once per receiving rank (nothing lost, nothing received twice), or, for
      reductions, receive exactly one contribution from every rank;
    * every `after` dependency names a transfer or producer of this plan,
      and the dependencies have no cycle;
    * a transfer that copies rows another transfer writes on the rank it
      reads from waits for that transfer (`after`): a ring forwards a chunk
      only once it arrived;
    * each buffer has at most one producer (`chunk.produce`), a transfer
      waiting for a producer copies from the buffer it produces, a transfer
      copying from a produced buffer waits for its producer (unless the
      block stays in place), and no all-to-all moves a produced buffer
      (its chunks would be copied before the tiles write them; an
      all-gather's transfers wait for the producer);
    * every consumed buffer is written by some transfer or collective;
    * the tiles of a `chunk.consume` or `chunk.produce` fit the per-rank
      blocks a collective cuts their dimension into, and the chunks of a
      collective that gives its count (`chunks(n)`; `chunks(auto)` picks
      one that fits) along it (a tile waits for, or signals, one chunk,
      and a chunk lies in one rank's block).

    ```mlir
    chunk.plan @ag_gemm world_size(2) kernel(@matmul_kernel) {
      chunk.buffer @A : !chunk.buffer<4096x4096xbf16> bind(0)
      chunk.all_gather @A dim(0) chunks(2) backend(copy_engine)
      chunk.consume @A dim(0) tile(128) index("pid_m")
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntMinValue<1>, IntMaxValue<1024>]>:$world_size,
                       OptionalAttr<FlatSymbolRefAttr>:$kernel);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `world_size` `(` $world_size `)`
    (`kernel` `(` $kernel^ `)`)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "int64_t":$worldSize)>
  ];
  let extraClassDeclaration = [{
    /// Looks up a buffer declared in this plan.
    BufferOp lookupBuffer(::mlir::FlatSymbolRefAttr name);
  }];
}

def Chunk_BufferOp : Chunk_Op<"buffer", [Symbol, HasParent<"PlanOp">]> {
  let summary = "A symmetric buffer, optionally bound to a kernel argument";
  let description = [{
    Declares a buffer that exists on every rank with the same shape. With
    `bind(i)`, the buffer is the fused kernel's `i`-th argument (a pointer to
    its first element on the executing rank); without, `chunk-bind-kernel`
    appends an argument `synco_buffer_<name>`: a symmetric buffer that the
    caller binds at launch (a reduction's output), or, when a pass declared
    it as the fused operation's scratch (unit attribute `chunk.staging`: the
    staging buffer `chunk-expand-collectives` declares for a reduction moved
    by the copy engine), that the runtime allocates with the kernel.

    ```mlir
    chunk.buffer @A : !chunk.buffer<8192x4096xbf16> bind(0)
    chunk.buffer @C : !chunk.buffer<4096x4096xbf16>
    chunk.buffer @P_staging : !chunk.buffer<4096x4096xbf16> {chunk.staging}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Chunk_BufferType>:$type,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<0>]>>:$arg);
  let assemblyFormat = [{
    $sym_name `:` $type (`bind` `(` $arg^ `)`)? attr-dict
  }];
  let extraClassDeclaration = [{
    BufferType getBufferType() {
      return ::llvm::cast<BufferType>(getType());
    }
  }];
}

def Chunk_TransferOp : Chunk_Op<"transfer", [Symbol, HasParent<"PlanOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "One chunk: a box moved from one rank to another";
  let description = [{
    On every rank `r`, moves the box `src` of rank `src_rank(r)` into the box
    `dst` of rank `dst_rank(r)`. Rank maps are affine maps of `r` with one
    result. `mode` says which side drives the copy, `backend` what moves
    it, `order` the chunk's place in the driving rank's schedule (lower runs
    first; chunks consumed first should come first).

    `after` lists what must happen before the transfer may start, on the
    rank it reads from (`src_rank(r)`): other transfers (a ring forwards a
    chunk only after it arrived there; a two-shot all-reduce gathers a block
    only after its owner reduced it) or producers (`chunk.produce`, the
    compute tiles that write the source). `reduce`
    combines the chunk with the destination instead of overwriting it.
    `collective` says which collective the chunk implements, and `phase`
    which phase of a two-shot all-reduce (a reducing transfer is a
    reduce-scatter's, a one-shot all-reduce's or a two-shot all-reduce's
    `reduce_scatter` phase; a two-shot all-reduce's `all_gather` phase does
    not reduce). `group` names the collective instance the chunk was
    expanded from; the plan verifier checks coverage per group, and the
    transfers of a group share their collective and phase.

    ```mlir
    chunk.transfer @A_from_peer_0 pull copy_engine
        from #chunk.region<@A[(r) -> (((r + 1) mod 2) * 4096, 0)] [4096, 4096]>
        on (r) -> ((r + 1) mod 2)
        to #chunk.region<@A[(r) -> (((r + 1) mod 2) * 4096, 0)] [4096, 4096]>
        on (r) -> (r)
        order(1) collective(all_gather) {group = "all_gather_A"}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Chunk_TransferMode:$mode,
                       Chunk_Backend:$backend,
                       Chunk_RegionAttr:$src,
                       AffineMapAttr:$src_rank,
                       Chunk_RegionAttr:$dst,
                       AffineMapAttr:$dst_rank,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$order,
                       OptionalAttr<FlatSymbolRefArrayAttr>:$after,
                       OptionalAttr<Chunk_Reduction>:$reduce,
                       OptionalAttr<Chunk_CollectiveKind>:$collective,
                       OptionalAttr<Chunk_CollectivePhase>:$phase,
                       OptionalAttr<StrAttr>:$group);
  let assemblyFormat = [{
    $sym_name $mode $backend
    `from` $src `on` custom<RankMap>($src_rank)
    `to` $dst `on` custom<RankMap>($dst_rank)
    `order` `(` $order `)`
    (`after` $after^)?
    (`reduce` `(` $reduce^ `)`)?
    (`collective` `(` $collective^ `)`)?
    (`phase` `(` $phase^ `)`)?
    attr-dict
  }];
  let hasVerifier = 1;
}

def Chunk_ConsumeOp : Chunk_Op<"consume", [HasParent<"PlanOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Kernel tiles that read a buffer, one block of a dimension each";
  let description = [{
    Says that the kernel's tile with index `t` along `dim` reads the block
    `[t * tile, (t + 1) * tile)` of that dimension of `buffer`, and so must
    wait for the chunks that write it. `index`, if given, names the kernel
    variable (as Triton keeps it in the source location) holding `t`, for
    kernels whose index arithmetic is ambiguous.

    ```mlir
    chunk.consume @A dim(0) tile(128) index("pid_m")
    ```

    `source("src")` says that every tile reads every rank's block of the
    buffer (the blocks its collective gathers), one per iteration of the
    kernel loop whose induction variable is named `src` (iteration `i`
    reads rank `i`'s block), and block `t` of `dim` within it. The tile
    then waits inside that loop, before each block, for the one chunk of
    the block it reads; `chunk-reorder-tiles` rotates the loop so that a
    rank reads its own block first and its peers' in the order they arrive.
    A GEMM over K gathered from every rank reads its A rows and its B
    columns this way:

    ```mlir
    chunk.consume @A dim(0) tile(128) index("pid_m") source("src")
    chunk.consume @B dim(1) tile(256) index("pid_n") source("src")
    ```

    `loop("start_n")` says that every program reads the blocks of `dim`
    that a kernel loop visits, not one block per program: the `scf.for`
    whose induction variable is named `start_n` runs from 0 in steps of
    `tile`, and its iteration at `v` reads `[v, v + tile)` of `dim` (a
    flash-attention kernel's loop over the keys and values). Without
    `index`, `source` and `loop`, the passes take such a loop for the tile
    walk where no program-id-derived tile index exists.
    `chunk-reorder-tiles` splits the loop into a loop over the buffer's
    chunks, starting at the rank's own and taking its peers' in the order
    they arrive, around the kernel's loop clipped to each chunk;
    `chunk-insert-waits` makes each chunk wait for its flag before the
    clipped loop if that loop reads any of it (a loop that stops early, as
    a causal bound makes it, waits for no chunk it does not read). Buffers
    read in one loop (keys and values) share it.

    ```mlir
    chunk.consume @K dim(0) tile(64) loop("start_n")
    chunk.consume @V dim(0) tile(64) loop("start_n")
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$buffer,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$tile,
                       OptionalAttr<StrAttr>:$index,
                       OptionalAttr<StrAttr>:$source,
                       OptionalAttr<StrAttr>:$loop);
  let assemblyFormat = [{
    $buffer `dim` `(` $dim `)` `tile` `(` $tile `)`
    (`index` `(` $index^ `)`)? (`source` `(` $source^ `)`)?
    (`loop` `(` $loop^ `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def Chunk_ProduceOp : Chunk_Op<"produce", [Symbol, HasParent<"PlanOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Kernel tiles that write a buffer, one block of a dimension each";
  let description = [{
    The dual of `chunk.consume`: the kernel's tile `t` along `dim` writes the
    block `[t * tile, (t + 1) * tile)` of `buffer`. Transfers that list this
    op in `after` start once the tiles writing their source are done.

    ```mlir
    chunk.produce @C_tiles @C dim(0) tile(128)
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       FlatSymbolRefAttr:$buffer,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$tile,
                       OptionalAttr<StrAttr>:$index);
  let assemblyFormat = [{
    $sym_name $buffer `dim` `(` $dim `)` `tile` `(` $tile `)`
    (`index` `(` $index^ `)`)? attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class Chunk_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Chunk_Op<mnemonic, !listconcat(traits, [HasParent<"PlanOp">,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code commonDescription = [{

    `chunks(n)` splits each rank's share into `n` chunks; `chunks(auto)` (the
    default) leaves the count to `chunk-select-chunk-size`. `backend`
    (default `copy_engine`) and `algorithm` choose how chunks move.
  }];
}

def Chunk_AllGatherOp : Chunk_CollectiveOp<"all_gather"> {
  let summary = "Gather every rank's block of a buffer onto every rank";
  let description = [{
    Rank `r` owns block `r` of `buffer` along `dim` (the dimension split in
    `world_size` equal blocks); afterwards every rank holds all blocks.
    Algorithms: `direct` (default: every rank sends its block to every
    peer), `ring` (each rank sends to `r + 1` what it holds or received,
    one hop per step; see `chunk-expand-collectives`).

    ```mlir
    chunk.all_gather @A dim(0) chunks(4) backend(copy_engine)
    ```

    `split(d)` cuts each block into chunks along dimension `d` instead of
    `dim`: with `dim(0) split(1)` a chunk is all of a block's rows and a
    range of its columns (a strided box), for consumers that read a
    block column by column (`chunk.consume ... source(...)`).

    ```mlir
    chunk.all_gather @B dim(0) chunks(4) split(1)
    ```

    `blocks(zigzag)` (direct, not split, not of a produced buffer) gives
    rank `r` the half-blocks `r` and `2 * world_size - 1 - r` of `dim`
    instead of block `r`, the load-balanced sharding of causal attention;
    `chunks(n)` (even) then cuts each half-block into `n / 2` chunks.

    ```mlir
    chunk.all_gather @K dim(0) chunks(2) blocks(zigzag)
    ```

    When kernel tiles produce `buffer` (`chunk.produce`), each rank's
    block is what its tiles write, and its chunks leave as soon as those
    tiles are done: `chunk-expand-collectives` makes every transfer wait
    for the producer (`after [@tiles]`) and `chunk-fuse-gathers` has the
    tiles count each finished chunk, which the copy engine then pushes to
    every peer (backend `copy_engine`; with `split(d)`, `d` the dimension
    the tiles are produced along). An all-reduce computed from gathered
    operands ends this way: each rank computes its rows of the sum, then
    gathers the others'.

    ```mlir
    chunk.produce @tiles @C dim(1) tile(256) index("pid_n")
    chunk.all_gather @C dim(0) chunks(2) split(1)
    ```

    `slots(2)` (ring, one chunk per rank, copy engine or ldst, `dim(0)`) keeps a
    rank's gathered blocks in two slots instead of `world_size` blocks: the
    buffer bound on each rank holds three blocks (the rank's own, then the
    two slots), so memory per rank does not grow with the world size. The
    kernel then runs once per ring step, each launch on the block of its
    step while the next block lands in the other slot (see
    `chunk-reorder-tiles`).

    ```mlir
    chunk.all_gather @K dim(0) chunks(1) algorithm(ring) slots(2)
    ```
  }] # commonDescription;
  let arguments = (ins FlatSymbolRefAttr:$buffer,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$chunks,
                       DefaultValuedAttr<Chunk_Backend,
                           "::synco::chunk::Backend::copy_engine">:$backend,
                       DefaultValuedAttr<Chunk_Algorithm,
                           "::synco::chunk::Algorithm::direct">:$algorithm,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<0>]>>:$split,
                       DefaultValuedAttr<Chunk_BlockLayout,
                           "::synco::chunk::BlockLayout::contiguous">:$blocks,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$slots);
  let assemblyFormat = [{
    $buffer `dim` `(` $dim `)` `chunks` `(` custom<ChunkCount>($chunks) `)`
    (`split` `(` $split^ `)`)?
    (`backend` `(` $backend^ `)`)?
    (`algorithm` `(` $algorithm^ `)`)?
    (`blocks` `(` $blocks^ `)`)?
    (`slots` `(` $slots^ `)`)? attr-dict
  }];
}

def Chunk_ReduceScatterOp : Chunk_CollectiveOp<"reduce_scatter"> {
  let summary = "Sum every rank's partial buffer, leave each rank its block";
  let description = [{
    Every rank holds a partial `src`; afterwards rank `r` holds, in `dst`,
    block `r` (along `dim`) of the element-wise reduction of all partials.
    `dst` has `src`'s shape with `dim` divided by `world_size`.

    When kernel tiles produce `src` (`chunk.produce`) and the backend is
    `ldst`, `chunk-fuse-reductions` fuses the reduction into those tiles:
    they hand their partial to its owner (push or pull) and the owner's
    tiles add the partials, in rank order, in their epilogue.

    ```mlir
    chunk.reduce_scatter @C_partial into @C dim(0) chunks(auto) reduce(sum)
    ```
  }] # commonDescription;
  let arguments = (ins FlatSymbolRefAttr:$src,
                       FlatSymbolRefAttr:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$chunks,
                       DefaultValuedAttr<Chunk_Reduction,
                           "::synco::chunk::Reduction::sum">:$reduce,
                       DefaultValuedAttr<Chunk_Backend,
                           "::synco::chunk::Backend::copy_engine">:$backend,
                       DefaultValuedAttr<Chunk_Algorithm,
                           "::synco::chunk::Algorithm::direct">:$algorithm);
  let assemblyFormat = [{
    $src `into` $dst `dim` `(` $dim `)` `chunks` `(` custom<ChunkCount>($chunks) `)`
    (`reduce` `(` $reduce^ `)`)?
    (`backend` `(` $backend^ `)`)?
    (`algorithm` `(` $algorithm^ `)`)? attr-dict
  }];
}

def Chunk_AllReduceOp : Chunk_CollectiveOp<"all_reduce"> {
  let summary = "Reduce every rank's partial buffer onto every rank";
  let description = [{
    Every rank holds a partial `src`; afterwards every rank holds the
    element-wise reduction in `dst` (same shape). `algorithm` is `one_shot`
    (every rank reads every partial; best for small buffers) or `two_shot`
    (reduce-scatter, then all-gather). A `one_shot` all-reduce of a
    `chunk.produce`d partial with backend `ldst` is fused into the producing
    tiles by `chunk-fuse-reductions` (on more than 2 ranks peers' partials
    land in a staging buffer `<src>_staging` that
    `chunk-expand-collectives` declares).

    ```mlir
    chunk.all_reduce @C_partial into @C dim(0) chunks(2) algorithm(one_shot)
    ```
  }] # commonDescription;
  let arguments = (ins FlatSymbolRefAttr:$src,
                       FlatSymbolRefAttr:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$chunks,
                       DefaultValuedAttr<Chunk_Reduction,
                           "::synco::chunk::Reduction::sum">:$reduce,
                       DefaultValuedAttr<Chunk_Backend,
                           "::synco::chunk::Backend::copy_engine">:$backend,
                       DefaultValuedAttr<Chunk_Algorithm,
                           "::synco::chunk::Algorithm::two_shot">:$algorithm);
  let assemblyFormat = [{
    $src `into` $dst `dim` `(` $dim `)` `chunks` `(` custom<ChunkCount>($chunks) `)`
    (`reduce` `(` $reduce^ `)`)?
    (`backend` `(` $backend^ `)`)?
    (`algorithm` `(` $algorithm^ `)`)? attr-dict
  }];
}

def Chunk_AllToAllOp : Chunk_CollectiveOp<"all_to_all"> {
  let summary = "Rank r sends block d of src to rank d, which stores it as block r";
  let description = [{
    `src` and `dst` have the same shape, split in `world_size` blocks along
    `dim`. Afterwards block `s` of rank `d`'s `dst` is block `d` of rank
    `s`'s `src`.

    ```mlir
    chunk.all_to_all @X into @Y dim(0) chunks(1) backend(ldst)
    ```

    `to(t)` re-shards: `src` is split in `world_size` blocks along `dim`,
    `dst` along `t`, and block `s` of rank `d`'s `dst` (along `t`) is block
    `d` of rank `s`'s `src` (along `dim`). `dst` has `src`'s shape with
    `dim` divided and `t` multiplied by the world size: a sequence-sharded
    `[S/W, H*D]` into a head-sharded `[S, H/W*D]` (Ulysses attention) is
    `dim(1) to(0)`, and back `dim(0) to(1)`. `chunks(n)` then cuts each
    block along `t`; of a buffer kernel tiles produce, each rank's block
    along `dim` (in the order the tiles finish it).

    ```mlir
    chunk.all_to_all @Qs into @Qh dim(1) chunks(2) to(0)
    ```

    `split(d)`, `d` = `dim`, cuts each block along `dim` instead of `to`:
    a head-sharded consumer then waits per head, each chunk holding
    `block / n` of the heads of one source rank's tokens (`dim(1) to(0)
    chunks(4) split(1)`, 4 heads of 128 columns per rank: a chunk per
    head). A consumer's tiles walk `to` and wait for the chunks of the
    columns they read, found from their addresses.

    ```mlir
    chunk.all_to_all @Qs into @Qh dim(1) chunks(4) to(0) split(1)
    ```

    A re-shard of what kernel tiles produce waits for them (every transfer
    is `after [@tiles]`; `chunk-fuse-gathers` sends each chunk of each
    rank's rows as soon as it is done); an all-to-all within one splitting
    of a produced buffer is refused.
  }] # commonDescription;
  let arguments = (ins FlatSymbolRefAttr:$src,
                       FlatSymbolRefAttr:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$dim,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$chunks,
                       DefaultValuedAttr<Chunk_Backend,
                           "::synco::chunk::Backend::copy_engine">:$backend,
                       DefaultValuedAttr<Chunk_Algorithm,
                           "::synco::chunk::Algorithm::direct">:$algorithm,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<0>]>>:$to,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<0>]>>:$split);
  let assemblyFormat = [{
    $src `into` $dst `dim` `(` $dim `)` `chunks` `(` custom<ChunkCount>($chunks) `)`
    (`to` `(` $to^ `)`)? (`split` `(` $split^ `)`)?
    (`backend` `(` $backend^ `)`)?
    (`algorithm` `(` $algorithm^ `)`)? attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Kernel-level synchronisation
//===----------------------------------------------------------------------===//

def Chunk_RankOp : Chunk_Op<"rank", [Pure]> {
  let summary = "The executing rank, inside a fused kernel";
  let description = [{
    ```mlir
    %r = chunk.rank : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Chunk_WorldSizeOp : Chunk_Op<"world_size", [Pure]> {
  let summary = "The number of ranks, inside a fused kernel";
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Chunk_PeerPtrOp : Chunk_Op<"peer_ptr", [Pure,
    AllTypesMatch<["ptr", "result"]>]> {
  let summary = "The address of the same symmetric-buffer element on a peer";
  let description = [{
    Given a pointer into the executing rank's copy of a symmetric buffer,
    returns the pointer to the same element in rank `peer`'s copy (through
    the peer pointer table of the fused kernel's ABI). The pointer type is
    Triton's (`!tt.ptr<T>` or a tensor of them).

    ```mlir
    %p = chunk.peer_ptr %a, %peer : !tt.ptr<bf16>
    ```
  }];
  let arguments = (ins AnyType:$ptr, I32:$peer);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$ptr `,` $peer attr-dict `:` type($ptr)";
}

def Chunk_WaitOp : Chunk_Op<"wait"> {
  let summary = "Spin until a chunk's flag reaches the epoch";
  let description = [{
    Blocks the calling program until `flags[chunk] >= epoch * count`
    (`count` defaults to 1: a flag set to the epoch; a counter that
    `chunk.arrive` bumps `count` times per epoch waits for all of them), reading the
    flag with `sem` (default `acquire`) at `scope` (default `sys`, needed for
    flags written by a copy engine or another GPU). The wait is bounded by
    `timeout_ns`: when it expires, the kernel records `(rank, chunk, epoch)`
    in its error buffer, and every later wait of the launch returns at once,
    so the kernel finishes and the runtime reports the error instead of
    hanging.

    ```mlir
    chunk.wait %flags[%c], %epoch : !tt.ptr<i32>
    chunk.wait %flags[%c], %epoch sem(relaxed) scope(gpu) {timeout_ns = 1000 : i64} : !tt.ptr<i32>
    chunk.wait %flags[%c], %epoch count(16) : !tt.ptr<i32>
    ```
  }];
  let arguments = (ins AnyType:$flags, I32:$chunk, I32:$epoch,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$count,
                       DefaultValuedAttr<Chunk_MemSemantic,
                           "::synco::chunk::MemSemantic::acquire">:$sem,
                       DefaultValuedAttr<Chunk_MemScope,
                           "::synco::chunk::MemScope::sys">:$scope,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>,
                           "10000000000">:$timeout_ns);
  let assemblyFormat = [{
    $flags `[` $chunk `]` `,` $epoch
    (`count` `(` $count^ `)`)?
    (`sem` `(` $sem^ `)`)?
    (`scope` `(` $scope^ `)`)?
    attr-dict `:` type($flags)
  }];
  let hasVerifier = 1;
}

def Chunk_PollOp : Chunk_Op<"poll"> {
  let summary = "Read a chunk's flag once: whether it has reached the epoch";
  let description = [{
    Reads `flags[chunk]` once, relaxed at `scope` (default `sys`), and
    yields whether it has reached `epoch * count` (`count` as for
    `chunk.wait`). It never blocks, and it orders nothing: a program that
    reads the chunk because a poll said it has arrived first executes
    `chunk.acquire` (one for any number of polls). Polls of several flags
    are independent reads, in flight together.

    ```mlir
    %k = chunk.poll %flags[%c], %epoch : !tt.ptr<i32>
    %n = chunk.poll %flags[%c], %epoch count(16) scope(gpu) : !tt.ptr<i32>
    ```
  }];
  let arguments = (ins AnyType:$flags, I32:$chunk, I32:$epoch,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>, "1">:$count,
                       DefaultValuedAttr<Chunk_MemScope,
                           "::synco::chunk::MemScope::sys">:$scope);
  let results = (outs I1:$arrived);
  let assemblyFormat = [{
    $flags `[` $chunk `]` `,` $epoch
    (`count` `(` $count^ `)`)?
    (`scope` `(` $scope^ `)`)?
    attr-dict `:` type($flags)
  }];
}

def Chunk_AgreeOp : Chunk_Op<"agree"> {
  let summary = "Whether a condition holds on every thread of the program";
  let description = [{
    Yields, on every thread of the program (the CTA), whether `holds` is
    true on all of them: a barrier that ANDs a predicate across the
    program. Each thread's `chunk.poll` is its own read, and a flag set
    between two threads' reads gives them different answers; a branch on
    them would send the program's threads down different paths, whose
    barriers and shared buffers would not match. Every thread of the
    program must reach it, as a barrier.

    ```mlir
    %all = chunk.agree %present
    ```
  }];
  let arguments = (ins I1:$holds);
  let results = (outs I1:$all);
  let assemblyFormat = "$holds attr-dict";
}

def Chunk_AcquireOp : Chunk_Op<"acquire"> {
  let summary = "Order the program's later reads after the flags it polled";
  let description = [{
    An acquire fence at `scope` (default `sys`): the reads that follow it
    see every write that a release of a flag published, for each flag a
    `chunk.poll` before it found at its epoch. Together, polls and one
    acquire give what a `chunk.wait` on each flag gives, when every poll
    succeeded, without spinning.

    ```mlir
    chunk.acquire
    chunk.acquire scope(gpu)
    ```
  }];
  let arguments = (ins DefaultValuedAttr<Chunk_MemScope,
                           "::synco::chunk::MemScope::sys">:$scope);
  let assemblyFormat = "(`scope` `(` $scope^ `)`)? attr-dict";
}

def Chunk_SignalOp : Chunk_Op<"signal"> {
  let summary = "Publish a chunk: set its flag to the epoch";
  let description = [{
    Waits for every thread of the program to finish its writes, makes them
    visible at `scope` (default `sys`), then stores `epoch` into
    `flags[chunk]` with `sem` (default `release`). `flags` may point into a
    peer's flag buffer (see `chunk.peer_ptr`).

    ```mlir
    chunk.signal %flags[%c], %epoch : !tt.ptr<i32>
    ```
  }];
  let arguments = (ins AnyType:$flags, I32:$chunk, I32:$epoch,
                       DefaultValuedAttr<Chunk_MemSemantic,
                           "::synco::chunk::MemSemantic::release">:$sem,
                       DefaultValuedAttr<Chunk_MemScope,
                           "::synco::chunk::MemScope::sys">:$scope);
  let assemblyFormat = [{
    $flags `[` $chunk `]` `,` $epoch
    (`sem` `(` $sem^ `)`)?
    (`scope` `(` $scope^ `)`)?
    attr-dict `:` type($flags)
  }];
  let hasVerifier = 1;
}

def Chunk_ArriveOp : Chunk_Op<"arrive"> {
  let summary = "Count one more finished tile of a chunk";
  let description = [{
    Waits for every thread of the program to finish its memory accesses,
    makes its writes visible at `scope` (default `sys`), then atomically adds
    1 to the counter `flags[chunk]` with `sem` (default `release`). A chunk
    produced by `n` tiles is complete in epoch `e` once its counter reaches
    `e * n`: `chunk.wait ... count(n)` waits for that. Counters only grow, so
    nothing is reset between launches. `flags` may point into a peer's flag
    buffer (see `chunk.peer_ptr`): a remote atomic over NVLink.

    ```mlir
    chunk.arrive %flags[%c] : !tt.ptr<i32>
    ```
  }];
  let arguments = (ins AnyType:$flags, I32:$chunk,
                       DefaultValuedAttr<Chunk_MemSemantic,
                           "::synco::chunk::MemSemantic::release">:$sem,
                       DefaultValuedAttr<Chunk_MemScope,
                           "::synco::chunk::MemScope::sys">:$scope);
  let assemblyFormat = [{
    $flags `[` $chunk `]`
    (`sem` `(` $sem^ `)`)?
    (`scope` `(` $scope^ `)`)?
    attr-dict `:` type($flags)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Instrumentation
//===----------------------------------------------------------------------===//

def Chunk_TraceOp : Chunk_Op<"trace"> {
  let summary = "Record the time at which a tile reaches a point of the kernel";
  let description = [{
    Writes the GPU's nanosecond clock (`%globaltimer`) into record `record`
    of the trace buffer `trace` (an array of `records` 64-byte records, 8
    `i64` words each). Word `event` (0 to 4) holds the time:

    | word | what                                                        |
    |------|-------------------------------------------------------------|
    | 0    | `tile_begin`: the tile starts (its index is known)          |
    | 1    | `wait_begin`: its first `chunk.wait` starts (first one kept) |
    | 2    | `wait_end`: a `chunk.wait` returned (last one kept)          |
    | 3    | `signal`: a `chunk.signal` / `chunk.arrive` published (last) |
    | 4    | `tile_end`: the tile is done                                |
    | 5    | `tile` (low 32 bits), SM id (`%smid`, high 32 bits)          |
    | 6    | program id x (low 32 bits), y (high 32 bits)                |
    | 7    | program id z                                                |

    `tile_begin` writes the whole record: its time, 0 in words 1 to 4 and
    words 5 to 7, so a record holds the last launch that ran its tile; a
    word still 0 was not reached in that launch. Thread 0 of the program
    writes; a record at or beyond `records` is dropped. Zero the buffer once
    (the runtime's `Node::clear_trace`) so that records no tile wrote read
    as unused. `chunk-trace-tiles` inserts these ops.

    ```mlir
    chunk.trace tile_begin %trace[%record], %tile records(16384) : !tt.ptr<i64>
    ```
  }];
  let arguments = (ins AnyType:$trace, I32:$record, I32:$tile,
                       Chunk_TraceEvent:$event,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$records);
  let assemblyFormat = [{
    $event $trace `[` $record `]` `,` $tile `records` `(` $records `)`
    attr-dict `:` type($trace)
  }];
}

#endif // SYNCO_CHUNK_OPS
