//! Copies by the Tensor Memory Accelerator (`backend(tma)`): the copy
//! programs move a chunk as Hopper bulk tensor copies instead of vector
//! loads and stores.
//!
//! A chunk is a 2D box of `rows` rows of `row_elems` elements, `pitch`
//! elements apart in each buffer (a contiguous chunk is viewed as rows of
//! 128 bytes). Each program describes each buffer it copies between once,
//! at the first chunk that needs it ([`TensorMaps`]): a device-side tensor
//! descriptor of the whole buffer as rows of the box's pitch
//! (`tt.make_tensor_descriptor`, written into Triton's global scratch, 128
//! bytes each; the source's through the peer mapping, one per source rank).
//! It then copies blocks `pid`, `pid + C`, ... of the box, at the chunk's
//! row and column in each buffer, with `tt.descriptor_load` (a
//! `cp.async.bulk.tensor` from global into shared memory) and
//! `tt.descriptor_store` (back out to the destination). Where a buffer is
//! not whole rows of the pitch, or a chunk does not lie within them, the
//! chunk gets descriptors of its own box instead. Triton waits for a
//! store only until its shared memory was read
//! (`cp.async.bulk.wait_group.read`), so the program then waits for its
//! bulk stores to complete (`cp.async.bulk.wait_group 0`), which makes
//! their writes visible to it, before it counts itself done on the chunk.
//! The copy loop asks Triton for [`TMA_STAGES`] stages, so that its bulk
//! loads run ahead of the stores (Triton's pipeliner leaves a loop whose
//! loads feed no dot alone otherwise: one block in flight per program).
//! Before each chunk's copies it orders what it (and, through the flag it
//! acquired, its peers) wrote with generic stores before the bulk copies'
//! reads (`fence.proxy.async.global`).
//!
//! The hardware's rules are checked when the pass builds the copy
//! ([`TmaBox::new`], [`check_aligned`]): rows of at least 16 bytes,
//! pitches and every chunk's start in both buffers multiples of 16 bytes.

use synco_ir::{self as ir, Builder, Value};

/// Bytes of the innermost box dimension: one 128-byte swizzled row, the
/// widest that Triton's shared-memory layout takes in one bulk copy.
const BOX_ROW_BYTES: i64 = 128;

/// The hardware's limit on a box's extent in any dimension.
const MAX_BOX_DIM: i64 = 256;

/// The stages Triton's pipeliner gives a copy loop: `TMA_STAGES - 1`
/// blocks loaded ahead while one is stored, each in a shared-memory buffer
/// of the block's size, as is the store. Not yet tuned
/// (`benches/copy/rate.py` measures the copy programs).
pub const TMA_STAGES: i64 = 3;

/// Bytes of one bulk copy's block: with [`TMA_STAGES`], 32 KiB in flight
/// per program (what an `ldst` program keeps in flight) in 48 KiB of
/// shared memory, which the copy programs need beside whatever the
/// kernel's own programs use (Triton gives the kernel the larger).
pub const TMA_BLOCK_BYTES: i64 = 16 * 1024;

/// Addresses and pitches of a bulk tensor copy are multiples of this.
pub const TMA_ALIGN_BYTES: i64 = 16;

/// A chunk's geometry for bulk copies: the box, the block each copy moves,
/// and how many blocks it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaBox {
    /// The chunk: rows and elements per row, and the pitch of its rows in
    /// the source and destination buffers (elements).
    pub rows: i64,
    pub row_elems: i64,
    pub src_pitch: i64,
    pub dst_pitch: i64,
    /// One bulk copy's block: `block_rows` x `block_cols` elements.
    pub block_rows: i64,
    pub block_cols: i64,
}

impl TmaBox {
    /// The geometry of a chunk of `rows` rows of `row_elems` elements of
    /// `elem_bytes` bytes (`src_pitch`, `dst_pitch` apart; a contiguous
    /// chunk is one row), copied in blocks of at most `step` elements; an
    /// error saying which rule the chunk breaks.
    pub fn new(
        (rows, row_elems, src_pitch, dst_pitch): (i64, i64, i64, i64),
        step: i64,
        elem_bytes: i64,
    ) -> Result<TmaBox, String> {
        let row_width = BOX_ROW_BYTES / elem_bytes.max(1);
        // A contiguous chunk: rows of 128 bytes, back to back.
        let (rows, row_elems, src_pitch, dst_pitch) = if rows == 1 {
            if row_elems % row_width != 0 {
                return Err(format!(
                    "a contiguous chunk of {row_elems} elements is not a whole number of {BOX_ROW_BYTES}-byte rows"
                ));
            }
            let n = row_elems / row_width;
            (n, row_width, row_width, row_width)
        } else {
            (rows, row_elems, src_pitch, dst_pitch)
        };
        if i32::try_from(rows).is_err() || i32::try_from(row_elems).is_err() {
            return Err(format!(
                "its {rows} rows of {row_elems} elements exceed a tensor map's 32-bit extents"
            ));
        }
        let bytes = |elems: i64| elems.checked_mul(elem_bytes);
        if bytes(row_elems).is_none_or(|b| b < TMA_ALIGN_BYTES) {
            return Err(format!(
                "its rows of {row_elems} elements are narrower than the {TMA_ALIGN_BYTES} bytes a bulk copy moves at least"
            ));
        }
        for (side, pitch) in [("source", src_pitch), ("destination", dst_pitch)] {
            if bytes(pitch).is_none_or(|b| b % TMA_ALIGN_BYTES != 0) {
                return Err(format!(
                    "its rows are {pitch} elements apart in the {side} buffer, not a multiple of {TMA_ALIGN_BYTES} bytes"
                ));
            }
        }
        let block_cols = largest_power_of_two_dividing(row_elems).min(row_width);
        if bytes(block_cols).is_none_or(|b| b < TMA_ALIGN_BYTES) {
            return Err(format!(
                "its rows of {row_elems} elements do not split into blocks of a multiple of {TMA_ALIGN_BYTES} bytes"
            ));
        }
        let step = step.min(TMA_BLOCK_BYTES / elem_bytes.max(1));
        let block_rows = largest_power_of_two_dividing(rows)
            .min(MAX_BOX_DIM)
            .min((step / block_cols).max(1));
        Ok(TmaBox {
            rows,
            row_elems,
            src_pitch,
            dst_pitch,
            block_rows,
            block_cols,
        })
    }

    /// Blocks along a row, and in all.
    fn blocks(&self) -> (i64, i64) {
        let across = self.row_elems / self.block_cols;
        (across, (self.rows / self.block_rows) * across)
    }
}

/// Refuses a chunk starting at element `offset` of a buffer whose start
/// is 16-byte aligned, if the start of the chunk is not.
pub fn check_aligned(offset: i64, elem_bytes: i64) -> Result<(), String> {
    match offset.checked_mul(elem_bytes) {
        Some(b) if b % TMA_ALIGN_BYTES == 0 => Ok(()),
        _ => Err(format!(
            "it starts at element {offset} of its buffer, not at a multiple of {TMA_ALIGN_BYTES} bytes"
        )),
    }
}

fn largest_power_of_two_dividing(n: i64) -> i64 {
    if n <= 0 { 1 } else { n & n.wrapping_neg() }
}

/// A buffer as a tensor map sees it: `rows` rows of `pitch` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaView {
    pub rows: i64,
    pub pitch: i64,
}

impl TmaView {
    /// `buffer_elems` elements as rows of `pitch`, if they are whole rows
    /// that a tensor map's 32-bit extent holds.
    pub fn of(buffer_elems: i64, pitch: i64) -> Option<TmaView> {
        (pitch > 0 && buffer_elems % pitch == 0)
            .then_some(buffer_elems / pitch)
            .filter(|rows| i32::try_from(*rows).is_ok() && i32::try_from(pitch).is_ok())
            .map(|rows| TmaView { rows, pitch })
    }

    /// Whether a box of `row_elems` starting at element `start` stays
    /// within one of its rows.
    pub fn holds(&self, start: i64, row_elems: i64) -> bool {
        start >= 0 && start % self.pitch + row_elems <= self.pitch
    }
}

/// Where one side of a bulk copy is: a whole buffer's tensor map and the
/// chunk's first element in it (`i64`), or a tensor map of the chunk alone.
#[derive(Clone, Copy)]
pub(super) enum TmaSide {
    Buffer {
        descriptor: Value,
        start: Value,
        pitch: i64,
    },
    Chunk {
        descriptor: Value,
    },
}

/// Tensor maps made once per program for every copy that reads or writes
/// the same buffer on the same rank (`key`), before the first of them: a
/// tensor map costs the program its writes into global scratch and a
/// fence, where one per chunk would cost that for every chunk.
#[derive(Default)]
pub(super) struct TensorMaps {
    made: Vec<(String, Value)>,
}

impl TensorMaps {
    /// The tensor map of `view` at `base` (a buffer's first element) for
    /// blocks of `tma`, made now unless `key` already has one.
    pub fn whole_buffer(
        &mut self,
        b: &Builder,
        key: String,
        base: Value,
        view: TmaView,
        tma: &TmaBox,
        element: ir::Type,
    ) -> Value {
        let key = format!("{key} {view:?} {}x{}", tma.block_rows, tma.block_cols);
        if let Some((_, made)) = self.made.iter().find(|(k, _)| *k == key) {
            return *made;
        }
        let made = make_descriptor(
            b,
            base,
            (view.rows, view.pitch),
            view.pitch,
            &block_type(tma, element),
        );
        self.made.push((key, made));
        made
    }

    /// A tensor map of the chunk alone (its box at `base`, its first
    /// element), rows `pitch` apart.
    pub fn chunk(b: &Builder, base: Value, tma: &TmaBox, pitch: i64, element: ir::Type) -> Value {
        make_descriptor(
            b,
            base,
            (tma.rows, tma.row_elems),
            pitch,
            &block_type(tma, element),
        )
    }
}

fn block_type(tma: &TmaBox, element: ir::Type) -> String {
    format!(
        "tensor<{}x{}x{}>",
        tma.block_rows,
        tma.block_cols,
        ir::print_type(element)
    )
}

/// Copy program `pid` of `programs` copies its blocks of the box from
/// `src` to `dst` with bulk tensor copies, and waits until its stores are
/// complete (see the module doc).
pub(super) fn copy_box(
    b: &Builder,
    (src, dst): (TmaSide, TmaSide),
    tma: TmaBox,
    element: ir::Type,
    (pid, programs): (Value, Value),
) {
    proxy_fence(b);
    let block_tensor = ir::ranked_tensor(&[tma.block_rows, tma.block_cols], element);
    // Each side's descriptor and the box's first row and column in it.
    let origin = |side: TmaSide| match side {
        TmaSide::Chunk { descriptor } => (descriptor, b.const_i32(0), b.const_i32(0)),
        TmaSide::Buffer {
            descriptor,
            start,
            pitch,
        } => {
            let pitch = b.const_i64(pitch);
            let row = b.trunc_i32(b.divsi(start, pitch));
            let col = b.trunc_i32(b.remsi(start, pitch));
            (descriptor, row, col)
        }
    };
    let (src, src_row, src_col) = origin(src);
    let (dst, dst_row, dst_col) = origin(dst);
    let (across, blocks) = tma.blocks();
    let i32t = ir::i32_type(b.ctx);
    let copies = b.for_loop(pid, b.const_i32(blocks), programs, |body, block| {
        let row = body.muli(
            body.divsi(block, body.const_i32(across)),
            body.const_i32(tma.block_rows),
        );
        let col = body.muli(
            body.remsi(block, body.const_i32(across)),
            body.const_i32(tma.block_cols),
        );
        let at = |(r, c): (Value, Value)| (body.addi(r, row), body.addi(c, col));
        let (load_row, load_col) = at((src_row, src_col));
        let value = ir::result(
            body.op(
                "tt.descriptor_load",
                &[src, load_row, load_col],
                &[block_tensor],
                &[
                    ("cache", ir::int_attr_of(i32t, 1)),
                    ("evict", ir::int_attr_of(i32t, 1)),
                ],
            ),
            0,
        );
        let (store_row, store_col) = at((dst_row, dst_col));
        body.op(
            "tt.descriptor_store",
            &[dst, value, store_row, store_col],
            &[],
            &[],
        );
    });
    // Triton pipelines a loop's bulk loads that feed no dot only where the
    // loop asks for stages: then `TMA_STAGES - 1` blocks are in flight
    // while one is stored.
    ir::set_attr(copies, "tt.num_stages", ir::int_attr_of(i32t, TMA_STAGES));
    b.inline_asm_effect("{ cp.async.bulk.wait_group 0; mov.u32 $0, 0; }");
}

/// [`copy_box`] from `from` to `to` (pointers to the chunk's first
/// element), through tensor maps of the chunk alone.
pub(super) fn copy_chunk(
    b: &Builder,
    (from, to): (Value, Value),
    tma: TmaBox,
    element: ir::Type,
    ids: (Value, Value),
) {
    let src = TensorMaps::chunk(b, from, &tma, tma.src_pitch, element);
    let dst = TensorMaps::chunk(b, to, &tma, tma.dst_pitch, element);
    let sides = (
        TmaSide::Chunk { descriptor: src },
        TmaSide::Chunk { descriptor: dst },
    );
    copy_box(b, sides, tma, element, ids);
}

/// `fence.proxy.async.global`: orders this thread's generic-proxy view of
/// global memory before the bulk copies' reads and writes.
fn proxy_fence(b: &Builder) {
    b.inline_asm_effect("{ fence.proxy.async.global; mov.u32 $0, 0; }");
}

/// A tensor descriptor at `base` of `(rows, cols)` elements, rows `pitch`
/// elements apart, for blocks of `block_type`.
fn make_descriptor(
    b: &Builder,
    base: Value,
    (rows, cols): (i64, i64),
    pitch: i64,
    block_type: &str,
) -> Value {
    let desc_type = ir::parse_type(b.ctx, &format!("!tt.tensordesc<{block_type}>"))
        .unwrap_or_else(|| ir::type_of(base));
    let padding = ir::int_attr_of(ir::i32_type(b.ctx), 1);
    let operands = [
        base,
        b.const_i32(rows),
        b.const_i32(cols),
        b.const_i64(pitch),
        b.const_i64(1),
    ];
    ir::result(
        b.op(
            "tt.make_tensor_descriptor",
            &operands,
            &[desc_type],
            &[("padding", padding)],
        ),
        0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contiguous_chunk_is_rows_of_128_bytes_in_blocks_of_16_kib() {
        // 2048 rows of 64 bf16, 128 rows (16 KiB) per block, though the
        // copy step is 32 KiB.
        let tma = TmaBox::new((1, 1 << 17, 1 << 17, 1 << 17), 16384, 2).unwrap();
        assert_eq!((tma.rows, tma.row_elems, tma.src_pitch), (2048, 64, 64));
        assert_eq!((tma.block_rows, tma.block_cols), (128, 64));
        assert_eq!(tma.blocks(), (1, 16));
        // A smaller step stays.
        let tma = TmaBox::new((1, 1 << 17, 1 << 17, 1 << 17), 4096, 2).unwrap();
        assert_eq!(tma.block_rows, 64);
        // f32: rows of 32.
        let tma = TmaBox::new((1, 4096, 4096, 4096), 4096, 4).unwrap();
        assert_eq!((tma.rows, tma.row_elems, tma.block_rows), (128, 32, 128));
    }

    #[test]
    fn a_strided_box_is_cut_into_blocks_that_divide_it() {
        // 1024 rows of 128 bf16 (a head's columns), pitches 1024 and 256.
        let tma = TmaBox::new((1024, 128, 1024, 256), 16384, 2).unwrap();
        assert_eq!((tma.block_rows, tma.block_cols), (128, 64));
        assert_eq!(tma.blocks(), (2, 16));
        // Rows of 96: blocks of 32 columns.
        let tma = TmaBox::new((8, 96, 96 * 4, 96), 16384, 2).unwrap();
        assert_eq!((tma.block_rows, tma.block_cols), (8, 32));
        assert_eq!(tma.blocks(), (3, 3));
    }

    #[test]
    fn boxes_the_hardware_cannot_copy_are_refused() {
        let narrow = TmaBox::new((64, 4, 8, 4), 4096, 2).unwrap_err();
        assert!(narrow.contains("narrower than the 16 bytes"), "{narrow}");
        let pitch = TmaBox::new((64, 8, 12, 8), 4096, 2).unwrap_err();
        assert!(pitch.contains("12 elements apart in the source"), "{pitch}");
        let odd = TmaBox::new((64, 12, 24, 24), 4096, 2).unwrap_err();
        assert!(odd.contains("do not split"), "{odd}");
        let huge = TmaBox::new((1 << 32, 64, 64, 64), 4096, 2).unwrap_err();
        assert!(huge.contains("32-bit extents"), "{huge}");
        let contiguous = TmaBox::new((1, 4100, 4100, 4100), 4096, 2).unwrap_err();
        assert!(contiguous.contains("128-byte rows"), "{contiguous}");
        assert!(check_aligned(4096, 2).is_ok());
        assert!(check_aligned(100, 2).unwrap_err().contains("element 100"));
    }
}
