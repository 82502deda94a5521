//! Ulysses attention in a StableHLO module: all-to-alls that re-shard Q,
//! K and V from tokens to heads (`[S/W, H, D]`, split along the heads,
//! concatenated along the tokens) feeding an attention's two products
//! (the scores, Q against K; then the values), and, if there is one, the
//! all-to-all that takes its output back by tokens.

use super::tensor_of;
use synco_ir::{self as ir, Op, Value};

/// A matched Ulysses attention: its all-to-alls (Q's first) and shape.
pub(super) struct Ulysses {
    pub all_to_alls: Vec<Op>,
    /// The output's all-to-all back by tokens, if any.
    pub reshards_out: bool,
    pub seq: i64,
    pub heads: i64,
    pub kv_heads: i64,
    pub head_dim: i64,
    pub element: String,
}

/// Ops that only reshape or convert a value (a grouped-heads repeat is a
/// `broadcast_in_dim` and a `reshape`).
const SHAPE_OPS: [&str; 4] = [
    "stablehlo.broadcast_in_dim",
    "stablehlo.reshape",
    "stablehlo.convert",
    "stablehlo.transpose",
];

/// The op `value` comes from, looking through [`SHAPE_OPS`].
fn source(value: Value) -> Option<Op> {
    let mut op = ir::defining_op(value)?;
    while SHAPE_OPS.contains(&ir::op_name(op).as_str()) {
        op = ir::defining_op(*ir::operands(op).first()?)?;
    }
    Some(op)
}

/// Whether `op` is an all_to_all of a rank-3 tensor that splits dimension
/// `split` and concatenates along `concat`.
fn is_all_to_all(op: Op, split: i64, concat: i64) -> bool {
    let dims = |key| ir::attr(op, key).and_then(ir::int_value);
    ir::op_name(op) == "stablehlo.all_to_all"
        && dims("split_dimension") == Some(split)
        && dims("concat_dimension") == Some(concat)
        && ir::operands(op)
            .first()
            .and_then(|v| tensor_of(*v))
            .is_some_and(|(shape, _)| shape.len() == 3)
}

/// Whether `value` is computed from `op`'s results (a walk back through
/// operands, of at most a few thousand ops).
fn depends_on(value: Value, op: Op) -> bool {
    let mut stack = vec![value];
    let mut seen = 0;
    while let Some(v) = stack.pop() {
        let Some(def) = ir::defining_op(v) else {
            continue;
        };
        if ir::same_op(def, op) {
            return true;
        }
        seen += 1;
        if seen > 4096 {
            return false;
        }
        stack.extend(ir::operands(def));
    }
    false
}

/// Every Ulysses attention of `module` (see the module docs), for `world`
/// ranks: for each product of two tokens-to-heads all-to-alls (Q, K), the
/// product of a third (V) with something computed from the first, and the
/// heads-to-tokens all-to-all of that second product, if any.
pub(super) fn find(module: Op, world: i64) -> Vec<Result<Ulysses, (Op, String)>> {
    let dots = ir::find_all(module, "stablehlo.dot_general");
    let all_to_alls = ir::find_all(module, "stablehlo.all_to_all");
    let mut found = Vec::new();
    for &scores in &dots {
        let operands = ir::operands(scores);
        let (Some(q), Some(k)) = (
            operands.first().and_then(|v| source(*v)),
            operands.get(1).and_then(|v| source(*v)),
        ) else {
            continue;
        };
        if !is_all_to_all(q, 1, 0) || !is_all_to_all(k, 1, 0) {
            continue;
        }
        let values = dots.iter().copied().find_map(|dot| {
            let ops = ir::operands(dot);
            let (a, b) = (*ops.first()?, *ops.get(1)?);
            [(a, b), (b, a)].into_iter().find_map(|(v, p)| {
                let v = source(v).filter(|v| is_all_to_all(*v, 1, 0))?;
                depends_on(p, scores).then_some((dot, v))
            })
        });
        let Some((product, v)) = values else {
            found.push(Err((
                q,
                "it feeds a product of two re-sharded operands (attention's scores?), but no product of a third with them (the values) follows".into(),
            )));
            continue;
        };
        let out = all_to_alls.iter().copied().find(|o| {
            is_all_to_all(*o, 0, 1)
                && ir::operands(*o)
                    .first()
                    .and_then(|x| source(*x))
                    .is_some_and(|s| ir::same_op(s, product))
        });
        found.push(shape_of(world, [q, k, v], out));
    }
    found
}

/// The attention's shape from its all-to-alls' operands (`[S/W, H, D]`),
/// or why it does not divide among the ranks.
fn shape_of(world: i64, [q, k, v]: [Op; 3], out: Option<Op>) -> Result<Ulysses, (Op, String)> {
    let input = |op: Op| ir::operands(op).first().and_then(|x| tensor_of(*x));
    let (Some((qs, element)), Some((ks, _)), Some((vs, _))) = (input(q), input(k), input(v)) else {
        return Err((q, "its operands are not ranked tensors".into()));
    };
    let (tokens, heads, head_dim, kv_heads) = (qs[0], qs[1], qs[2], ks[1]);
    if ks != vs || ks[0] != tokens || ks[2] != head_dim {
        return Err((
            q,
            format!(
                "Q {qs:?}, K {ks:?} and V {vs:?} are not [tokens, heads, head_dim] of one sequence and head size"
            ),
        ));
    }
    if heads % world != 0 || kv_heads % world != 0 || heads % kv_heads != 0 {
        return Err((
            q,
            format!(
                "{heads} query and {kv_heads} key/value heads: each must divide among {world} ranks, and the key/value heads the query heads"
            ),
        ));
    }
    let mut all_to_alls = vec![q, k, v];
    all_to_alls.extend(out);
    Ok(Ulysses {
        all_to_alls,
        reshards_out: out.is_some(),
        seq: tokens * world,
        heads,
        kv_heads,
        head_dim,
        element,
    })
}

impl Ulysses {
    pub fn describe(&self) -> String {
        format!(
            "of Q, K and V feed an attention's products: Ulysses attention, {} tokens, {} query and {} key/value heads of {}{}",
            self.seq,
            self.heads,
            self.kv_heads,
            self.head_dim,
            if self.reshards_out {
                ", its output re-sharded back by tokens"
            } else {
                ""
            }
        )
    }

    /// The plan, as `synco.plans.ulysses_attention` writes it for the
    /// repository's attention kernel (Q, K, V, Out are arguments 0 to 3;
    /// query blocks of `block_m`, key blocks of `block_n`).
    pub fn plan_text(&self, name: &str, world: i64, block_m: i64, block_n: i64) -> String {
        let (seq, d, e) = (self.seq, self.head_dim, &self.element);
        let tokens = seq / world;
        let mut buffers = String::new();
        let mut moves = String::new();
        for (arg, (x, heads)) in [
            ("Q", self.heads),
            ("K", self.kv_heads),
            ("V", self.kv_heads),
        ]
        .into_iter()
        .enumerate()
        {
            let cols = heads * d;
            buffers += &format!(
                "  chunk.buffer @{x}s : !chunk.buffer<{tokens}x{cols}x{e}>\n  chunk.buffer @{x}h : !chunk.buffer<{seq}x{}x{e}> bind({arg})\n",
                cols / world
            );
            moves += &format!(
                "  chunk.all_to_all @{x}s into @{x}h dim(1) chunks(1) to(0) backend(copy_engine)\n"
            );
        }
        if self.reshards_out {
            let cols = self.heads * d;
            buffers += &format!(
                "  chunk.buffer @Oh : !chunk.buffer<{seq}x{}x{e}> bind(3)\n  chunk.buffer @Os : !chunk.buffer<{tokens}x{cols}x{e}>\n",
                cols / world
            );
            moves += &format!(
                "  chunk.produce @tiles @Oh dim(0) tile({block_m})\n  chunk.all_to_all @Oh into @Os dim(0) chunks(1) to(1) backend(copy_engine)\n"
            );
        }
        format!(
            "chunk.plan @{name} world_size({world}) {{\n{buffers}{moves}  chunk.consume @Qh dim(0) tile({block_m})\n  chunk.consume @Kh dim(0) tile({block_n}) loop(\"start_n\")\n  chunk.consume @Vh dim(0) tile({block_n})\n}}\n"
        )
    }
}
