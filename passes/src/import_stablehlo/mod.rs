//! `chunk-import-stablehlo`: chunk plans from the collectives of a
//! StableHLO module that sit beside its matrix products.
//!
//! The pass's contract (what it does, its options, pre- and
//! postconditions, what it refuses) is its declaration,
//! `ChunkImportStablehlo` in
//! `dialects/chunk/include/synco/Dialect/Chunk/ChunkPasses.td`
//! (reference: `dialects/chunk/docs/ChunkPasses.md`).

mod ulysses;

use crate::plan::{fail, internal, loc};
use melior::ir::operation::OperationRef;
use synco_chunk::passes::{ChunkImportStablehloOptions, PassOptions, RustPass};
use synco_chunk::{Diagnostic, PassFailed};
use synco_ir::{self as ir, Op, Value};

/// The body of `chunk-import-stablehlo`.
pub struct Pass;

impl RustPass for Pass {
    type Options = ChunkImportStablehloOptions;

    fn run(module: OperationRef, options: &ChunkImportStablehloOptions) -> Result<(), PassFailed> {
        run(module, options)
    }
}

const NAME: &str = ChunkImportStablehloOptions::ARGUMENT;

/// The StableHLO collectives the pass looks at (each is matched or
/// reported).
const COLLECTIVES: [&str; 4] = [
    "stablehlo.all_gather",
    "stablehlo.reduce_scatter",
    "stablehlo.all_reduce",
    "stablehlo.all_to_all",
];

/// StableHLO's other collectives: reported, never imported.
const OTHER_COLLECTIVES: [&str; 4] = [
    "stablehlo.collective_permute",
    "stablehlo.collective_broadcast",
    "stablehlo.send",
    "stablehlo.recv",
];

fn run(module: OperationRef, options: &ChunkImportStablehloOptions) -> Result<(), PassFailed> {
    let module = module.to_raw();
    let Some(world) = ir::attr(module, "mhlo.num_partitions").and_then(ir::int_value) else {
        return Err(fail(
            module,
            format!(
                "{NAME}: the module has no mhlo.num_partitions: not a partitioned (SPMD) module; export it with jax.jit(...).lower(...) of sharded code"
            ),
        ));
    };
    let Some(body) = ir::regions(module)
        .first()
        .and_then(|r| ir::blocks(*r).first().copied())
    else {
        return Err(internal(module, "a module without a body"));
    };
    let collectives: Vec<Op> = ir::walk(module)
        .into_iter()
        .filter(|op| COLLECTIVES.contains(&ir::op_name(*op).as_str()))
        .collect();
    for op in ir::walk(module)
        .into_iter()
        .filter(|op| OTHER_COLLECTIVES.contains(&ir::op_name(*op).as_str()))
    {
        let what = ir::op_name(op).trim_start_matches("stablehlo.").to_string();
        Diagnostic::warning(
            loc(op),
            format!(
                "{NAME}: {what} not imported: plans are imported from all_gather, reduce_scatter, all_reduce and all_to_all"
            ),
        )
        .emit();
    }
    let mut made = 0;
    // Ulysses attentions first: several all-to-alls make one plan.
    let mut handled: Vec<Op> = Vec::new();
    let mut reasons: Vec<(Op, String)> = Vec::new();
    for found in ulysses::find(module, world) {
        let attention = match found {
            Ok(attention) => attention,
            Err(why) => {
                reasons.push(why);
                continue;
            }
        };
        if let Some(op) = attention.all_to_alls.iter().copied().find(|op| {
            let checked = check_whole_world(*op, world);
            checked.is_err()
        }) {
            let why = check_whole_world(op, world).err().unwrap_or_default();
            reasons.push((attention.all_to_alls[0], why));
            continue;
        }
        let tiles = whole_tiles(attention.seq / world, options.tile_rows, "tile-rows")
            .and_then(|()| whole_tiles(attention.seq / world, options.kv_tile, "kv-tile"));
        if let Err(why) = tiles {
            reasons.push((attention.all_to_alls[0], why));
            continue;
        }
        let name = format!("ulysses_attention_{made}");
        let text = attention.plan_text(&name, world, options.tile_rows, options.kv_tile);
        let at = attention.all_to_alls[0];
        append_plan(body, at, &text)?;
        Diagnostic::remark(
            loc(at),
            format!(
                "{NAME}: all_to_all {} -> plan @{name}",
                attention.describe()
            ),
        )
        .emit();
        handled.extend(attention.all_to_alls);
        made += 1;
    }
    for op in collectives {
        if handled.iter().any(|h| ir::same_op(*h, op)) {
            continue;
        }
        let what = ir::op_name(op).trim_start_matches("stablehlo.").to_string();
        if what == "all_to_all" {
            let why = reasons
                .iter()
                .find(|(at, _)| ir::same_op(*at, op))
                .map_or(
                    "it re-shards no attention's Q, K and V from tokens to heads (Ulysses: three such all_to_alls feeding the scores' and the values' dot_generals)".to_string(),
                    |(_, why)| why.clone(),
                );
            Diagnostic::warning(loc(op), format!("{NAME}: {what} not imported: {why}")).emit();
            continue;
        }
        let found = matched(op, world).and_then(|found| {
            whole_tiles(found.m / world, options.tile_rows, "tile-rows").map(|()| found)
        });
        match found {
            Ok(found) => {
                let name = format!("{}_{made}", found.kind.name());
                let text = found.plan_text(&name, world, options.tile_rows);
                append_plan(body, op, &text)?;
                Diagnostic::remark(
                    loc(op),
                    format!("{NAME}: {what} {} -> plan @{name}", found.describe()),
                )
                .emit();
                report_other_readers(op, &name);
                made += 1;
            }
            Err(why) => {
                Diagnostic::warning(loc(op), format!("{NAME}: {what} not imported: {why}")).emit()
            }
        }
    }
    Ok(())
}

/// Parses `text` (a plan) and appends it to `body`, located at `at`.
fn append_plan(body: ir::Block, at: Op, text: &str) -> Result<(), PassFailed> {
    let Some(plan) = ir::parse_op(ir::context_of(at), text, NAME) else {
        return Err(internal(at, "the plan written for it does not parse"));
    };
    ir::set_location(plan, ir::location_of(at));
    ir::append(body, plan);
    Ok(())
}

/// Which fused operator a collective and its matrix product make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    AllGatherMatmul,
    MatmulReduceScatter,
    MatmulAllReduce,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::AllGatherMatmul => "all_gather_matmul",
            Kind::MatmulReduceScatter => "matmul_reduce_scatter",
            Kind::MatmulAllReduce => "matmul_all_reduce",
        }
    }
}

/// A matched collective: the operator, the GEMM's global M and its
/// (local) K and N, and the element type.
struct Found {
    kind: Kind,
    m: i64,
    k: i64,
    n: i64,
    element: String,
}

impl Found {
    fn describe(&self) -> String {
        let (m, k, n) = (self.m, self.k, self.n);
        match self.kind {
            Kind::AllGatherMatmul => format!(
                "of A feeds a dot_general: all-gather + GEMM, A [{m}, {k}] gathered by rows, C [{m}, {n}] per rank"
            ),
            Kind::MatmulReduceScatter => format!(
                "of a dot_general's partial sums: GEMM + reduce-scatter, P [{m}, {n}] (K = {k} per rank) scattered by rows"
            ),
            Kind::MatmulAllReduce => format!(
                "of a dot_general's partial sums: GEMM + all-reduce (two-shot), P [{m}, {n}] (K = {k} per rank)"
            ),
        }
    }

    /// The plan, as `synco.plans` writes it for the repository's GEMMs
    /// (A, B, C are arguments 0, 1, 2; row tiles of `tile` rows).
    fn plan_text(&self, name: &str, world: i64, tile: i64) -> String {
        let (m, k, n, e) = (self.m, self.k, self.n, &self.element);
        let head = format!("chunk.plan @{name} world_size({world}) {{\n");
        let body = match self.kind {
            // (C, the product, is any tensor: no buffer of the plan.)
            Kind::AllGatherMatmul => format!(
                "  chunk.buffer @A : !chunk.buffer<{m}x{k}x{e}> bind(0)\n\
                 \x20 chunk.all_gather @A dim(0) chunks(auto) backend(auto)\n\
                 \x20 chunk.consume @A dim(0) tile({tile}) index(\"pid_m\")\n"
            ),
            Kind::MatmulReduceScatter | Kind::MatmulAllReduce => {
                let (rows, collective) = if self.kind == Kind::MatmulReduceScatter {
                    (
                        m / world,
                        "reduce_scatter @P into @C dim(0) chunks(auto) backend(auto)",
                    )
                } else {
                    (
                        m,
                        "all_reduce @P into @C dim(0) chunks(auto) backend(auto) algorithm(two_shot)",
                    )
                };
                format!(
                    "  chunk.buffer @P : !chunk.buffer<{m}x{n}x{e}> bind(2)\n\
                     \x20 chunk.buffer @C : !chunk.buffer<{rows}x{n}x{e}>\n\
                     \x20 chunk.produce @tiles @P dim(0) tile({tile}) index(\"pid_m\")\n\
                     \x20 chunk.{collective}\n"
                )
            }
        };
        format!("{head}{body}}}\n")
    }
}

/// What collective `op` and the matrix product beside it make, or why
/// they make nothing Synco fuses.
fn matched(op: Op, world: i64) -> Result<Found, String> {
    check_whole_world(op, world)?;
    match ir::op_name(op).as_str() {
        "stablehlo.all_gather" => gathered_operand(op, world),
        "stablehlo.reduce_scatter" | "stablehlo.all_reduce" => reduced_product(op, world),
        other => Err(format!("{other} is not imported")),
    }
}

/// A warning at each op besides the fused product that reads an imported
/// all_gather's result: the plan fuses the gather into one kernel, whose
/// gathered operand the others read only once it is done.
fn report_other_readers(op: Op, plan: &str) {
    if ir::op_name(op) != "stablehlo.all_gather" {
        return;
    }
    let readers = ir::uses(ir::results(op)[0]);
    let fused = readers
        .iter()
        .position(|(user, index)| ir::op_name(*user) == "stablehlo.dot_general" && *index == 0);
    for (i, (user, _)) in readers.iter().enumerate() {
        if Some(i) != fused {
            Diagnostic::warning(
                loc(*user),
                format!(
                    "{NAME}: this {} also reads the all_gather that plan @{plan} fuses into one dot_general's kernel: it is not fused, and reads the gathered operand after that kernel",
                    ir::op_name(*user).trim_start_matches("stablehlo.")
                ),
            )
            .emit();
        }
    }
}

/// Refuses a plan whose tiles of `tile` rows (the pass option `option`)
/// would not cut each rank's `rows` into whole tiles: a tile waits for one
/// chunk, so it cannot span two ranks' rows.
fn whole_tiles(rows: i64, tile: i64, option: &str) -> Result<(), String> {
    if tile > 0 && rows % tile == 0 {
        return Ok(());
    }
    Err(format!(
        "each rank's {rows} rows are not whole tiles of {tile} (option {option}): a tile would span two ranks' rows"
    ))
}

/// Refuses replica groups other than one group of every device.
fn check_whole_world(op: Op, world: i64) -> Result<(), String> {
    let Some(groups) = ir::attr(op, "replica_groups") else {
        return Err("it has no replica_groups".into());
    };
    let text = ir::print_attr(groups);
    let inner = text
        .split_once("dense<")
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(values, _)| values)
        .unwrap_or_default();
    let ids: Vec<i64> = inner
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .filter_map(|t| t.parse().ok())
        .collect();
    let one_group = inner.matches('[').count() <= 2;
    if one_group && ids.len() as i64 == world && (0..world).all(|i| ids.contains(&i)) {
        Ok(())
    } else {
        Err(format!(
            "its replica groups {inner} are not one group of all {world} devices: a plan spans the whole world"
        ))
    }
}

/// An all-gather along the rows of a dot_general's left operand.
fn gathered_operand(op: Op, world: i64) -> Result<Found, String> {
    let gathered = ir::results(op)[0];
    let dim = ir::attr(op, "all_gather_dim")
        .and_then(ir::int_value)
        .ok_or("it has no all_gather_dim")?;
    let Some((dot, _)) = ir::uses(gathered)
        .into_iter()
        .find(|(user, index)| ir::op_name(*user) == "stablehlo.dot_general" && *index == 0)
    else {
        return Err("its result is the left operand of no dot_general".into());
    };
    let (a, e) = tensor_of(gathered).ok_or("its result is not a ranked tensor")?;
    let (c, _) = tensor_of(ir::results(dot)[0]).ok_or("the product is not a ranked tensor")?;
    check_plain_matmul(dot)?;
    if a.len() != 2 || dim != 0 {
        return Err(format!(
            "it gathers dimension {dim} of a rank-{} operand; only the rows of a matrix (dimension 0) are fused",
            a.len()
        ));
    }
    if a[0] % world != 0 {
        return Err(format!(
            "its {} rows do not divide among {world} ranks",
            a[0]
        ));
    }
    Ok(Found {
        kind: Kind::AllGatherMatmul,
        m: a[0],
        k: a[1],
        n: c[1],
        element: e,
    })
}

/// A reduce-scatter (by rows) or all-reduce of a dot_general's result,
/// summing.
fn reduced_product(op: Op, world: i64) -> Result<Found, String> {
    let partial = ir::operands(op)[0];
    let dot = ir::defining_op(partial)
        .filter(|d| ir::op_name(*d) == "stablehlo.dot_general")
        .ok_or("its operand is no dot_general's result")?;
    check_plain_matmul(dot)?;
    let sums = ir::walk(op)
        .into_iter()
        .filter(|o| !ir::same_op(*o, op))
        .map(ir::op_name)
        .filter(|n| n != "stablehlo.return")
        .collect::<Vec<_>>();
    if sums != ["stablehlo.add"] {
        return Err(format!(
            "its reduction is {sums:?}, not a sum (stablehlo.add)"
        ));
    }
    let (p, e) = tensor_of(partial).ok_or("the product is not a ranked tensor")?;
    let (lhs, _) =
        tensor_of(ir::operands(dot)[0]).ok_or("the left operand is not a ranked tensor")?;
    let reduce_scatter = ir::op_name(op) == "stablehlo.reduce_scatter";
    if reduce_scatter {
        let dim = ir::attr(op, "scatter_dimension").and_then(ir::int_value);
        if dim != Some(0) {
            return Err(format!(
                "it scatters dimension {}; only the rows (dimension 0) are fused",
                dim.map_or("?".into(), |d| d.to_string())
            ));
        }
    }
    if p[0] % world != 0 {
        return Err(format!(
            "the product's {} rows do not divide among {world} ranks",
            p[0]
        ));
    }
    Ok(Found {
        kind: if reduce_scatter {
            Kind::MatmulReduceScatter
        } else {
            Kind::MatmulAllReduce
        },
        m: p[0],
        k: lhs[1],
        n: p[1],
        element: e,
    })
}

/// Refuses a dot_general that is not a plain matrix product (rank-2
/// operands, the left's columns against the right's rows, no batch).
fn check_plain_matmul(dot: Op) -> Result<(), String> {
    let numbers = ir::attr(dot, "dot_dimension_numbers")
        .map(ir::print_attr)
        .unwrap_or_default();
    let plain = numbers.contains("lhs_contracting_dimensions = [1]")
        && numbers.contains("rhs_contracting_dimensions = [0]")
        && !numbers.contains("batching_dimensions");
    let ranks: Vec<usize> = ir::operands(dot)
        .into_iter()
        .filter_map(tensor_of)
        .map(|(shape, _)| shape.len())
        .collect();
    if plain && ranks == [2, 2] {
        Ok(())
    } else {
        Err(format!(
            "its dot_general is not a plain matrix product ({numbers}; operand ranks {ranks:?})"
        ))
    }
}

/// `tensor<1024x512xbf16>` as (`[1024, 512]`, `bf16`).
/// (A dynamic dimension gives `None`.)
fn tensor_of(value: Value) -> Option<(Vec<i64>, String)> {
    let ty = ir::type_of(value);
    let shape = ir::tensor_shape(ty).filter(|dims| dims.iter().all(|d| *d >= 0))?;
    Some((shape, ir::print_type(ir::tensor_element(ty)?)))
}
