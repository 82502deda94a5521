//! Unit tests of the plan model.

use super::*;

/// The plans of `text` (a module), in a context with the chunk dialect.
fn with_plans(text: &str, check: impl FnOnce(Vec<Plan>)) {
    let context = synco_chunk::create_context();
    let module = melior::ir::Module::parse(&context, text).expect("parses");
    check(plans(module.as_operation().to_raw()));
}

/// An expanded 2-rank plan whose partial @P is reduced by the collective
/// `collective` (its `collective(...) phase(...)` text) in `group`.
fn reduced_plan(collective: &str, group: &str) -> String {
    format!(
        r#"chunk.plan @p world_size(2) {{
          chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
          chunk.buffer @C : !chunk.buffer<512x64xbf16>
          chunk.produce @tiles @P dim(0) tile(128)
          chunk.transfer @C_p0_c0 local ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(0) after [@tiles] reduce(sum) {collective} {{group = "{group}"}}
          chunk.transfer @C_p0_c1 local ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> (d0) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(1) after [@tiles] reduce(sum) {collective} {{group = "{group}"}}
          chunk.transfer @C_p1_c0 pull ldst from <@P[(d0) -> (d0 * 512, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (0, 0)] [256, 64]> on (d0) -> (d0) order(2) after [@tiles] reduce(sum) {collective} {{group = "{group}"}}
          chunk.transfer @C_p1_c1 pull ldst from <@P[(d0) -> (d0 * 512 + 256, 0)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@C[(d0) -> (256, 0)] [256, 64]> on (d0) -> (d0) order(3) after [@tiles] reduce(sum) {collective} {{group = "{group}"}}
        }}"#
    )
}

#[test]
fn chunks_split_across_rank_blocks_number_by_rank_then_column() {
    // B [2 x 64, 512] gathered by rows (a block per rank), chunks of 128
    // columns: rank 1's chunk of columns [256, 384) is flag 4 + 2.
    let text = r#"chunk.plan @p world_size(2) {
          chunk.buffer @B : !chunk.buffer<128x512xbf16> bind(1)
          chunk.transfer @B_p1_c2 push copy_engine from <@B[(d0) -> (((d0 + 1) mod 2) * 64, 256)] [64, 128]> on (d0) -> ((d0 + 1) mod 2) to <@B[(d0) -> (((d0 + 1) mod 2) * 64, 256)] [64, 128]> on (d0) -> (d0) order(6)
          chunk.consume @B dim(1) tile(128) source("src")
        }"#;
    with_plans(text, |plans| {
        let layout = flag_layout(&plans[0]).expect("a layout");
        let [range] = &layout[..] else {
            panic!("one range, got {layout:?}")
        };
        assert_eq!((range.dim, range.rank_dim, range.rank_block), (1, 0, 64));
        assert_eq!((range.rows_per_chunk, range.chunks_per_rank), (128, 4));
        assert_eq!(range.flag_at(&[64, 256]), Some(6));
        assert_eq!(range.flag_at(&[0, 384]), Some(3));
        assert_eq!(range.count(2), 8);
    });
}

#[test]
fn chunks_cut_by_columns_too_number_their_parts_within_each_chunk() {
    // Qh [2 x 256 tokens, 4 heads of 64] re-sharded with a chunk per head
    // (split(dim)): each rank's block of rows is one chunk of 4 parts of
    // 64 columns, and rank 1's head 2 is flag 1 * 4 + 2.
    let text = r#"chunk.plan @p world_size(2) {
          chunk.buffer @Qs : !chunk.buffer<256x512xbf16>
          chunk.buffer @Qh : !chunk.buffer<512x256xbf16> bind(0)
          chunk.transfer @Qh_p1_c2 push copy_engine from <@Qs[(d0) -> (0, d0 * 256 + 128)] [256, 64]> on (d0) -> ((d0 + 1) mod 2) to <@Qh[(d0) -> (((d0 + 1) mod 2) * 256, 128)] [256, 64]> on (d0) -> (d0) order(2)
          chunk.consume @Qh dim(0) tile(64)
        }"#;
    with_plans(text, |plans| {
        let layout = flag_layout(&plans[0]).expect("a layout");
        let [range] = &layout[..] else {
            panic!("one range, got {layout:?}")
        };
        assert_eq!((range.rows_per_chunk, range.chunks_per_rank), (256, 1));
        assert_eq!(
            range.cut,
            Some(Cut {
                dim: 1,
                width: 64,
                count: 4
            })
        );
        assert_eq!(range.flag_at(&[256, 128]), Some(6));
        assert_eq!(range.flag_at(&[0, 192]), Some(3));
        assert_eq!(range.count(2), 8);
    });
}

#[test]
fn reductions_get_counters_after_the_consumed_flags() {
    with_plans(
        &reduced_plan("collective(reduce_scatter)", "reduce_scatter_C"),
        |plans| {
            let plan = &plans[0];
            assert_eq!(reduced_buffers(plan), vec!["P".to_string()]);
            assert_eq!(
                reduction_kind(plan, "P"),
                Some(ReductionKind::ReduceScatter)
            );
            let layout = flag_layout(plan).expect("a layout");
            let [range] = &layout[..] else {
                panic!("one range, got {layout:?}")
            };
            assert_eq!(range.kind, FlagKind::Reduction);
            assert_eq!((range.rows_per_chunk, range.chunks_per_rank), (256, 2));
            assert_eq!(range.count(2), 4);
        },
    );
    // A one-shot all-reduce: arrival and acknowledgement counters.
    with_plans(
        &reduced_plan("collective(all_reduce)", "all_reduce_C"),
        |plans| {
            assert_eq!(
                reduction_kind(&plans[0], "P"),
                Some(ReductionKind::AllReduce)
            );
            let layout = flag_layout(&plans[0]).expect("a layout");
            assert_eq!(layout[0].count(2), 8);
        },
    );
    with_plans(
        &reduced_plan(
            "collective(all_reduce) phase(reduce_scatter)",
            "all_reduce_C_rs",
        ),
        |plans| {
            assert_eq!(
                reduction_kind(&plans[0], "P"),
                Some(ReductionKind::AllReduceTwoShot)
            );
        },
    );
    // The collective is what the transfer records, whatever its group's
    // name; a reducing transfer that records none reduces for nothing.
    with_plans(&reduced_plan("collective(reduce_scatter)", "rs"), |plans| {
        assert_eq!(
            reduction_kind(&plans[0], "P"),
            Some(ReductionKind::ReduceScatter)
        );
    });
    with_plans(&reduced_plan("", "reduce_scatter_C"), |plans| {
        assert_eq!(reduction_kind(&plans[0], "P"), None);
    });
}

#[test]
fn reads_regions_and_rank_maps_with_the_dialect_evaluator() {
    let text = r#"chunk.plan @p world_size(4) {
          chunk.buffer @A : !chunk.buffer<1024x64xbf16>
          chunk.transfer @t pull copy_engine from <@A[(r) -> (((r + 1) mod 4) * 256, 8)] [256, 56]> on (r) -> ((r + 1) mod 4) to <@A[(r) -> (((r + 1) mod 4) * 256, 8)] [256, 56]> on (r) -> (r) order(0)
        }"#;
    with_plans(text, |plans| {
        let [t] = plans[0].ops_named("chunk.transfer")[..] else {
            panic!("one transfer")
        };
        let src = ir::attr(t, "src").expect("a source region");
        let (buffer, offsets, sizes) = region_parts(src).expect("a region");
        assert_eq!(
            (buffer.as_str(), offsets.to_string().as_str(), sizes),
            ("A", "(d0) -> (((d0 + 1) mod 4) * 256, 8)", vec![256, 56])
        );
        assert_eq!(region_offsets(src, 3), Some(vec![0, 8]));
        assert_eq!(rank_at(t, "src_rank", 3), Some(0));
        assert_eq!(rank_at(t, "dst_rank", 3), Some(3));
        assert_eq!(
            rank_map(t, "src_rank").map(|m| m.to_string()).as_deref(),
            Some("(d0) -> ((d0 + 1) mod 4)")
        );
        // Not a region, not a map: nothing, not a panic.
        assert_eq!(
            region_offsets(ir::attr(t, "src_rank").expect("a map"), 0),
            None
        );
        assert_eq!(rank_at(t, "src", 0), None);
    });
}

/// Every accessor of the typed views reads the attribute `ChunkOps.td`
/// names: on ops that spell out every attribute, none comes back empty
/// (a misspelled name would read as absent).
#[test]
fn views_read_every_attribute_of_their_ops() {
    let reduced = reduced_plan("collective(all_reduce) phase(reduce_scatter)", "g");
    with_plans(&reduced, |plans| {
        let t = plans[0].transfers()[2];
        assert_eq!(t.name().as_deref(), Some("C_p1_c0"));
        assert_eq!(t.mode(), Some(synco_chunk::attrs::TransferMode::Pull));
        assert_eq!(t.backend(), Some(synco_chunk::attrs::Backend::Ldst));
        assert_eq!(t.order(), 2);
        assert_eq!(
            (t.src_buffer().as_deref(), t.dst_buffer().as_deref()),
            (Some("P"), Some("C"))
        );
        assert_eq!(t.sizes(), Some(vec![256, 64]));
        assert_eq!((t.src_rank_on(0), t.dst_rank_on(0)), (Some(1), Some(0)));
        assert_eq!(t.src_offsets_on(1), Some(vec![512, 0]));
        assert!(t.reduces() && !t.after().is_empty() && !t.is_local());
        assert_eq!(
            t.collective(),
            Some((
                synco_chunk::attrs::CollectiveKind::AllReduce,
                Some(synco_chunk::attrs::CollectivePhase::ReduceScatter)
            ))
        );
        assert_eq!(plans[0].reductions_of("P").len(), 4);
    });
    let written = r#"chunk.plan @p world_size(2) {
      chunk.buffer @P : !chunk.buffer<1024x64xbf16> bind(0)
      chunk.buffer @C : !chunk.buffer<512x64xbf16>
      chunk.buffer @B : !chunk.buffer<128x64xbf16> bind(1)
      chunk.produce @tiles @P dim(0) tile(128) index("pid_m")
      chunk.consume @B dim(1) tile(32) index("pid_n") source("src")
      chunk.all_gather @B dim(0) chunks(2) split(1) backend(ldst) algorithm(direct)
      chunk.reduce_scatter @P into @C dim(0) chunks(2) reduce(max) backend(copy_engine) algorithm(direct)
    }"#;
    with_plans(written, |plans| {
        let plan = &plans[0];
        let produce = plan.producer_of("P").expect("a producer");
        assert_eq!(
            (produce.name().as_deref(), produce.dim(), produce.tile()),
            (Some("tiles"), 0, Some(128))
        );
        assert_eq!(produce.index().as_deref(), Some("pid_m"));
        let consume = plan.consumer_of("B").expect("a consumer");
        assert_eq!((consume.dim(), consume.tile()), (1, Some(32)));
        assert_eq!(consume.index().as_deref(), Some("pid_n"));
        assert_eq!(consume.source().as_deref(), Some("src"));
        let [gather, scatter] = plan.collectives()[..] else {
            panic!("two collectives")
        };
        assert_eq!(gather.kind(), synco_chunk::attrs::CollectiveKind::AllGather);
        assert_eq!(
            (gather.src(), gather.dst()),
            (Some("B".into()), Some("B".into()))
        );
        assert_eq!(
            (gather.dim(), gather.split(), gather.chunk_dim()),
            (0, Some(1), 1)
        );
        assert_eq!(gather.chunks(), Some(2));
        assert_eq!(gather.backend(), Some(synco_chunk::attrs::Backend::Ldst));
        assert_eq!(
            gather.algorithm(),
            Some(synco_chunk::attrs::Algorithm::Direct)
        );
        assert_eq!(
            (scatter.src(), scatter.dst()),
            (Some("P".into()), Some("C".into()))
        );
        assert_eq!(
            scatter.reduction(),
            Some(synco_chunk::attrs::Reduction::Max)
        );
        scatter.set_chunks(4);
        scatter.set_backend(synco_chunk::attrs::Backend::Ldst);
        assert_eq!(
            (scatter.chunks(), scatter.backend()),
            (Some(4), Some(synco_chunk::attrs::Backend::Ldst))
        );
    });
}
