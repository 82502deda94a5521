//===- ChunkDialect.td - The chunk dialect -----------------*- tablegen -*-===//
//
// Part of Synco. The dialect definition shared by the type, attribute and op
// definitions.
//
//===----------------------------------------------------------------------===//

#ifndef SYNCO_CHUNK_DIALECT
#define SYNCO_CHUNK_DIALECT

include "mlir/IR/OpBase.td"

def Chunk_Dialect : Dialect {
  let name = "chunk";
  let cppNamespace = "::synco::chunk";
  let summary = "Communication chunks fused into GPU kernels";
  let description = [{
    The `chunk` dialect describes multi-GPU communication as *chunks*: boxes
    of a symmetric buffer that move between ranks, each with a transfer
    backend, a place in the schedule and the chunks or compute tiles it waits
    for. A Synco compiler fuses such a plan into a local Triton kernel so that
    every tile waits only for the chunk it reads.

    A plan is SPMD: one description for every rank. Offsets and ranks inside
    a plan are affine maps of one dimension, the executing rank `r`, so

    ```mlir
    chunk.plan @ag world_size(2) {
      chunk.buffer @A : !chunk.buffer<4096x8192xbf16> bind(0)
      chunk.all_gather @A dim(0) chunks(4) backend(copy_engine)
    }
    ```

    describes an all-gather of `A` along its rows on two GPUs, four chunks per
    rank, moved by the copy engine. `chunk-expand-collectives` turns
    collectives into explicit `chunk.transfer` ops, which the plan verifier
    checks for bounds, matching sizes, exact coverage and acyclic
    dependencies.

    A plan may also be written as transfers. The lowering passes then take
    them as written where they can (rank maps such as `(r - 1) mod W`
    included) and refuse, at the transfer, what they would not carry out as
    written: transfers into a consumed buffer that do not move one whole
    chunk each, or leave a chunk that tiles wait for unwritten, and `ldst`
    transfers written from the source's side (`chunk-lower-transfers`);
    reducing transfers, or gathers of what tiles produce, laid out other
    than a collective's expansion (`chunk-fuse-reductions`,
    `chunk-fuse-gathers`).

    The dialect also has the kernel-level synchronisation ops that lowering
    inserts into the fused Triton kernel (`chunk.rank`, `chunk.peer_ptr`,
    `chunk.wait`, `chunk.signal`); `chunk-to-triton` rewrites them into `tt`
    atomics and inline PTX.

    What one pass tells the next, beyond ops, is one of these discardable
    attributes, each verified by the dialect (any other `chunk.` attribute is
    refused):

    | attribute | on | value | written by |
    |---|---|---|---|
    | `chunk.staging` | `chunk.buffer` | unit: scratch the runtime allocates | `chunk-expand-collectives`, `chunk-fuse-reductions`, `chunk-trace-tiles` |
    | `chunk.trace` | `chunk.buffer` | unit: the tiles' trace records | `chunk-trace-tiles` |
    | `chunk.slots` | `chunk.buffer` | integer: the slots a ring keeps the buffer's gathered blocks in (the kernel runs once per ring step) | `chunk-expand-collectives` |
    | `chunk.staged` | `chunk.plan` | array of buffer names: reductions staged on SM copy programs | `chunk-fuse-reductions{mode=stage}` |
    | `chunk.fused` | `chunk.transfer` | unit: lowered into the kernel | `chunk-fuse-reductions`, `chunk-fuse-gathers` |
    | `chunk.flag_implied_by` | `chunk.transfer` | string: the buffer whose flag implies its arrival | `chunk-insert-waits` |
    | `chunk.tile_index` | a kernel op | string: the buffer whose tile index the op's result is | `chunk-reorder-tiles` |
    | `chunk.source_index` | a kernel op | string: the buffer whose source-rank index it is | `chunk-reorder-tiles` |
    | `chunk.chunk_index` | a kernel op | string: the tile loop (its variable's name) whose chunk index the op's result is | `chunk-reorder-tiles` |
    | `chunk.chunk_loop` | `scf.for` | string: the tile loop's variable, once the loop is clipped to one chunk | `chunk-reorder-tiles` |
    | `chunk.chunk_rows`, `chunk.chunk_count` | `scf.for` | integer: rows per chunk and chunks of the split tile loop | `chunk-reorder-tiles` |
    | `chunk.present_path` | `scf.if` | string: the tile loop (its variable's name) whose chunks the branch's condition finds missing: then the loop runs split by chunk, else without waits | `chunk-reorder-tiles` (condition: `chunk-insert-waits`) |
    | `chunk.present_loop` | `scf.for` | string: the tile loop's variable, in a loop of the present path (not split, not waited on) | `chunk-reorder-tiles` |
    | `chunk.moved_pointer` | `tt.addptr` | unit: a pointer the kernel's loop moved by its step times a stride, now `p0 + v * x` of the loop's variable | `chunk-bind-kernel` (read by `chunk-carry-pointers`) |
    | `chunk.ring_step` | a kernel op | unit: its result is the ring step a launch runs, `(epoch - 1) mod W` | `chunk-reorder-tiles` |
    | `chunk.step_state_bytes` | `tt.func` | integer: the state each program keeps between ring steps' launches | `chunk-reorder-tiles` |
    | `chunk.abi_first_arg` | `tt.func` | integer: index of the first ABI argument | `chunk-bind-kernel` |
    | `chunk.abi_buffers` | `tt.func` | array of buffer names: the buffer arguments after the ABI's | `chunk-bind-kernel` and the passes that declare buffers |
    | `chunk.flag_layout` | `chunk.plan` | array of dictionaries: where each buffer's chunk flags and counters are | the first pass that needs it; `chunk-fuse-reductions{mode=stage}` again |
    | `chunk.reduction_copies` | `chunk.plan` | array (per rank) of arrays of dictionaries: the side stream's copies of finished chunks | `chunk-fuse-reductions`, `chunk-fuse-gathers` |
    | `chunk.completion` | `chunk.plan` | array (per rank) of arrays of `array<i64: flag, count>`: what the launch waits for after the kernel | `chunk-fuse-reductions` |
    | `chunk.scalar_args` | `chunk.plan` | array of `{arg, value, buffer, dim}`: kernel arguments (strides of bound buffers) the launch must pass as `value` | `chunk-bind-kernel` |
    | `chunk.index_bounds` | `chunk.plan` | array of `{buffer, what, value, lowest, highest}`: values the kernel computes from program ids and arguments (a head's offset, a loop's last row) each launch must keep within `lowest..=highest` | `chunk-bind-kernel` |
    | `chunk.host_schedule` | `builtin.module` | dictionary: the launch manifest's schedule (`synco_manifest::FusedPlan`) | `chunk-lower-transfers` |

    The last six are typed records (`passes/src/plan/records.rs`): a
    struct is a dictionary, a list of integers a dense `array<i64: ...>`,
    any other list an array; the pass that reads one refuses it, at the op,
    if a field is missing or of the wrong kind.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 0;
}

class Chunk_Op<string mnemonic, list<Trait> traits = []>
    : Op<Chunk_Dialect, mnemonic, traits>;

#endif // SYNCO_CHUNK_DIALECT
