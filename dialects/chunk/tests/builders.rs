//! The typed builders and the attribute helpers build IR that the C++
//! verifiers accept and that prints in the pretty syntax.

use melior::ir::{
    Block, BlockLike, Location, Module, Region, RegionLike, Type,
    attribute::{FlatSymbolRefAttribute, IntegerAttribute, StringAttribute, TypeAttribute},
    operation::OperationLike,
    r#type::IntegerType,
};
use synco_chunk::{
    attrs::{
        self, Algorithm, Backend, CollectiveKind, CollectivePhase, MemScope, MemSemantic,
        Reduction, TraceEvent, TransferMode,
    },
    create_context,
    ops::chunk,
};

#[test]
fn builds_a_verified_all_gather_plan() {
    let context = create_context();
    let location = Location::unknown(&context);
    let i64_type = IntegerType::new(&context, 64).into();
    let buffer_type = Type::parse(&context, "!chunk.buffer<1024x64xbf16>").expect("type");

    let body = Region::new();
    let block = body.append_block(Block::new(&[]));
    block.append_operation(
        chunk::BufferOperationBuilder::new(&context, location)
            .sym_name(StringAttribute::new(&context, "A"))
            .r#type(TypeAttribute::new(buffer_type))
            .arg(IntegerAttribute::new(i64_type, 0))
            .build()
            .into(),
    );
    block.append_operation(
        chunk::AllGatherOperationBuilder::new(&context, location)
            .buffer(FlatSymbolRefAttribute::new(&context, "A"))
            .dim(IntegerAttribute::new(i64_type, 0))
            .chunks(IntegerAttribute::new(i64_type, 4))
            .backend(Backend::Tma.attribute(&context))
            .algorithm(Algorithm::Ring.attribute(&context))
            .build()
            .into(),
    );
    let plan = chunk::plan(
        &context,
        body,
        StringAttribute::new(&context, "ag"),
        IntegerAttribute::new(i64_type, 2),
        location,
    );

    let module = Module::new(location);
    module.body().append_operation(plan.into());
    assert!(module.as_operation().verify());
    let text = module.as_operation().to_string();
    assert!(
        text.contains("chunk.buffer @A : !chunk.buffer<1024x64xbf16> bind(0)"),
        "{text}"
    );
    assert!(
        text.contains("chunk.all_gather @A dim(0) chunks(4) backend(tma) algorithm(ring)"),
        "{text}"
    );
}

#[test]
fn builds_a_transfer_from_region_and_rank_helpers() {
    let context = create_context();
    let location = Location::unknown(&context);
    let i64_type = IntegerType::new(&context, 64).into();
    let module = Module::parse(
        &context,
        "chunk.plan @p world_size(2) { chunk.buffer @A : !chunk.buffer<1024x64xf16> }",
    )
    .expect("plan parses");
    let plan = module.body().first_operation().expect("the plan");
    let plan_block = plan.region(0).expect("body").first_block().expect("block");

    let own =
        attrs::region(&context, "A", &["r * 512".into(), "0".into()], &[512, 64]).expect("region");
    let peer = attrs::region(
        &context,
        "A",
        &["((r + 1) mod 2) * 512".into(), "0".into()],
        &[512, 64],
    )
    .expect("region");
    for (name, mode, src, src_rank, order) in [
        ("own", TransferMode::Local, own, "r", 0),
        ("peer", TransferMode::Pull, peer, "(r + 1) mod 2", 1),
    ] {
        let op = chunk::TransferOperationBuilder::new(&context, location)
            .sym_name(StringAttribute::new(&context, name))
            .mode(mode.attribute(&context))
            .backend(Backend::CopyEngine.attribute(&context))
            .src(src)
            .src_rank(attrs::rank_map(&context, src_rank).expect("map"))
            .dst(src)
            .dst_rank(attrs::rank_map(&context, "r").expect("map"))
            .order(IntegerAttribute::new(i64_type, order))
            .group(StringAttribute::new(&context, "ag"))
            .build();
        plan_block.append_operation(op.into());
    }
    assert!(module.as_operation().verify(), "{}", module.as_operation());

    // The attributes read back as the enums and values that were built.
    let mut op = plan_block.first_operation();
    let mut transfers = Vec::new();
    while let Some(current) = op {
        if current.name().as_string_ref().as_str() == Ok("chunk.transfer") {
            let int = |name: &str| {
                IntegerAttribute::try_from(current.attribute(name).expect(name))
                    .expect("int")
                    .value()
            };
            transfers.push((TransferMode::from_value(int("mode")), int("order")));
        }
        op = current.next_in_block();
    }
    assert_eq!(
        transfers,
        vec![
            (Some(TransferMode::Local), 0),
            (Some(TransferMode::Pull), 1)
        ]
    );
}

#[test]
fn a_region_helper_with_a_bad_map_is_refused() {
    let context = create_context();
    // Two offsets for one size: the attribute verifier refuses it.
    assert!(attrs::region(&context, "A", &["r".into(), "0".into()], &[4]).is_none());
    assert!(attrs::rank_map(&context, "r +").is_none());
}

#[test]
fn reads_a_region_and_evaluates_it_like_the_verifier() {
    let context = create_context();
    let region = attrs::region(
        &context,
        "A",
        &[
            "((r + 1) mod 4) * 256 + 64".into(),
            "r floordiv 2".into(),
            "r ceildiv 2".into(),
        ],
        &[256, 8, 4],
    )
    .expect("a valid region");
    let region_attribute = region;
    let region = attrs::Region::from_attribute(region).expect("a #chunk.region");
    assert_eq!(region.buffer(), "A");
    assert_eq!(region.sizes(), vec![256, 8, 4]);
    assert_eq!(
        region.offsets().to_string(),
        "(d0) -> (((d0 + 1) mod 4) * 256 + 64, d0 floordiv 2, d0 ceildiv 2)"
    );
    assert_eq!(region.offsets_on(3), Some(vec![64, 1, 2]));
    // Below zero, `mod` stays non-negative and the divisions round down
    // and up, as in MLIR (Rust's `%` and `/` would give -448, -1, -1).
    assert_eq!(region.offsets_on(-3), Some(vec![576, -2, -1]));
    // Not a region.
    let map = attrs::rank_map(&context, "r").expect("a map");
    assert!(attrs::Region::from_attribute(map).is_none());
    assert!(attrs::affine_map_of(map).is_some());
    assert!(attrs::affine_map_of(region_attribute).is_none());
}

#[test]
fn rank_maps_that_cannot_be_evaluated_give_nothing() {
    let context = create_context();
    let value = |text: &str, rank| {
        let attr = melior::ir::Attribute::parse(&context, text).expect("parses");
        attrs::evaluate_on_rank(attrs::affine_map_of(attr).expect("a map"), rank)
    };
    assert_eq!(
        value("affine_map<(r) -> ((r + 1) mod 2)>", 1),
        Some(vec![0])
    );
    // What `AffineMap::compose` leaves unfolded: a zero divisor, a symbol,
    // an overflow.
    assert_eq!(value("affine_map<(r) -> (r mod 0)>", 1), None);
    assert_eq!(value("affine_map<(r)[s] -> (r + s)>", 1), None);
    assert_eq!(
        value("affine_map<(r) -> (r * 9223372036854775807)>", 2),
        None
    );
}

/// Every Rust enum case is the C++ enum case of the same keyword: the
/// keyword parses (through the op's pretty syntax) to the Rust value.
#[test]
fn rust_enums_match_the_ods_enums() {
    let context = create_context();
    fn stored<'c>(module: &Module<'c>, name: &str) -> i64 {
        let plan_or_func = module.body().first_operation().expect("op");
        let block = plan_or_func
            .region(0)
            .expect("region")
            .first_block()
            .expect("block");
        let mut op = block.first_operation();
        while let Some(current) = op {
            if let Ok(attribute) = current.attribute(name) {
                return IntegerAttribute::try_from(attribute).expect("int").value();
            }
            op = current.next_in_block();
        }
        panic!("no op with attribute {name}");
    }
    let parse = |text: String| Module::parse(&context, &text).unwrap_or_else(|| panic!("{text}"));
    let plan = |op: &str| {
        format!(
            "chunk.plan @p world_size(2) {{ chunk.buffer @A : !chunk.buffer<4x4xf32>
               chunk.buffer @B : !chunk.buffer<4x4xf32> {op} }}"
        )
    };
    for backend in Backend::ALL {
        let m = parse(plan(&format!(
            "chunk.all_gather @A dim(0) chunks(1) backend({backend})"
        )));
        assert_eq!(Backend::from_value(stored(&m, "backend")), Some(*backend));
    }
    for algorithm in [Algorithm::OneShot, Algorithm::TwoShot] {
        let m = parse(plan(&format!(
            "chunk.all_reduce @A into @B dim(0) chunks(1) algorithm({algorithm})"
        )));
        assert_eq!(
            Algorithm::from_value(stored(&m, "algorithm")),
            Some(algorithm)
        );
    }
    for algorithm in [Algorithm::Direct, Algorithm::Ring] {
        let m = parse(plan(&format!(
            "chunk.all_gather @A dim(0) chunks(1) algorithm({algorithm})"
        )));
        assert_eq!(
            Algorithm::from_value(stored(&m, "algorithm")),
            Some(algorithm)
        );
    }
    for reduction in Reduction::ALL {
        let m = parse(
            plan(&format!(
                "chunk.reduce_scatter @A into @B dim(1) chunks(1) reduce({reduction})"
            ))
            .replace("@B : !chunk.buffer<4x4xf32>", "@B : !chunk.buffer<4x2xf32>"),
        );
        assert_eq!(
            Reduction::from_value(stored(&m, "reduce")),
            Some(*reduction)
        );
    }
    for mode in TransferMode::ALL {
        let (src_rank, dst_rank) = if *mode == TransferMode::Local {
            ("r", "r")
        } else {
            ("(r + 1) mod 2", "r")
        };
        let m = parse(plan(&format!(
            "chunk.transfer @t {mode} copy_engine from #chunk.region<@A[(r) -> (0, 0)] [4, 4]> on (r) -> ({src_rank})
               to #chunk.region<@B[(r) -> (0, 0)] [4, 4]> on (r) -> ({dst_rank}) order(0)"
        )));
        assert_eq!(TransferMode::from_value(stored(&m, "mode")), Some(*mode));
    }
    let transfer = |tail: &str| {
        plan(&format!(
            "chunk.transfer @t pull copy_engine from #chunk.region<@A[(r) -> (0, 0)] [4, 4]> on (r) -> ((r + 1) mod 2)
               to #chunk.region<@B[(r) -> (0, 0)] [4, 4]> on (r) -> (r) order(0) {tail}"
        ))
    };
    for kind in CollectiveKind::ALL {
        let reduce = matches!(
            kind,
            CollectiveKind::ReduceScatter | CollectiveKind::AllReduce
        );
        let m = parse(transfer(&format!(
            "{}collective({kind})",
            if reduce { "reduce(sum) " } else { "" }
        )));
        assert_eq!(
            CollectiveKind::from_value(stored(&m, "collective")),
            Some(*kind)
        );
    }
    for phase in CollectivePhase::ALL {
        let reduce = *phase == CollectivePhase::ReduceScatter;
        let m = parse(transfer(&format!(
            "{}collective(all_reduce) phase({phase})",
            if reduce { "reduce(sum) " } else { "" }
        )));
        assert_eq!(
            CollectivePhase::from_value(stored(&m, "phase")),
            Some(*phase)
        );
    }
    for sem in [
        MemSemantic::Relaxed,
        MemSemantic::Acquire,
        MemSemantic::AcqRel,
    ] {
        for scope in MemScope::ALL {
            let m = parse(format!(
                "func.func @f(%f: !tt.ptr<i32>, %e: i32) {{
                   chunk.wait %f[%e], %e sem({sem}) scope({scope}) : !tt.ptr<i32>
                   return }}"
            ));
            assert_eq!(MemSemantic::from_value(stored(&m, "sem")), Some(sem));
            assert_eq!(MemScope::from_value(stored(&m, "scope")), Some(*scope));
        }
    }
    for event in TraceEvent::ALL {
        let m = parse(format!(
            "func.func @f(%t: !tt.ptr<i64>, %i: i32) {{
               chunk.trace {event} %t[%i], %i records(8) : !tt.ptr<i64>
               return }}"
        ));
        assert_eq!(TraceEvent::from_value(stored(&m, "event")), Some(*event));
    }
    let m = parse(
        "func.func @f(%f: !tt.ptr<i32>, %e: i32) {
           chunk.signal %f[%e], %e sem(release) : !tt.ptr<i32>
           return }"
            .into(),
    );
    assert_eq!(
        MemSemantic::from_value(stored(&m, "sem")),
        Some(MemSemantic::Release)
    );
    for keyword in ["copy_engine", "tma", "ldst"] {
        assert_eq!(
            Backend::from_keyword(keyword).map(Backend::keyword),
            Some(keyword)
        );
    }
}
