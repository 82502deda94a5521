//===- ChunkPasses.td - Synco's passes ---------------------*- tablegen -*-===//
//
// Every Synco pass, declared once: its name, summary, contract
// (description), typed options with their defaults, and the dialects it may
// create ops of. `mlir-tblgen -gen-pass-decls` turns this into the C++ pass
// classes that MLIR's registry, option parser and `--help` use;
// `-gen-pass-doc` into `docs/ChunkPasses.md`; and `build.rs` into the Rust
// option structs that each pass's body (written in Rust, `passes/src/`)
// receives. A pass body reads its options only through those structs, so an
// option exists, with one type and one default, exactly where it is
// declared here. A pipeline that takes a pass's option (`synco-fuse`, see
// SyncoFuseForwards at the end) gets it from here too.
//
//===----------------------------------------------------------------------===//

#ifndef SYNCO_CHUNK_PASSES
#define SYNCO_CHUNK_PASSES

include "mlir/Pass/PassBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Option types
//===----------------------------------------------------------------------===//

def Chunk_ReductionMode : I32EnumAttr<"ReductionMode",
    "how the partials of a reduction on ldst reach their owner", [
      I32EnumAttrCase<"push", 0>,
      I32EnumAttrCase<"pull", 1>,
      I32EnumAttrCase<"stage", 2>]> {
  let cppNamespace = "::synco::chunk";
}

def Chunk_PresentPath : I32EnumAttr<"PresentPath",
    "what a program runs when every chunk its split loop reads is present", [
      I32EnumAttrCase<"arrival", 0>,
      I32EnumAttrCase<"none", 1>]> {
  let cppNamespace = "::synco::chunk";
}

def Chunk_PresentSplit : I32EnumAttr<"PresentSplit",
    "how the split beside a present path is laid out", [
      I32EnumAttrCase<"automatic", 0, "auto">,
      I32EnumAttrCase<"rolled", 1>,
      I32EnumAttrCase<"unrolled", 2>]> {
  let cppNamespace = "::synco::chunk";
}

/// An integer option that must lie in [minValue, maxValue]: a value outside
/// is refused when the pipeline is parsed.
class BoundedOption<string varName, string arg, string default,
                    int min, int max, string desc>
    : Option<varName, arg, "int64_t", default, desc> {
  int minValue = min;
  int maxValue = max;
}

/// A count in [minValue, maxValue], or `auto` (the passes' own choice):
/// anything else is refused when the pipeline is parsed.
class CountOrAutoOption<string varName, string arg, string default,
                        int min, int max, string desc>
    : Option<varName, arg, "std::string", default, desc> {
  int minValue = min;
  int maxValue = max;
}

/// A pass whose body is written in Rust. It runs on the module (plans and
/// kernels are siblings in it) and may create arith, scf, gpu and chunk ops.
class ChunkPass<string arg> : Pass<arg, "::mlir::ModuleOp"> {
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::gpu::GPUDialect",
    "::synco::chunk::ChunkDialect",
  ];
}

//===----------------------------------------------------------------------===//
// Passes, in pipeline order
//===----------------------------------------------------------------------===//

def ChunkSelectBackend : ChunkPass<"chunk-select-backend"> {
  let summary = "Pick a backend for backend(auto) collectives (copy engine or SM loads and stores)";
  let description = [{
* `all_gather`, `all_to_all`: `copy_engine` (the chunks move while every
  SM computes; SM copies were as fast only where the GEMM dominates, and
  up to 2.5x slower where the transfer does, see
  passes/docs/backend-thresholds.md);
* `reduce_scatter` and two-shot `all_reduce` of a partial that kernel
  tiles produce: `copy_engine` when each rank's partial of a peer's
  block, `B = M / W * N` elements, exceeds `copy-engine-min-bytes`, else
  `ldst` (the producing tiles push their partials). The copy engine
  frees the SMs from waiting for remote stores, but each chunk it moves
  costs a stream wait and a copy launch that a small transfer at the
  kernel's end does not hide. A two-shot all-reduce moves twice (the
  partials, then the sums), so its threshold is twice the
  reduce-scatter's. Defaults from 2 x H200 (commit f93bc6b): the copy
  engine lost at 4 MiB per peer (reduce-scatter 1024x7168x4096: 0.116
  against 0.106 ms), tied at 8 MiB, won from 16 MiB (4% to 17%); the
  two-shot copy engine lost up to 16% at 4 and 8 MiB and won 5% to 12%
  from 16 MiB;
* one-shot `all_reduce`: `ldst` (the only fused one).

Each choice is reported as a remark with its reason.

Options:
* `copy-engine-min-bytes=N` (default 4194304, 4 MiB): the reduce-scatter
  threshold above.

Preconditions: plans verify. Postconditions: no collective has
`backend(auto)`.

Example: 32 MiB of partial per peer, above `copy-engine-min-bytes`:

```mlir
chunk.reduce_scatter @P into @C dim(0) chunks(2) backend(auto)
// becomes, with the remark "backend(auto) -> backend(copy_engine): 33554432
// bytes of partial per peer, more than 4194304: the side stream moves
// finished chunks while the SMs compute"
chunk.reduce_scatter @P into @C dim(0) chunks(2)   // copy_engine, the default
```
  }];
  let options = [
    BoundedOption<"copyEngineMinBytes", "copy-engine-min-bytes",
                  /*default=*/"4194304", 0, 4611686018427387904,
           "Bytes of a rank's partial per peer above which a reduce-scatter's "
           "partials move by the copy engine (twice that for a two-shot "
           "all-reduce)">,
  ];
}

def ChunkSelectChunkSize : ChunkPass<"chunk-select-chunk-size"> {
  let summary = "Pick chunks(auto) counts from the cost model (or an explicit count)";
  let description = [{
For an all-gather (or all-to-all) of `@A` along `d` on `W` ranks, the
candidates are the counts `n` in {1, 2, 4, 8, 16} that split a rank's
block evenly into chunks whose rows are a multiple of the consuming
tile (`chunk.consume @A ... tile(T)`, so no tile waits for two chunks).
The cost model (`synco-cost-model`) predicts the fused time of each from
the bytes per chunk, link bandwidth, per-chunk sync cost and the compute
time of a chunk's rows; the fastest wins. Each choice is reported as a
remark listing every prediction.

The compute per row is `2 * K * N`: `K` is the product of `@A`'s other
dimensions, `N` the last dimension of the plan's output buffer (a buffer
other than `@A` with as many rows as `@A`), or `K` if there is none.

For a reduce-scatter of a partial `@P` that kernel tiles produce
(`chunk.produce @P ... tile(T)`), chunks set how finely
`chunk-reorder-tiles` interleaves peers' and own rows: finer chunks
spread the partials' traffic over more of the kernel, but a chunk
must hold whole swizzle groups of the kernel (`GROUP_M` row tiles,
`chunk-reorder-tiles` refuses the rest: they can deadlock). The pass
picks the finest count whose chunks hold at least
[`MIN_REDUCE_CHUNK_TILES`] row tiles and a multiple of the kernel's
swizzle group (read from the plan's kernel when the module has it), else
one chunk per rank (measured on 2 x H200: finer counts were up to 1.29x
slower, see passes/docs/reduce-chunk-tiles.md; those finer chunks also split the
kernel's swizzle groups, which is now refused).

A plan whose consumer names a kernel loop (`loop("start_n")`: an
attention kernel's loop over the keys and values), or whose kernel (if
the module has it) indexes no consumer's tiles by a program id (a
consume with a tile and no `index`, `source` or `loop`, which
`chunk-bind-kernel` then finds a loop for), is not a GEMM: each
chunk becomes a software-pipelined loop of its own, whose prologue and
drain cost more with every chunk, and a peer's block arrives while the
loop reads the rank's own. Its gathers get one chunk per rank (two for
`blocks(zigzag)`: one per half-block), with a remark saying why (on one
H200, 1 chunk per rank cost +3.7% over the local kernel, 4 chunks +9.6%:
`benches/attention/docs/overhead-chunks-and-styles.md`). A zigzag gather without such a loop is
refused: the GEMM model does not size it.

Options:
* `chunks-per-rank=N`: use `N` for every `auto` collective (checked
  against the same rules), skipping the model;
* `calibration=PATH`: a JSON file with the model's machine constants
  (fields of `synco_cost_model::Machine`), e.g. fitted from a benchmark's
  chunk-count sweep. Default: `Machine::H200_NVLINK`.

An all-reduce of such a partial: two-shot, as a reduce-scatter; one-shot,
the finest count (its chunks' tiles wait for the peers together).

A gathered operand read per source (`chunk.consume ... source(...)`,
the reduce-scatter from gathered operands: every tile reads every rank's
block, waiting for the chunk of the peer's block it reads) is chunked
along the dimension its tiles walk (`split(d)`, else `dim`). The pass
reads the tile order from the plan's kernel (Triton's GROUP_M swizzle):
when one swizzle group holds every tile of the other per-source
operands, tiles go one block of this operand's tiles after another
(column block by column block for B), so its chunks arrive in the order
the waves of tiles need them, and it gets one chunk per wave of
programs (`synco_cost_model::chunks_per_wave`; `sms` in the
calibration, 132 by default); the operand whose tiles a group walks
(A's rows) is read whole by every wave: one chunk. Other tile orders,
a module without the kernel, and chunks along a dimension the tiles do
not walk are refused (give a count, or `chunks-per-rank`).

An all-gather of an output that kernel tiles produce (`chunk.produce`,
`chunk-fuse-gathers`: each rank's block goes out chunk by chunk as its
tiles finish) is chunked along the dimension its tiles are produced
along. When the kernel's tiles finish those chunks one after another
(row chunks, or column chunks with every row tile of the block in one
swizzle group), the cost model predicts each count
(`synco_cost_model::predict_gathered_output`: the kernel's time from
its flops, the copies' from their bytes and per-copy cost) and the
fastest wins; otherwise every chunk is done only near the kernel's end,
and one chunk is picked.

Preconditions: plans verify. Postconditions: no `chunks(auto)` remains
on any collective.

Example: A [8192, 4096] gathered on 2 ranks into a GEMM whose output C is
[8192, 7168]:

```mlir
chunk.all_gather @A dim(0) chunks(auto)
// becomes, with the remark "chunks(auto) -> chunks(1) for @A; predicted
// fused time per count: 1: 683.4 us, 2: 685.4 us, 4: 689.4 us, ..."
chunk.all_gather @A dim(0) chunks(1)
```
  }];
  let options = [
    BoundedOption<"chunksPerRank", "chunks-per-rank", /*default=*/"0", 0,
                  2147483647,
           "Use this count for every chunks(auto) collective instead of the "
           "cost model (0: ask the cost model)">,
    Option<"calibration", "calibration", "std::string", /*default=*/"",
           "JSON file with the cost model's machine constants (empty: the "
           "built-in H200 NVLink constants)">,
  ];
}

def ChunkExpandCollectives : ChunkPass<"chunk-expand-collectives"> {
  let summary = "Expand chunk collectives (all_gather, all_to_all) into explicit chunk.transfer ops";
  let description = [{
Each collective of a `chunk.plan` becomes the `chunk.transfer` ops that
implement it, in one `group` per phase (so the plan verifier checks their
coverage), and the collective is erased. The dimension `d` of the
collective splits into `W` blocks of `B = shape[d] / W` rows; each block
into `n` chunks of `B / n` rows (`chunks(n)`). Rank `r` always handles its
own chunks first, then its peers in rank-rotated order `r+1, r+2, ...`
(mod `W`); `order` is that position. Transfers are named
`@<dst>_p<k>_c<c>` (chunk `c` with peer `r + k`; phases of two-shot
all-reduce add `_rs` / `_ag`).

* `all_gather @A` (direct): block `r+k` of `A`, from rank `r+k` into the
  same place; `k = 0` is a `local` marker (rows already in place). With
  `split(s)` the chunks of a block are ranges along dimension `s` (all of
  the block along `d`), named the same way.
* `all_gather @A algorithm(ring)`: in step `k` (1 to `W - 1`) rank `r`
  receives block `r+k` from its neighbour `r+1`, which received it in
  step `k-1`: `@<A>_s<k>_c<c>` (`k = 0`: the rank's own, `local`), each
  from step 2 on `after [@<A>_s<k-1>_c<c>]` (on the neighbour, see
  `chunk.transfer`). Blocks arrive in the order `r, r+1, r+2, ...`, as
  a direct gather's do, so consumers walk them in the same order
  (`chunk-reorder-tiles`), a kernel loop's present path included.
  Refused for a buffer kernel tiles produce. With `slots(2)` the transfers are the same, and
  the buffer records `chunk.slots = 2`: each rank keeps the blocks in
  two slots (`chunk-reorder-tiles`, `chunk-lower-transfers`). Refused
  with the reason: another slot count, another algorithm, more than one
  chunk per rank, `tma`, another dimension than 0 or a `split`.
* `all_gather @A blocks(zigzag)` (direct): as direct, but rank `o`'s
  chunks `c < n/2` cut its half-block `o` and the others its half-block
  `2W - 1 - o` (of `2W` along `d`). Refused for a buffer kernel tiles
  produce.
* `all_to_all @X into @Y` (direct): block `r` of rank `r+k`'s `X` into
  block `r+k` of `Y`. With `to(t)` (a re-shard), block `r` along `d` of
  rank `r+k`'s `X`, chunk `c` of its rows along `t`, into block `r+k`
  along `t` of `Y` (all of `Y` along `d`).
* `reduce_scatter @P into @C` (direct): block `r` of rank `r+k`'s partial
  `P`, reduced into `C` (which holds one block) on rank `r`; `k = 0` is
  the rank's own partial, a local reducing copy.
* `all_reduce @P into @C`, `one_shot`: every rank reduces every rank's
  whole `P` into its `C`; `two_shot`: a reduce-scatter into block `r` of
  `C`, then an all-gather of the other blocks of `C`, each chunk after the
  reduce-scatter chunks that produce it.

Transfers of an all-gather or all-to-all with `backend(copy_engine)` are
pushed: the source rank's copy engine drives them (each chunk pulled
across NVLink cost about 11 us more than one pushed,
`passes/docs/pushed-gathers.md`). `ldst` transfers are
pulled by the consumer's copy programs.

Reducing transfers of a buffer that kernel tiles produce (`chunk.produce`)
wait for those tiles (`after [@producer]`), and so do an all-gather's
transfers of such a buffer (each rank's block is what its tiles write;
`chunk-fuse-gathers` has the tiles count each chunk).

A `reduce_scatter @P` with `backend(copy_engine)` (or a two-shot
`all_reduce`, whose first phase is one) also declares
`chunk.buffer @P_staging {chunk.staging}`: `W - 1` blocks of `P`'s
shape, unbound (a kernel argument that the runtime allocates with the
kernel), where the copy engine lands the peers' partials of the rank's
own block (source `s` on rank `r` in slot `(s - r - 1) mod W`; see
[`crate::plan::staging_slot`]), so that no copy overwrites rows the
rank's own tiles write.

A one-shot `all_reduce @P` of `W > 2` ranks declares `@P_staging` too:
`W - 2` copies of `P`'s shape, where peers push their whole partials.
Source `s` lands on rank `r` in slot `(s - r - 1) mod W`; slot 0 is the
rank's own `P` (a one-shot all-reduce never stores its own partial
there), slot `k > 0` is copy `k - 1` of the staging buffer.

Options: none.
Preconditions: every collective has an explicit chunk count and
backend (run `chunk-select-chunk-size` for `chunks(auto)`,
`chunk-select-backend` for `backend(auto)`).
Postconditions: no collective ops remain in plans; the plans verify.
Not yet supported (refused with an error): the `ring` algorithm of
`reduce_scatter` (only `all_gather` has one).
Refused: a plan whose transfers times its world size would exceed
[`MAX_RANK_COPIES`], 2^20 (every transfer is checked on every rank; at the
limit the whole synco-ag-gemm pipeline takes 33 s and 3.4 GB on a 2-core
machine), and a staging buffer whose rows or bytes leave 64 bits.

Example, 2 ranks, 2 chunks per rank:

```mlir
chunk.all_gather @A dim(0) chunks(2)     // @A : !chunk.buffer<1024x64xbf16>
// becomes (the rank's own chunks, then the peer's, pushed by its owner)
chunk.transfer @A_p0_c0 local copy_engine from <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0)
    to <@A[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) order(0) collective(all_gather) {group = "all_gather_A"}
...
chunk.transfer @A_p1_c1 push copy_engine from <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2)
    to <@A[(d0) -> (((d0 + 1) mod 2) * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) order(3) collective(all_gather) {group = "all_gather_A"}
```
  }];
}

def ChunkImportStablehlo : ChunkPass<"chunk-import-stablehlo"> {
  let summary = "Write chunk plans for the collectives of a StableHLO module that sit beside a matrix product";
  let description = [{
Reads a partitioned StableHLO module (generic form, as JAX exports
`jax.jit(f).lower(...)` of `shard_map` code; `mhlo.num_partitions` gives
the world size W) and, for each collective next to a `dot_general` that
Synco fuses, appends a `chunk.plan` to the module, located at the
collective, with a remark naming what was matched:

* `stablehlo.all_gather` of dimension 0 whose result is the left operand
  of a plain matrix product (`[M, K] x [K, N]`, no batch dimensions):
  all-gather + GEMM, `@all_gather_matmul_<i>` (A `[M, K]` bound to
  argument 0, `chunk.all_gather @A dim(0)`; the product is any tensor);
* `stablehlo.reduce_scatter` of dimension 0, summing, of a matrix
  product's result: GEMM + reduce-scatter, `@matmul_reduce_scatter_<i>`
  (P `[M, N]` produced by the tiles, argument 2; C `[M / W, N]`);
* `stablehlo.all_reduce`, summing, of a matrix product's result: GEMM +
  all-reduce, `@matmul_all_reduce_<i>` (two-shot);
* three `stablehlo.all_to_all` of `[S/W, H, D]` tensors from tokens to
  heads (split along dimension 1, concatenated along 0) feeding an
  attention's products (Q and K the two operands of one `dot_general`, V
  an operand of another whose other operand is computed from the first;
  looking through `broadcast_in_dim`, `reshape`, `convert`, `transpose`,
  so grouped heads repeated are found): Ulysses attention,
  `@ulysses_attention_<i>`, as `synco.plans.ulysses_attention` writes it
  for the repository's attention kernel (Q, K, V bound to arguments 0, 1,
  2, `chunks(1)`, the copy engine); with the `all_to_all` of the second
  product's result back from heads to tokens, that too (the output bound
  to argument 3).

Each plan is what `synco.plans` writes for the repository's GEMM kernels
(`examples/ag_gemm/matmul.py`: A, B and C are arguments 0, 1 and 2, the
row tile index `pid_m`), with `chunks(auto)` and `backend(auto)` for the
cost model to choose; `<i>` counts the plans made. The StableHLO is left
as it was.

Every other collective (`collective_permute`, `collective_broadcast`,
`send`, `recv`), and one that does not fit (replica groups other than one
group of all W devices, a reduction that is not a sum, another
dimension, a product with batch dimensions, rows that do not divide by
W, rows per rank that are not whole tiles of `tile-rows` (or, for
Ulysses, `kv-tile`), an `all_to_all` around no attention, heads that do
not divide by W), gets a warning at it saying why it was not imported;
so does each op besides the fused product that reads an imported
all_gather's result (the plan fuses the gather into one kernel): nothing
is dropped silently.

Options:
* `tile-rows=T` (default 128): the row tile of the GEMM kernel the plans
  fuse into (its BLOCK_M): the consume's or produce's `tile(T)`; for an
  attention, its query block.
* `kv-tile=T` (default 64): the keys and values an attention kernel's loop
  reads per iteration (its BLOCK_N).

Refused: a module without `mhlo.num_partitions`.
Postconditions: the appended plans verify.
  }];
  let options = [
    BoundedOption<"tileRows", "tile-rows", /*default=*/"128", 1, 1073741824,
                  "Rows of the GEMM kernel's row tiles (its BLOCK_M)">,
    BoundedOption<"kvTile", "kv-tile", /*default=*/"64", 1, 1073741824,
                  "Keys per iteration of an attention kernel's loop (its BLOCK_N)">,
  ];
}

def ChunkVerifyPlan : ChunkPass<"chunk-verify-plan"> {
  let summary = "Check each chunk.plan against its kernel (bound arguments, element types)";
  let description = [{
The plan's own rules (bounds, sizes, coverage, dependencies) are checked
by `chunk.plan`'s verifier whenever the IR is verified; this pass checks
what needs the kernel too:

* the plan names a `tt.func` of the module;
* every `bind(i)` is an argument of that kernel, a `!tt.ptr<T>` whose `T`
  is the buffer's element type, or a host tensor descriptor
  (`!tt.tensordesc<tensor<64x128xT>>`, a `TensorDescriptor` the caller
  makes, as Triton's fused-attention tutorial passes K and V on Hopper)
  of the buffer's element type, of at most its dimensions, whose block
  fits the view the runtime makes of it (the buffer's last dimensions,
  the first running over the leading ones too: `[Z * H * N, D]` of a
  `[Z * H, N, D]` buffer); a produced buffer may be bound so (the
  passes that fuse its producer rewrite the store through the
  descriptor as a store through pointers);
* no two buffers bind the same argument;
* every consumed buffer is bound (the kernel must read it), and so is
  every produced one (the kernel must write it).

Options: none. Pre/postconditions: none; the IR is not changed.

Example: `chunk.buffer @X : !chunk.buffer<8192x4096xbf16> bind(2)` on a
kernel whose argument 2 is `!tt.ptr<f32>` is refused at the buffer
(`binds argument 2 ... !tt.ptr<f32>, not !tt.ptr<bf16>`).
  }];
}

def ChunkBindKernel : ChunkPass<"chunk-bind-kernel"> {
  let summary = "Append the fused-kernel ABI arguments (rank, heap bases, flags, epoch, errors) to the plan's kernel";
  let description = [{
Appends the arguments listed in [`crate::abi`] to the `tt.func` named by
each plan's `kernel(@...)` (function type, entry block arguments named
after them, `arg_attrs` extended), and records where they start in the
discardable attribute `chunk.abi_first_arg`; then one pointer argument
per plan buffer without `bind(i)` that is a staging buffer or that a
transfer, collective, `chunk.consume` or `chunk.produce` names, and per
buffer bound to a host tensor descriptor (which carries no address the
copy programs could write through), listed in `chunk.abi_buffers`.
A buffer the plan only declares (a GEMM's output, for the cost model's
sake) gets none: the kernel writes it through its own argument, which
need not be symmetric.
Kernel-level chunk ops
(`chunk.rank`, `chunk.wait`, ...) are lowered against these arguments.

First it makes the kernel's loops say what they walk
(`passes/src/kernel_loops.rs`): an integer a loop carries that starts at
the loop's lower bound (or its sign extension) and grows by the loop's
constant step each iteration, its final value unread, is the loop's
variable under another name (what Triton makes of a block pointer that
`tl.advance` moves by the step); one that starts at a value defined
before the loop plus the lower bound (or at any such value, for a loop
from 0) is that value plus the variable (the row offsets of Triton's
fused-attention tutorial, `offsetk_y = offset_y + lo`); its uses become
the variable (sign-extended to its type), or the sum. And in a loop
from 0 that walks a consumed argument no program tile indexes, a pointer
tensor the loop moves by its step times a stride defined outside it
(`k_ptrs += BLOCK_N * stride_kn`, the style of Triton's early tutorials)
becomes the pointer at the start plus the variable times the stride. The
rewrites are exact: the variable takes the values the carried ones did.

Then it checks the plan against the kernel's own address arithmetic
(`passes/src/kernel_access/`), which every later fusing pass relies on,
and refuses, at the op that disagrees, with what the kernel does instead:

* a `chunk.consume` (`chunk.produce`) of a buffer bound to an argument the
  kernel does not load (store), or does not access at all;
* a tile map whose tile index (`index("...")`, or the one found) the
  kernel's accesses of that argument do not use, multiply by another
  constant than `tile(n)`, add a range of another length to, or use along
  another dimension than `dim(d)` (where the strides show the dimension:
  a pointer access's 2-D tile walks the buffer's last two dimensions, the
  axis without a stride the last; in a buffer of three or more, whose
  leading dimensions offset the tile's base pointer (`K + off_h *
  stride_kh`), the strided axis walks `dim(d)`, which its stride, fixed
  below, then checks; where both axes have one the axes are those
  dimensions in order; a descriptor's offsets are the
  buffer's last dimensions in order, so that a `[Z * H * N, D]` one over
  every head's rows walks dim(1) of a `[Z * H, N, D]` buffer; one of a
  buffer's last two dimensions made at an offset into it, one head's
  `[N, D]` at `K + off_z * stride_kz + off_h * stride_kh`, has that offset
  checked as a pointer access's base offset is, below; one of fewer
  dimensions made at another offset is refused);
* an access that adds another offset to the rows of its tile or loop
  iteration (`t * T + [0, T) + 8`, `start_n + offs_n + past`, or a pointer
  term that is a multiple of the rows' stride, `K + past * stride_kn`; in
  a buffer of three or more dimensions tiled along the one before the
  last, a term of the tile's base offset, `K + off_h * stride_kh + 16`,
  that is neither a multiple of the leading dimension's stride the
  arithmetic shows nor a kernel argument times something, whose argument
  the plan then requires to be such a multiple; the same for the address
  a tensor descriptor of one head is made at):
  its rows are not those of the chunk it waits for (a loop over source
  ranks' blocks, `src * M + rows` with `source("src")`, is the consumer's
  own offset);
* a second `chunk.consume` of one buffer;
* for a consumer whose blocks kernel loops walk (`loop("...")`, or found:
  the loops whose variable an access's address adds to a range of the
  tile, `splat(v) + [0, T)`, or adds times a stride to a range times the
  same stride, `p + v * s` with `p`'s offsets `[0, T) * s`, or that is a
  tensor descriptor's offset for a block of `T` rows, `desc.load([v,
  ...])`, or at the variable plus a base, `desc.load([base + v, ...])`;
  one loop per access, as the two stages of a causal kernel), an
  access outside those loops, a descriptor access in them at an offset
  computed from the variable but not the variable itself or with a block
  of another height, one at the variable plus a base unless the
  descriptor has fewer dimensions than the buffer and the base is a whole
  number of the walked dimension's extent (a multiple the arithmetic
  shows, or every term a multiple of one kernel argument, which the plan
  then fixes to that extent: the tutorial's `off_z * (N_CTX * H) + off_h *
  N_CTX`), a loop that does not step by the tile from 0 or
  from a value the arithmetic shows to be a multiple of it (a constant,
  `tl.multiple_of`, sums and products of such), and a load or store in
  those loops whose address depends on a value the loop carries from one
  iteration to the next (walked chunk by chunk out of order, it would
  read the wrong rows);
* a buffer that non-local transfers write and the kernel loads, without a
  `chunk.consume` (its tiles would read rows before they arrive);
* a buffer of more elements than 32-bit element offsets reach;
* a constant that disagrees with the plan's row-major buffer where the
  kernel uses it as a bound buffer's stride (the strided axis's, the
  product of the later dimensions, or a contiguous axis's other than 1),
  a tensor descriptor's shape or stride, or an
  extent (a tile count `cdiv(x, tile)`), or that exceeds the buffer's
  extent as a mask's bound (`offsets < x`);
* a module with no plan at all (a fusing pipeline would hand the kernel
  back unfused).

Where the kernel takes such a value from one of its arguments instead, the
pass records it (`chunk.scalar_args`, then the manifest's `scalar_args`):
exactly the plan's value for strides (a multiple of it for the factor
of a leading offset: `stride_kz` and `stride_kh` of [heads, tokens,
head_dim] K, any multiple of tokens x head_dim; a multiple of what the
term's constants leave of it, `N_CTX` in `off_h * N_CTX * 64` a multiple
of the tokens), shapes of descriptors a store
writes through from the buffer's start (at most the buffer's extent for
one a load reads through, which may view fewer rows, or one made at an
offset into it, `K + off_h * stride_kh`: it views part of the buffer; at
most the product of the leading extents for the first dimension of one
with fewer dimensions than the buffer), the factor that makes a
descriptor row base whole heads, and the extents the
plan's tiles walk (one source's rows for tiles that read a block per
source; where several values are counted in tiles of one size, the one
the tile index walks, found by evaluating its arithmetic over a launch's
programs), at most the buffer's extent for masks, loops that step an
access's pointers and other tile counts. The runtime refuses a launch
that passes anything else. Where such a value is not an argument but
arithmetic of the program ids, the arguments and constants (a head's
leading offset, a causal stage's last key `N_CTX_KV - N_CTX_Q + (start_m
+ 1) * BLOCK_M`), it records it (`chunk.index_bounds`, then the
manifest's `index_bounds`) with its range: the runtime evaluates it over
each launch's grid and refuses a launch on which a program would start a
slice past the buffer's last or read past an extent (a head count, a
grid or a stride that does not match the plan's buffer).

Options: none.
Preconditions: each plan names a `tt.func` of the module, not yet bound.
Postconditions: the kernel takes the ABI arguments, and the plan records
the kernel arguments it fixes; the rest of the IR is unchanged but for
the offsets read as loop variables.

Example: a kernel `(!tt.ptr<bf16>, i32) -> ()` becomes
`(!tt.ptr<bf16>, i32, i32, i32, !tt.ptr<i64>, !tt.ptr<i32>, i32, !tt.ptr<i32>) -> ()`
(its own arguments, then `synco_rank`, `synco_world_size`,
`synco_heap_bases`, `synco_flags`, `synco_epoch`, `synco_errors`), marked
`{chunk.abi_first_arg = 2 : i32}`.
  }];
}

def ChunkReorderTiles : ChunkPass<"chunk-reorder-tiles"> {
  let summary = "Remap the kernel's tile index so tiles consume chunks in arrival order and produce partials before their owners need them";
  let description = [{
For each `chunk.consume @A dim(d) tile(T)` of a plan, finds the kernel's
tile index `t` along `d` (the value its loads of `@A` multiply by `T`, or
the value named by `index("...")`) and remaps it so that, in dispatch
order, tiles consume chunks in arrival order: the rank's own block first,
then the block of rank `r+1`, `r+2`, ... (see `chunk-expand-collectives`),
or, where the peers' blocks come in the order `r-1, r-2, ...` (a ring
written out as `r -> r+1`: the first peer block rank 0 receives is rank
`W-1`'s), backwards:
`t' = ((rank - t / T_r) mod W) * T_r + t mod T_r`.

* 2D grid, `t = tt.get_program_id 0` and the other tile index is
  `tt.get_program_id 1`: CUDA dispatches `x` fastest, so the grid would
  sweep every row block before finishing one. The pass linearises the
  program id and makes `t` the slow index
  (`L = pid0 + pid1 * num_programs(0)`, `t' = L / num_programs(1)`,
  `other' = L % num_programs(1)`), then rotates `t'`.
* Otherwise (a 1D grid with GROUP_M swizzle, a persistent tile loop, or
  a 2D grid whose row index is already the slow axis) the tile order is
  already row-block-major; the pass only rotates `t`:
  `t' = (t + rank * T_r) mod T_all`, with `T_r = block / T` row tiles per
  rank and `T_all = A.shape[d] / T`.

A consumer with `source("src")` reads every rank's block, one per
iteration of the kernel's loop over `src` (0 to `W` by 1, a constant
trip count): the tiles keep the kernel's order and the loop is rotated
instead (`src' = (src + rank) mod W`, at the start of its body, marked
`chunk.source_index = "src"`), so that each tile reads its rank's own
block first and its peers' in the order they arrive.

A consumer whose blocks a kernel loop walks (`loop("start_n")`, or the
loops found where the kernel has no program-id tile index: a
flash-attention kernel's loop over the keys and values, from `lo` to
`hi` in steps of `T`, `lo` 0 or a multiple of `T`; a causal kernel
written in two stages has two such loops, each split alike) keeps the
programs' order. Its loop is split by chunk:
a new loop over the buffer's `C = W * n` chunks of `R` rows takes chunk
`c = (j + rank * n) mod C` in iteration `j` (marked
`chunk.chunk_index = "start_n"`: the rank's own chunks first, then rank
`r+1`'s, ..., the order they arrive in; for blocks that come backwards
`c = ((rank - j / n) mod W) * n + j mod n`, rank `r-1`'s after the
rank's own; for zigzag half-blocks of `n/2` chunks, in two passes of
`W * n/2` iterations, with `s = j' / (n/2)` and `i = j' mod (n/2)` for `j'`
the iteration within its pass: the low half-block `h = (rank + s) mod W`
in the first, the high one `h = W + (s - rank) mod W` in the second,
chunk `h * n/2 + i`: the low half-blocks from the rank's own, then the
high ones from rank `r-1`'s, each pass one rotation of the rows) and
runs the kernel's loop,
clipped to `[max(lo, c * R), min(hi, (c + 1) * R))` (`[c * R, ...)` when
`lo` is 0), inside it, carrying its
iteration values (the online softmax's state) through; the clipped loop
is marked `chunk.chunk_loop = "start_n"` with its split
(`chunk.chunk_rows = R`, `chunk.chunk_count = C`). The kernel's loop
stays innermost, so Triton still software-pipelines it. For `C <= 8`
(`max-unrolled-chunks`), where the split gets no present path (below),
the loop over the chunks carries `tt.loop_unroll_factor = C`, so that
Triton's loop-unroll pass (which `synco compile` runs on the TTIR it
hands over) puts each clipped loop in the kernel's body, compiled as the
kernel's own loop is, and `R` reaches the bounds through a pure
`mov.b32` of inline PTX (a constant would let LLVM widen the clipped
loop's variable to 64 bits); otherwise the loop stays rolled and `R` a
constant (passes/docs/kernel-loops.md). Buffers walked
by one loop (keys and values) share the split and must be chunked alike,
and the loop must start at 0 or a multiple of `T` and step by `T`, or the
consume is refused (the plan verifier makes chunks hold whole blocks). A kernel that reads
a program id in several places gets one `tt.get_program_id` per axis
first, and the two of a 2D grid side by side, so that the remapped index
replaces every read and is defined before any. Refused too: chunks the
transfers leave held neither in one block per rank nor in zigzag
half-blocks (the loop could not tell its own chunks from its peers'), and
zigzag half-blocks read by any other consumer than such a loop.

A buffer a ring keeps in two slots (`chunk.slots = 2`, from
`all_gather ... algorithm(ring) slots(2)`) is read one ring step per
launch instead: the kernel runs `W` times per call, launch `s` (`s =
(epoch - 1) mod W`, marked `chunk.ring_step`) on block `c = (rank - s)
mod W` (marked as the loop's chunk index, for `chunk-insert-waits`). The
buffer's pointer argument moves by `(place - c)` blocks, `place` 0 at
step 0 (the rank's own block, the first of the three the rank holds) and
`1 + s mod 2` after (the slot), so that the kernel's own addresses land
there; the loop is clipped to `[max(lo, c * R), min(hi, (c + 1) * R))`
with `R` hidden as in an unrolled split. What the loop carries comes from
the program's state after step 0 and goes back to it before the last
step (a step whose block the loop does not read, a causal tile's blocks
past its queries, leaves the state alone), in a new ABI argument `synco_step_state` (`!tt.ptr<i8>`, each
program's state at its index in the grid times the bytes recorded on the
kernel as `chunk.step_state_bytes`); what follows the loop (the output's
normalisation and store) runs at the last step only. Refused with their
reason: a buffer no kernel loop walks, one walked by several loops (a
causal kernel in two stages), a loop inside another loop or a branch, a
loop that carries anything but numbers and tensors of numbers of one or
two dimensions (a pointer it advances), a store or atomic ahead of the loop (every launch
would run it), a buffer bound to a tensor descriptor, and two buffers of
one loop in other blocks.

Producers run the other way round: for `chunk.produce @tiles @P` whose
buffer `@P` is reduced by the plan (a reduce-scatter's partial), a
rank's own chunks come after the peers' chunks they wait for. With one
chunk per rank, tiles compute the blocks other ranks own first,
starting with rank `r+1`'s, and the rank's own block last
(`t' = (t + (rank + 1) * T_r) mod T_all`). With `n > 1` chunks per rank
the order interleaves, so that partials leave all through the kernel
instead of during its first part only: window `c` is chunk `c` of every
other rank's block (ranks `r+1`, `r+2`, ...), and the sequence is
window 0, window 1, own chunk 0, window 2, own chunk 1, ...,
window n-1, own chunk n-2, own chunk n-1: own chunk `c` runs after
every peer computed its chunk `c` (in the same slot of its own
sequence) and one more window. The tile index is found from the
kernel's stores of `@P`.

Producers of a one-shot all-reduce's partial keep the kernel's order:
every rank waits for the same tiles of its peers, so all ranks must run
them in the same order.

The op computing `t'` is marked `chunk.tile_index = "<buffer>"` for
`chunk-insert-waits` and `chunk-fuse-reductions`. A remark reports what
was done.

**The present path.** Where a program starts after every chunk its
loop reads has arrived (most programs of a launch, since the copies take
a fraction of the kernel's time), the split costs it pipeline restarts
and waits for nothing. So the split loop is built as the `then` branch
of an `scf.if` marked `chunk.present_path = "start_n"`, whose `else`
branch runs the kernel's loop without waits (its loops marked
`chunk.present_loop`; after the split in the kernel's code, where a
causal kernel runs a point faster than before it). The condition, "a
chunk is missing", is `true` here; `chunk-insert-waits` replaces it with
polls of the chunks' flags. The `else` branch runs the same iterations in the same order as the
split, so the output is the same bit for bit whichever branch a program
takes. Where the blocks come rank `r+1`'s first (a direct gather, the
template's ring) and the loop runs to a bound the kernel takes as an
argument (no causal band), that is one loop over `[lo, hi)` whose
variable `v` is read as `v + (s - lo)` for the first `n = ceil((hi - s) /
step)` iterations and as `v - n * step` after, from `s = clamp(r * n * R,
lo, hi)`: `[s, hi)` then `[lo, s)` in one pipeline. Its accumulators (the
2-D `f32` values it yields) then go through an opaque `mov.b32`: without
it, LLVM sinks the loop's last `wgmma` wait to where the branches join
and ptxas serialises every `wgmma` of the kernel (C7515). A loop that runs
to a bound the kernel computes (a causal band's end), or whose pointers
the kernel moves by its step (`chunk.moved_pointer`), gets two loops
instead, `[s, hi)` then `[lo, s)`: one loop ran slower for causal
kernels, and `chunk-carry-pointers` carries moved pointers in each. Zigzag half-blocks of `H` rows get four loops:
`[r H, W H)`, `[0, r H)`, `[(2W - r) H, hi)`, `[W H, (2W - r) H)`, each
clipped to `[lo, hi)`. A ring written out as `r -> r+1` (its blocks
backwards) gets no present path, nor do splits of more than 16 chunks
(the condition polls each chunk's flag) or chunks that also cut the
columns (passes/docs/present-path.md).

A split of up to `max-unrolled-chunks` chunks (8 by default) is marked
for Triton to unroll, its chunk's rows hidden from LLVM so that a causal
mask keeps comparing in 32 bits; larger splits stay rolled (code size).
Beside a present path, `present-split` says which: `auto` (the default)
unrolls a split whose loop runs to a bound the kernel takes as an
argument (the sequence's length, as without a causal mask) and rolls
one whose bound it computes (a causal band's); `rolled` and `unrolled`
do so for every split. On one H100 the rolled split ran the causal
present paths up to 2 points faster, and the unrolled one the present
paths without a mask up to 2 points faster (passes/docs/present-path.md,
"Which split goes beside it").

Options: `present-path` (`arrival`, the default, or `none`: the split
loop only); `max-unrolled-chunks` (0 rolls every split);
`present-split` (`auto`, `rolled`, `unrolled`).
Preconditions: `chunk-bind-kernel` ran (the rank is an ABI argument);
`A.shape[d]` and the block are multiples of `T`; a kernel either
consumes gathered buffers or produces reduced ones, not both.
Postconditions: every consumed buffer and every produced reduced buffer
has a marked tile index, or a tile loop split by chunk.

Example: a 2D grid whose `program_id(0)` is the row tile, 4 row tiles per
rank on 2 ranks. The pass makes it the slow axis of a linear program id
and rotates it to start at the rank's block, marking the result:

```mlir
%row = arith.remsi %sum, %c8 {chunk.tile_index = "A"}   // (slow + rank * 4) mod 8
// remark: tiles of @A: the row tile index (program_id 0) is now the slow
// axis of the grid and starts at this rank's block (4 row tiles per rank)
```
  }];
  let options = [
    Option<"presentPath", "present-path", "::synco::chunk::PresentPath",
           /*default=*/"::synco::chunk::PresentPath::arrival",
           "What a program runs when every chunk its split loop reads is present",
           [{::llvm::cl::values(
             clEnumValN(::synco::chunk::PresentPath::arrival, "arrival",
                        "the split's iterations in its order, in one "
                        "rotated loop (causal bands and moved pointers: "
                        "two; zigzag: four)"),
             clEnumValN(::synco::chunk::PresentPath::none, "none",
                        "no present path: the split loop only"))}]>,
    BoundedOption<"maxUnrolledChunks", "max-unrolled-chunks", /*default=*/"8",
                  0, 64,
           "The most chunks of a split loop that is unrolled; larger splits "
           "stay rolled (0: every split)">,
    Option<"presentSplit", "present-split", "::synco::chunk::PresentSplit",
           /*default=*/"::synco::chunk::PresentSplit::automatic",
           "Whether the split beside a present path unrolls (up to "
           "max-unrolled-chunks chunks)",
           [{::llvm::cl::values(
             clEnumValN(::synco::chunk::PresentSplit::automatic, "auto",
                        "unrolled where the loop runs to a kernel argument, "
                        "rolled where it runs to a bound it computes"),
             clEnumValN(::synco::chunk::PresentSplit::rolled, "rolled",
                        "rolled"),
             clEnumValN(::synco::chunk::PresentSplit::unrolled, "unrolled",
                        "unrolled"))}]>,
  ];
}

def ChunkInsertWaits : ChunkPass<"chunk-insert-waits"> {
  let summary = "Insert, before each tile's first load of a consumed buffer, a wait on that tile's chunk";
  let description = [{
For each consumed buffer, at the tile index marked by
`chunk-reorder-tiles`, inserts before the first loop or op of the tile
that loads the buffer:

```mlir
%chunk = (t' * T) / rows_per_chunk          // the chunk holding the rows
%owner = %chunk / chunks_per_rank           // (zigzag: h = %chunk / (n/2),
                                            //  h < W ? h : 2W - 1 - h)
scf.if (%owner != rank) {                   // own rows are in place
  chunk.wait %synco_flags[base + %chunk], %synco_epoch   // acquire, sys
}
```

so the tile spins (bounded, see `chunk.wait`) on one flag, before any of
its loads of the buffer, and reads the chunk with acquire ordering.

A consumer read per source (`chunk.consume ... source("src")`: every
tile reads every rank's block, one per iteration of the kernel's loop
over `src`, which `chunk-reorder-tiles` rotated to `src'`) waits inside
that loop instead, before the iteration's first load of the buffer, for
the chunk of block `src'` holding its tile (flag
`base + src' * chunks_per_rank + (t' * T) / rows_per_chunk`), unless
`src'` is the rank itself (its block is in place when the kernel
starts). Only the copy engine moves such chunks so far. Where two
buffers are read in the same loop and wait before the same op, and
every rank's copy stream sends all its chunks of one before any of the
other (the reduce-scatter from gathered operands: A's rows, then B's
column chunks), the other's wait implies the first's: the first's
transfers are marked `chunk.flag_implied_by` instead, and their copies
set no flag (`chunk-lower-transfers`), one spin and one stream
operation fewer per chunk.

A consumer whose blocks a kernel loop walks (split by chunk by
`chunk-reorder-tiles`; each loop, if several do) waits once per chunk,
before the loop clipped to chunk `c` (the chunk index of the loop over
chunks around it) and only if that loop reads any of it (`lower < upper`: a
causal bound that stops the loop early waits for no chunk it does not
read), for the chunk's flag `base + c`, unless the chunk is the rank's
own.

A split loop with a present path (`scf.if` marked `chunk.present_path`
by `chunk-reorder-tiles`) gets its condition: for each buffer the loop
reads and each chunk `c` another rank holds, `chunk.poll
%synco_flags[base + c], %synco_epoch` at the kernel's start; the
condition is that one of them has not arrived on some thread of the
program: each thread polls for itself, and one `chunk.agree` before the
branch ANDs "all arrived" over the program, so that its threads all take
one path (a flag set between two threads' reads would otherwise split
them, with barriers that do not match; the branch ORs in the thread's own
answer, which the agreement implies, so that LLVM still knows it on the
present path and keeps that path's loops as lean). The present (`else`) branch
starts with `chunk.acquire`. A program that
finds every peer chunk present reads them without a wait; one that does
not runs the split loop and waits chunk by chunk. The polls are one read
of each flag, in flight together, whatever the loop's bounds: a causal
program also needs the chunks it would not read to take the present
path.

Where the chunks also cut the buffer's last dimension (a re-shard's
`split(dim)`: a chunk per head of each source rank's tokens; the flag
layout's `cut`, `parts` flags per chunk), the wait is for the parts the
tile reads: its first column is where its address lands in a row (the
kernel's own offsets of the tile's base, plus a descriptor's last
offset, modulo the row length), and it waits for the flag
`base + chunk * parts + first / width` and, if the tile's last column
lies in the next part, for that one too. A tile wider than a part, a cut
of another dimension than the last, and a base the wait cannot use (a
host descriptor, an offset computed inside the walked loop) are refused.

A loop nest Triton would flatten (`tt.flatten` on a persistent kernel's
tile loop) loses the attribute, with a remark: once flattened, Triton's
software pipeliner issues the loads of a tile's first K steps while the
previous tile still runs, ahead of the tile's wait. Unflattened, the wait
stays in front of the pipelined K loop.

Options: none.
Preconditions: collectives expanded; `chunk-bind-kernel` and
`chunk-reorder-tiles` ran; chunks hold whole tiles.
Postconditions: every load of a consumed buffer is preceded, in its tile,
by a `chunk.wait` on that tile's chunk, or on a chunk whose flag comes
after it in the same rank's copy list (the runtime sets no flag before
every copy ahead of it in that list has landed).
  }];
}

def ChunkFuseReductions : ChunkPass<"chunk-fuse-reductions"> {
  let summary = "Fuse reduce-scatter and all-reduce (one-shot, two-shot) into the kernel tiles that produce the partials (SM or copy-engine transport, reduction in the tile epilogue)";
  let description = [{
all-reduce, into the GEMM tiles that produce its partials.

(The one-shot all-reduce is `fuse_all_reduce`: every tile pushes its
partial to every peer and adds the peers', in the kernel's own order on
every rank; with more than 2 ranks, peers' partials beyond the first
land in `@P_staging`, declared by `chunk-expand-collectives`. Its
precondition beyond the reduce-scatter's: the kernel runs the tiles of a
chunk together (a row of tiles with Triton's GROUP_M = 1 swizzle), since
each waits for the peers' same chunk; chunks of more than 128 tiles are
refused. The rest of this comment is the reduce-scatter.)

Input: a plan whose `chunk.reduce_scatter @P into @C ... backend(ldst)`
was expanded into reducing transfers that wait for
`chunk.produce @tiles @P dim(0) tile(T)`: every rank's kernel computes a
partial `P [M, N]`, and rank `r` must end with rows
`[r * M/W, (r + 1) * M/W)` of the sum of all partials in `C [M/W, N]`.

The pass rewrites the kernel's one store of `@P`, `tt.store %ptrs, %v`
(a 2-D `tt.descriptor_store` is first rewritten as that store through
pointers, `base + (m + i) * stride + (n + j)` masked to the descriptor's
extents: of a descriptor the kernel makes, or of a host descriptor,
whose base is then `synco_buffer_P` and whose extents and stride are the
arguments Triton passes after it),
where the tile's rows start at `t' * T` (`t'` is the tile index marked by
`chunk-reorder-tiles`, which already orders the tiles so that a rank's
own chunks come after the peers' chunks they wait for). With `g` the global chunk
holding the rows, its owner `o = g / chunks_per_rank`, `n` the tiles that
write one chunk and `flags[g]` the chunk's counter:

```mlir
scf.if (%o == rank) {
  // Own rows: the peers' partials of this chunk are ready...
  chunk.wait %flags[g], %epoch count((W - 1) * n)
  // ...they are added in rank order in f32 (the tile's own partial %v in
  // place of rank's), rounded once, and stored into @C...
  %sum = x_0 + x_1 + ... + x_{W-1}, x_s = s == rank ? %v : load(partial of s)
  tt.store %c_ptrs, truncf(%sum)
  // ...and every peer may overwrite its partial (next epoch).
  chunk.arrive peer_ptr(%flags, s)[g]     for every s != rank
} else {
  // A partial for rank o: wait until o consumed the previous epoch's...
  chunk.wait %flags[g], %epoch - 1 count(n)
  tt.store (partial of rank for o), %v
  chunk.arrive peer_ptr(%flags, o)[g]      // ...then tell o it is ready
}
```

Where partials travel is the option `mode`, or the copy engine:

* `push` (default): a tile stores its partial for rank `o` straight into
  `o`'s `@P` over NVLink, in the block of rows of the source rank (rank
  `o` never stores its own partial of other ranks' rows there: it pushes
  them too), so the bytes move while the GEMM still computes other
  tiles, and owners read their peers' partials from local memory;
* `pull`: a tile stores its partial locally, at its own rows; owners
  load it from the producer's `@P` over NVLink in their epilogue;
* the reduce-scatter's `backend(copy_engine)`: a tile stores its partial
  in place and counts it on its own rank; the host's side stream copies
  each finished chunk into the owner's `@P_staging` (declared by
  `chunk-expand-collectives`; the owner's own tiles still write the
  other blocks of its `@P`) and sets the owner's flag for that source
  (see `record_copies`, and `CeFlags` for the flags); no program waits
  for remote stores, and none waits for the previous epoch's chunks to
  be moved or read: the runtime orders that on its streams (a rank's
  copies start after their owners' previous launch, its kernel after
  its previous launch's copies), so the tiles skip the `consumed`,
  `copied` and `sent` flags of the pseudo-code above;
* `stage` (a reduce-scatter or two-shot all-reduce on `ldst`): staged
  exactly as on the copy engine (this pass declares `@P_staging` and
  its kernel argument, and marks the plan `chunk.staged` so that its
  flag layout is the copy engine's), but the copies are run by SM copy
  programs of the kernel itself, which `chunk-lower-transfers` adds
  (`lower_transfers::sm_copies::lower_reduction_copies`): no per-chunk cost on the host's
  stream, at the price of the SMs the copy programs hold.

A reduce-scatter or two-shot all-reduce on `tma` is always staged, as
with `mode=stage` whatever the option says: bulk copies move partials
only from the copy programs (`chunk-lower-transfers` makes their copies
bulk tensor copies). A one-shot all-reduce on `tma` is refused: it
stages nothing in its owners' buffers.

Every tile waits only for its own chunk, and the sum is the same bits on
every run: partials are added in rank order whatever order they arrive
in. Own rows of `@P` are never written. `@C` is a kernel argument: the
user's if `@C` is bound, else the ABI's `synco_buffer_C`.

A two-shot all-reduce fuses as its reduce-scatter whose owners also
send each sum to every peer's `@C`: with `ldst`, the owner's tiles store
it there and count it on the peer; with `copy_engine`, they count it
locally and the side stream copies each finished chunk (`record_copies`).
The launch ends once the peers' sums are in: with SM stores the kernel
waits for them itself (the last owner tile of each chunk, see
`wait_for_peers_sums`); with copy programs the runtime waits for their
flags, recorded in the plan's `chunk.completion`; with the copy engine
for the peers' side streams (those copies set no flag).

Options: `mode=push|pull|stage` (see above; reductions on `ldst` only;
`tma` is staged).
Refused (see `check_layout`): reducing transfers, as a plan written out
by hand may have them, that do not move whole chunks of one size into
the rows where the fused code puts each sum (a rank's own block, or
every row for a one-shot all-reduce), or that carry no collective's
`group`.
Preconditions: collectives expanded (reductions with backend `ldst`; a
reduce-scatter or two-shot all-reduce with `tma` or `copy_engine`, whose staging
buffer `chunk-expand-collectives` declared), `chunk-bind-kernel` and
`chunk-reorder-tiles` ran; the kernel stores `@P` once per tile, a 2D
tile of `T` rows, at the addresses of a row-major `[M, N]` array (what
the plan declares); `@C` is `[M/W, N]` (reduce-scatter) or `[M, N]`
(all-reduce); `@P`, `@C` and the staging buffer start at multiples of 16
elements (the runtime's symmetric buffers are 512-byte aligned).
Postconditions: the fused transfers are marked `chunk.fused` (for
`chunk-lower-transfers`, which drops them); the flag array holds the
counters and flags of every chunk of `@P` (see `plan::flag_layout` and
`CeFlags`); the plan records the side stream's copies
(`chunk.reduction_copies`) and the launch's completion waits
(`chunk.completion`) where there are any.
  }];
  let options = [
    Option<"mode", "mode", "::synco::chunk::ReductionMode",
           /*default=*/"::synco::chunk::ReductionMode::push",
           "How partials reach their owner on ldst",
           [{::llvm::cl::values(
             clEnumValN(::synco::chunk::ReductionMode::push, "push",
                        "tiles store partials into their owner's memory"),
             clEnumValN(::synco::chunk::ReductionMode::pull, "pull",
                        "owners load partials from the producers"),
             clEnumValN(::synco::chunk::ReductionMode::stage, "stage",
                        "tiles store partials locally; the kernel's SM copy "
                        "programs move each finished chunk to its owner's "
                        "staging buffer"))}]>,
  ];
}

def ChunkFuseGathers : ChunkPass<"chunk-fuse-gathers"> {
  let summary = "Have the kernel's tiles count each chunk of an output that an all-gather sends, and the copy engine send each finished chunk to every peer";
  let description = [{
chunk by chunk, as soon as the tiles of a chunk are done.

Input: a plan whose `chunk.produce @tiles @C dim(p) tile(T)` buffer is
moved by an all-gather (`chunk.all_gather @C dim(0) ...`, backend
`copy_engine`), expanded into transfers that wait for the producer
(`after [@tiles]`, see `chunk-expand-collectives`). Rank `r`'s kernel
computes block `r` of `@C` (its `M/W` rows); every rank must end with
all of `@C`. This is how an all-reduce computed from gathered operands
ends: each rank computes its rows of the sum, then gathers the others'.

The pass rewrites the kernel's one store of `@C`, `tt.store %ptrs, %v`
(a tile of the kernel's own `[M/W, N]` rows; a store through a tensor
descriptor is first rewritten as a masked store through pointers, as
`chunk-fuse-reductions` does, so that the tile's count orders it), where
`t` is the tile
index along `p` (found as `chunk-reorder-tiles` finds it, or named by
`index("...")`). With `c = t * T / S` the tile's chunk (`S` the chunk's
extent along `p`) and `g = r * n + c` its global index:

```mlir
// Into rank r's block of @C: rows r * M/W and on.
tt.store %ptrs + r * (M/W) * N, %v
// One more tile of chunk g (CTA barrier, release at system scope).
chunk.arrive %flags[produced(g)]
```

and records, per rank, the side stream's copies (`chunk.reduction_copies`,
in the kernel's chunk order): once `produced(g)` reaches `epoch * n_t`
(`n_t` tiles per chunk), chunk `g` of the rank's block goes to the same
place in every peer's `@C` (a 2D copy when chunks are column ranges,
`split(1)`). The copies set no flag: no kernel waits for them, and the
runtime's streams order the rest (`synco_manifest::FusedPlan::
copies_ordered_by_streams`, `sources_ordered_by_streams`): a launch ends
on rank `r` once every other rank's side stream has made its copies, the
copies into `r` start after `r`'s previous launch, and a rank's next
kernel, whose tiles overwrite the chunks, starts after its copies. The
counters are the range's flags (`plan::FlagKind::Output`: `produced(g)`
is flag `base + g`). The transfers are marked `chunk.fused`.

A re-sharding all-to-all of the output, `chunk.all_to_all @X into @Y
dim(0) chunks(n) to(1)` (attention's output by heads, `[S, H/W*D]`, back
by tokens, `[S/W, H*D]`), is fused the same way: the kernel writes all of
`@X` (its store keeps its addresses), chunk `g = t * T / (S/(W n))` is
chunk `g mod n` of rank `g / n`'s rows, counted at `produced(g)`, and the
side stream copies each, once counted, into rank `d`'s `@Y` at the
sender's columns and the chunk's rows (a 2D copy), the peers' first,
the rank's own last. Tiles that produce columns (a GEMM's, `pid_n`)
re-sharded `dim(1) to(0)` the same way: each chunk of rank `d`'s
columns, counted, goes to rank `d`'s `@Y` at the sender's rows and the
chunk's columns. (`chunk-expand-collectives` cuts a produced buffer's
re-shard along `dim`, the order its tiles finish it in.) Other chunkings
(chunks that cut the other dimension, as a hand-written plan may) are
refused. On `ldst` or `tma` the tiles count the same way, but nothing is
recorded for the side stream: the transfers stay, for
`chunk-lower-transfers`, whose copy programs on each destination pull
each chunk once the source rank's counter has all its tiles; the flag
layout records that count (`arrivals_per_chunk`), and the kernel gets
`@Y` as an argument where none carries it.

No tile waits for another rank: the copy engine (or a destination's
copy programs) reads what the tiles stored, so the result is the
kernel's own bits on every rank.

Options: none.
Preconditions: collectives expanded, `chunk-bind-kernel` ran; `@C` is a
2D row-major `[M, N]` buffer bound to the kernel argument that the
kernel stores once per tile, at the addresses of its own `[M/W, N]`
rows with row pitch `N`; the ranks' blocks are rows (`dim(0)`); chunks
hold whole tiles along `p`; backend `copy_engine` (a re-sharding
all-to-all: also `ldst` or `tma`, one backend for all its chunks); no
reduction of the same plan records side-stream copies.
Refused (`check_layout`): gather transfers, as a plan written out by
hand may have them, that do not send one chunk of their source rank's
own block to the same place on the peer.
Postconditions: the gather's transfers are marked `chunk.fused`; the plan
records `chunk.reduction_copies`.
  }];
}

def ChunkTraceTiles : ChunkPass<"chunk-trace-tiles"> {
  let summary = "Record when every tile of the fused kernel starts, waits, publishes and ends (%globaltimer) in a trace buffer";
  let description = [{
starts, waits, publishes and ends.

Declares the plan's trace buffer and instruments the kernel with
`chunk.trace` ops (see the op for the record layout):

```mlir
chunk.buffer @synco_trace : !chunk.buffer<16384x8xi64> {chunk.staging, chunk.trace}
...
%t = ... {chunk.tile_index = "P"}              // the tile index
%record = pid * R + i                          // i: the tile's iteration
chunk.trace tile_begin %trace[%record], %t records(16384)
...
chunk.trace wait_begin %trace[%record], %t records(16384)
chunk.wait %flags[%c], %epoch
chunk.trace wait_end %trace[%record], %t records(16384)
...
chunk.arrive %flags[%c]
chunk.trace signal %trace[%record], %t records(16384)
...
chunk.trace tile_end %trace[%record], %t records(16384)
```

The tile index is the first op `chunk-reorder-tiles` marked (a kernel
that consumes and produces chunks has two). `pid` is the program's
linear id over the grid; `R` is 1 where the tile
index is computed once per program (a kernel of one tile per program),
else `tiles-per-program` and `i` the iteration of the loop that computes
it (a persistent kernel's tile loop); a tile past `R` is not recorded.
Waits and arrivals inside another loop of the tile (not the tile loop)
are not bracketed: a wait per K step would record only the last one.
The loop over sources (`chunk.consume ... source(...)`) is the
exception: its waits, one per peer's block, are bracketed, and the
record keeps the first one's begin and the last one's end.
The trace buffer is kernel scratch like a staging buffer: the runtime
allocates it (`synco_buffer_synco_trace`, the kernel's last argument),
`Node::clear_trace` zeroes it once, `Node::read_trace` decodes it: each
record holds the last launch that ran its tile.

Each event is one thread's store, no barrier and no atomic: the cost is
a few instructions per event (`wait_begin` also reads its word, to keep
the first of several waits).

Options: `records` (trace records, default 16384: 1 MiB);
`tiles-per-program` (default 64).
Preconditions: `chunk-bind-kernel` and `chunk-reorder-tiles` ran (the
tile index is marked); run after `chunk-insert-waits` and
`chunk-fuse-reductions` (the waits and arrivals to bracket) and before
`chunk-lower-transfers` (which lists the plan's buffers in the launch
manifest) and `chunk-to-triton`.
Postconditions: the plan has `@synco_trace`; the kernel takes it and
records every tile.
  }];
  let options = [
    BoundedOption<"records", "records", /*default=*/"16384", 1, 2147483647,
                  "Trace records (64 bytes each); tiles past the last are "
                  "not recorded">,
    BoundedOption<"tilesPerProgram", "tiles-per-program", /*default=*/"64",
                  1, 2147483647,
                  "Records per program of a persistent kernel (a tile loop); "
                  "later tiles are not recorded">,
  ];
}

def ChunkLowerTransfers : ChunkPass<"chunk-lower-transfers"> {
  let summary = "Lower chunk.transfer ops: copy-engine transfers become the host transfer schedule";
  let description = [{
Backend `copy_engine`: the copies run on the host's side stream, so the
pass records, for every rank, the ordered list of copies it drives (the
host transfer schedule) in the module attribute `chunk.host_schedule`
(the launch manifest's typed schedule, `synco_manifest::FusedPlan`, as a
dictionary; `synco compile` moves it into the launch manifest) and erases
the transfers. Each copy names its source and destination rank and buffer,
element offsets, a 2D shape (`rows` x `row_elems`, with row pitches in
elements) and the flag the side stream sets to the epoch once the copy is
done (no `flag`: none). Local transfers whose source is their destination move nothing and
are dropped (their rows are in place before the launch); other local
transfers (an all-to-all's own block) are `before_kernel`: the runtime
makes them on the compute stream right before the kernel (the driver may
run a copy within a GPU on SMs, which tiles waiting for it would hold),
with no flag. The plan's records (`chunk.flag_layout`,
`chunk.reduction_copies`, `chunk.completion`) move into the schedule.

```mlir
module attributes {chunk.host_schedule = {
  plan = "ag_gemm", world_size = 2 : i64, num_flags = 8 : i64,
  buffers = [
    {name = "A", arg = 0 : i64, shape = array<i64: 8192, 4096>, element = "bf16",
     element_bytes = 2 : i64, staging = false, trace = false}
  ],
  chunks = [
    {buffer = "A", kind = "arrival", dim = 0 : i64, rows_per_chunk = 1024 : i64,
     chunks_per_rank = 4 : i64, flag_base = 0 : i64}
  ],
  copies = [
    [{order = 4 : i64, src_rank = 1 : i64, dst_rank = 0 : i64, src_buffer = "A",
      dst_buffer = "A", src_offset = 16777216 : i64, dst_offset = 16777216 : i64,
      rows = 1024 : i64, row_elems = 4096 : i64, src_pitch = 4096 : i64,
      dst_pitch = 4096 : i64, flag = 4 : i64, before_kernel = false}, ...
    ], ...
  ], ...}} {
```

(MLIR prints the keys in alphabetical order.)

`copies[r]` is rank `r`'s list, in schedule order.

A buffer kept in ring slots (`chunk.slots = 2`): the schedule's buffer
gets `held_rows`, the rows each rank holds (its own block and two slots,
3 blocks of dimension 0), and the schedule `ring_steps` (`steps` = `W`
launches per call, and the `state_bytes` per program that
`chunk-reorder-tiles` recorded on the kernel as `chunk.step_state_bytes`).
Each copy reads and writes where the ranks hold the block (its own at
rows 0, then the slot of the step it is read at), and carries `step`,
the launch that makes it: the one before its destination reads the
block, which sets the flag to the next launch's epoch. Refused with the
ranks named: a transfer into a slotted buffer of part of a block or into
another place than its own, one from another rank than the neighbour
that read the block the step before (any gather but the template's ring,
whose ranks receive from `r + 1`),
a transfer into a buffer without slots beside a slotted one (no launch
would make it), and a slotted buffer whose kernel `chunk-reorder-tiles`
did not make run one step per launch. On `ldst` the same copies are the copy programs':
each runs only in the launch of its step (`(epoch - 1) mod W`), between
the same places, after the block's arrival flag on the neighbour, and
sets its own flag to the next launch's epoch.

Backend `ldst`: the chunks are copied by SM programs of the fused kernel
itself (see `lower_transfers::sm_copies`): the kernel's 1D grid gets
`copy-programs` extra programs in front, recorded as `copy_programs` in
the schedule (the runtime launches them), and the flag array gets one
completion counter per flag after the flags. A 2D grid gets an extra
plane of copy programs instead (`copy_plane` in the schedule; grid axis
2, index 0, in front of the kernel's own programs). A chunk is copied
from the source rank's copy of its buffer (another buffer than the
destination's, bound or not, for an all-to-all) in blocks of up to 32
KiB; a chunk of rows that are not contiguous in one of the buffers (a
re-sharding all-to-all's column blocks) is copied by its row-major
elements, each block's element `e` at row `e / row_elems`. Both sides'
rows must hold as many elements; the copy engine's copies take such
chunks as 2D copies (a side contiguous in its buffer is cut into the
other's rows).

A reduction staged on SMs (`chunk-fuse-reductions{mode=stage}` marked
the plan `chunk.staged`) gets `copy-programs` copy programs the same
way, which run the reduction copies the copy engine would
(`lower_transfers::sm_copies::lower_reduction_copies`); the schedule's
`reduction_copies` is then empty. One kernel has one set of copy
programs: an `ldst` transfer beside a staged reduction is refused.

A persistent kernel whose tile loop strides by a constant (Triton's
`NUM_SMS`) records it as `persistent_programs`: the runtime launches it
with exactly that many programs (besides copy programs) or refuses. If
it also fuses a reduction (its programs wait for other programs' tiles)
the schedule says `co_resident`: the runtime refuses a launch whose
programs the GPU cannot hold all at once.

A transfer of a produced all-to-all that `chunk-fuse-gathers` left to
the copy programs (`ldst`, `tma`; its `after` names the tiles) waits, on
every copy program, for the source rank's counter of the chunk to count
all its tiles (through the heap bases), then pulls it; the rank's own
block is copied last. The schedule says `copy_programs_forward`.

A transfer that forwards rows another transfer brought (its `after`
names transfers: a ring's later steps) waits for the arrival flag of
the chunk it reads, on the rank it reads from: on the copy engine the
copy records it as `after_flag` (the driving stream waits for that
rank's flag to reach the epoch before the copy); on `ldst` every copy
program spins on the neighbour's flag (through the heap bases) before
copying, and the schedule says `copy_programs_forward` (copy programs
wait for other ranks' copy programs: ranks sharing a GPU must have all
their programs resident, which the runtime checks). The rows must be a
consumed buffer's chunks (they have arrival flags); otherwise refused.

Backend `tma`: the same copy programs, counters and flags as `ldst`, but
each program moves its blocks of a chunk with Hopper bulk tensor copies
(`lower_transfers::sm_copies::tma`): one device-side tensor descriptor
per buffer and source rank, of the whole buffer as rows of the chunks'
pitch, made at the first chunk that needs it (`tt.make_tensor_descriptor`,
in Triton's global scratch, 128 bytes each; the source's through the peer
mapping; a chunk outside such rows gets descriptors of its own box), then
`tt.descriptor_load` and `tt.descriptor_store` of blocks of up to 16 KiB
(rows of up to 128 bytes) at the chunk's place, in a loop Triton
pipelines in 3 stages (`tt.num_stages`: two blocks load while one is
stored; 48 KiB of shared memory); a proxy fence before each chunk's
copies, and a wait for the bulk stores to complete before the program
counts itself done. A contiguous chunk is copied as rows of 128 bytes. Refused, at the
transfer: rows narrower than 16 bytes or that do not split into blocks of
a multiple of 16 bytes, pitches that are not multiples of 16 bytes, a
chunk that starts on some rank at an address that is not. A staged
reduction's copies (below) are bulk copies when the buffer's transfers
are on `tma`.

Options:
* `copy-programs=C` (default 16): programs that copy `ldst` and `tma` chunks (or
  a staged reduction's); `auto`: the cost model's count
  (`synco_cost_model::choose_copy_programs`): the fewest programs whose
  predicted copy time of the bytes a rank's programs move per launch is
  within 0.5% of the best, of 1 up to a quarter of the GPU's SMs and at
  most the blocks of the largest chunk. A copy program holds its SM only
  while it copies: below the link's rate, more programs cost the same SM
  time and finish sooner; beyond it they only take SMs from the tiles. A
  remark gives the choice and the predicted times. The per-program rate
  is measured for `ldst` (`Machine::sm_copy_gbps`); `tma`'s, until
  measured, is taken to be the same, and the remark says so;
* `calibration=FILE`: the cost model's machine constants, as for
  `chunk-select-chunk-size`.

Refused, at the transfer or the consumer: transfers into a consumed
buffer that do not set each of its arrival flags exactly once per rank
(see [`check_arrival_flags`]), as a plan written out by hand can.

Preconditions: collectives expanded; plans verify.
Postconditions: the module carries the schedule; plans keep only their
buffers (no transfers, consumers or producers).
  }];
  let options = [
    CountOrAutoOption<"copyPrograms", "copy-programs", /*default=*/"\"16\"",
           1, 2147483647, "Programs of the fused kernel that copy ldst and tma chunks (or "
           "a staged reduction's): a count in 1..2147483647, or auto (the "
           "cost model's choice, in a remark)">,
    Option<"calibration", "calibration", "std::string", /*default=*/"",
           "JSON file with the cost model's machine constants for "
           "copy-programs=auto (empty: the built-in H200 NVLink constants)">,
  ];
}

def ChunkCarryPointers : ChunkPass<"chunk-carry-pointers"> {
  let summary = "Carry again, in each loop, the pointers the kernel moved by the loop's step (chunk-bind-kernel made them functions of the loop variable)";
  let description = [{
A kernel written in the style of Triton's early tutorials moves its
pointers at the end of each iteration (`k_ptrs += BLOCK_N * stride_kn`).
`chunk-bind-kernel` rewrites such a pointer, in a loop that walks a
consumed buffer, to `p0 + v * x` of the loop's variable `v`, so that the
loop can be split by chunk and walked out of order, and marks the
`tt.addptr` it writes `chunk.moved_pointer`. Once the loops are split,
this pass gives each loop that holds a marked pointer the kernel's own
addressing back: the iteration value the kernel moved starts at
`p0 + lower * x` for that loop's lower bound (its chunk's first row, or
the present path's) and moves by `step * x`, as in the local kernel.
A chunk's loop then reads the same addresses as before, through the
pointer the kernel carried rather than one computed from the variable
(on 1 x H100 the local moved kernel ran 0.4% to 3.3% faster than the
same kernel written with `start_n * stride`, and the fused moved kernel
went from +5.4%..+10.8% over its local kernel to -0.9%..+2.1%:
passes/docs/carried-pointers.md).

A marked pointer whose loop no longer carries the moved value (the
iteration value was removed, say by `canonicalize` before this pass)
stays at the variable: the same addresses. The marker is removed either
way (`chunk-to-triton` also drops any left).

Options: none.
Preconditions: none (a module without marked pointers is unchanged).
Postconditions: no `chunk.moved_pointer` remains.

Example: in a loop clipped to a chunk, `scf.for %v = %first to %end`,
the marked `%p = tt.addptr %k0, splat(%v * %stride)` becomes the loop's
iteration value, started at `tt.addptr %k0, splat(%first * %stride)`;
the value it yields, `%p + splat(64 * %stride)`, stays.
  }];
}

def ChunkToTriton : ChunkPass<"chunk-to-triton"> {
  let summary = "Lower chunk.rank/world_size/peer_ptr/wait/poll/acquire/signal/arrive to tt/arith/scf ops and drop plans";
  let description = [{
Kernel-level ops are rewritten against the kernel's ABI arguments (see
[`crate::abi`]):

* `chunk.rank`, `chunk.world_size` -> `synco_rank`, `synco_world_size`;
* `chunk.peer_ptr %p, %peer` -> `int_to_ptr(ptr_to_int(p) -
  heap_bases[rank] + heap_bases[peer])`, built as a `tt.addptr` by that
  difference in elements (assumed a multiple of 16: heap bases are
  aligned) so that loads through it stay vectorised; element-wise for a
  tensor of pointers;
* `chunk.wait %flags[%c], %epoch count(n)` -> a bounded spin, one PTX
  loop in a `tt.elementwise_inline_asm`: read the flag with
  `ld.<sem>.<scope>` until it reaches `epoch * n`, an error is recorded,
  or `timeout_ns` have passed (`%globaltimer`), sleeping 64 ns
  (`nanosleep`) between reads; if the flag fell short, claim the error
  buffer with an acq_rel/sys compare-and-swap and record
  `[1, rank, c, epoch]`. Once an error is recorded, later waits fall
  through, so the kernel ends and the host reports it. In a kernel that
  reads through tensor descriptors (`tt.descriptor_load`,
  `tt.descriptor_gather`), the spin ends with `fence.proxy.async.global`:
  their bulk tensor copies read in the async proxy what the wait acquired
  in the generic one;
* `chunk.signal %flags[%c], %epoch` -> CTA barrier (`bar.sync 0`),
  then one thread's atomic exchange of the epoch into the flag with the
  op's semantic and scope (release: its fence covers the whole
  program's writes, which the barrier ordered before it);
* `chunk.arrive %flags[%c]` -> the same barrier, then one thread's
  atomic add of 1 with the op's semantic and scope;
* `chunk.poll %flags[%c], %epoch count(n)` -> one
  `ld.relaxed.<scope>.global.u32` of the flag in a
  `tt.elementwise_inline_asm` (not pure: never hoisted or merged), and
  `>= epoch * n`;
* `chunk.agree %p` -> `bar.red.and.pred` on barrier 0 in inline PTX
  (as `__syncthreads_and`): every thread's predicate in, their AND out,
  the same on every thread;
* `chunk.acquire` -> `fence.acquire.<scope>` in inline PTX (PTX 8.6:
  on sm_90 an L1 invalidation, as after an acquire load; an acq_rel fence
  would also wait for every access in flight), followed, in
  a kernel that reads through tensor descriptors, by
  `fence.proxy.async.global` (as after a wait);
* `chunk.trace <event> %trace[%record], %tile` -> one asm block in which
  thread 0 stores `%globaltimer` into the record's word for the event
  (`wait_begin` only if the word is still 0); `tile_begin` writes the
  whole record (the other events' words cleared, the tile, `%smid` and
  `%ctaid`); records at or beyond `records` are skipped.

Plans are erased (their schedule was recorded by
`chunk-lower-transfers`), as are Synco's marker attributes.

A loop Triton flattens (`tt.flatten`, a persistent kernel's tile loop)
whose body now ends in an op with regions (the fused epilogue's
`scf.if`) gets a side-effecting no-op (`mov.u32 $0, 0;`) appended to its
body: Triton 3.6's `tritongpu-fuse-nested-loops` takes every value used
inside the epilogue's last op for an epilogue output and builds an
invalid `scf.if` (triton-lang/triton PR 11863, open); the no-op keeps
those uses inside the epilogue.

Options: none.
Preconditions: the kernel was bound (`chunk-bind-kernel`); no
`chunk.transfer` or collective remains.
Postconditions: no chunk op remains; the module is plain TTIR.

Example: `chunk.wait %flags[%c], %epoch` becomes a bounded spin in
inline PTX (`ld.acquire.sys.global.u32` of the flag until it reaches the
epoch, `%globaltimer` against `timeout_ns`, the error buffer written on
timeout); `chunk.arrive` a barrier, then a release add at `sys` scope;
the plan is erased.
  }];
}

def SyncoKernelSummary : ChunkPass<"synco-kernel-summary"> {
  let summary = "Emit a remark describing each Triton kernel (tt.func)";
  let description = [{
Emits one remark per `tt.func`, at the function, listing what the chunk
passes look at when they bind a plan to a kernel: the number of
arguments, the grid axes it reads with `tt.get_program_id`, and how many
loads, stores, dots and loops it has. The IR is not changed.

```text
synco-opt kernel.ttir --pass-pipeline='builtin.module(synco-kernel-summary)'
```

Options: none.
Preconditions: the module holds `tt.func` ops in generic form (Triton's
dialect is not registered in synco-opt).
Postconditions: the IR is unchanged.
  }];
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// A pass option that a pipeline takes under a name of its own (by default
/// the pass's) and hands to the pass that declares it. The pipeline's option
/// has the pass option's type, default, values and description.
class ForwardedOption<PassBase target, string targetArg,
                      string arg = targetArg> {
  // The pass that declares the option.
  PassBase pass = target;
  // The option's argument in that pass.
  string passArgument = targetArg;
  // The option's argument in the pipeline.
  string argument = arg;
}

/// The options of `synco-fuse` (ChunkPipelines.cpp) that go to its passes.
/// `build.rs` turns them into the pipeline's options (besides `trace`, its
/// own) and into the pass options of its pass list.
def SyncoFuseForwards {
  list<ForwardedOption> options = [
    ForwardedOption<ChunkFuseReductions, "mode", "reduction-mode">,
    ForwardedOption<ChunkLowerTransfers, "copy-programs">,
    ForwardedOption<ChunkSelectBackend, "copy-engine-min-bytes">,
    ForwardedOption<ChunkReorderTiles, "present-path">,
    ForwardedOption<ChunkReorderTiles, "max-unrolled-chunks">,
    ForwardedOption<ChunkReorderTiles, "present-split">,
  ];
}

#endif // SYNCO_CHUNK_PASSES
