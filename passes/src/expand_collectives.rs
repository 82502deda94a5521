//! `chunk-expand-collectives`: turn collectives into explicit transfers.
//!
//! Each collective of a `chunk.plan` becomes the `chunk.transfer` ops that
//! implement it, in one `group` (so the plan verifier checks their
//! coverage), and the collective is erased.
//!
//! `all_gather @A dim(d) chunks(n)` with the `direct` algorithm: rank `r`
//! owns block `r` of `A` along `d` (`B = A.shape[d] / W` rows). Each block
//! splits into `n` chunks of `B / n` rows. Rank `r` receives, in this order
//! (`order` = position):
//!
//! 1. its own block's `n` chunks, as `local` transfers (already in place;
//!    they mark the rank's rows available first);
//! 2. then the blocks of ranks `r+1, r+2, ..., r+W-1` (mod `W`), `n` chunks
//!    each, as `pull` transfers from their owner with the collective's
//!    backend.
//!
//! Transfers are named `@<buffer>_p<k>_c<c>`: chunk `c` of the block of rank
//! `r + k`. `all_to_all @X into @Y dim(d) chunks(n)` expands the same way,
//! with block `r` of the peer's `X` landing in block `peer` of `Y`.
//!
//! Options: none.
//! Preconditions: every collective has an explicit chunk count (run
//! `chunk-select-chunk-size` for `chunks(auto)`); algorithm `direct`.
//! Postconditions: no collective ops remain in plans; the plans verify.
//! Not yet supported (refused with an error): `ring`, `reduce_scatter`,
//! `all_reduce`.

use crate::plan::{Plan, fail, plans};
use synco_chunk::{PassDescriptor, PassFailed, attrs};
use synco_ir::{self as ir, Builder, Op};

pub static PASS: PassDescriptor = PassDescriptor {
    argument: "chunk-expand-collectives",
    description: "Expand chunk collectives (all_gather, all_to_all) into explicit chunk.transfer ops",
    anchor: "builtin.module",
    options: &[],
    run,
};

fn run(module: melior::ir::operation::OperationRef, _options: &[&str]) -> Result<(), PassFailed> {
    for plan in plans(module.to_raw()) {
        for op in plan.body_ops() {
            match ir::op_name(op).as_str() {
                "chunk.all_gather" => expand_gather(&plan, op, false)?,
                "chunk.all_to_all" => expand_gather(&plan, op, true)?,
                name @ ("chunk.reduce_scatter" | "chunk.all_reduce") => {
                    return Err(fail(
                        op,
                        format!(
                            "chunk-expand-collectives: {name} is not supported yet; write its transfers explicitly"
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn expand_gather(plan: &Plan, op: Op, all_to_all: bool) -> Result<(), PassFailed> {
    let algorithm = ir::int_attr(op, "algorithm").and_then(attrs::Algorithm::from_value);
    if algorithm != Some(attrs::Algorithm::Direct) {
        return Err(fail(
            op,
            format!(
                "chunk-expand-collectives: algorithm '{}' is not supported yet; use 'direct'",
                algorithm.map_or("?", |a| a.keyword())
            ),
        ));
    }
    let Some(chunks) = ir::int_attr(op, "chunks") else {
        return Err(fail(
            op,
            "chunk-expand-collectives: chunks(auto) has no count yet; run chunk-select-chunk-size first",
        ));
    };
    let (src_name, dst_name) = if all_to_all {
        (
            ir::attr(op, "src").and_then(ir::symbol_value),
            ir::attr(op, "dst").and_then(ir::symbol_value),
        )
    } else {
        let b = ir::attr(op, "buffer").and_then(ir::symbol_value);
        (b.clone(), b)
    };
    let (Some(src_name), Some(dst_name)) = (src_name, dst_name) else {
        return Err(fail(op, "chunk-expand-collectives: malformed collective"));
    };
    let Some(buffer) = plan.buffer(&dst_name) else {
        return Err(fail(
            op,
            format!("chunk-expand-collectives: no buffer @{dst_name}"),
        ));
    };
    let dim = ir::int_attr(op, "dim").unwrap_or(0) as usize;
    let w = plan.world_size;
    let block = buffer.shape[dim] / w;
    let rows = block / chunks;
    let backend = ir::int_attr(op, "backend")
        .and_then(attrs::Backend::from_value)
        .unwrap_or(attrs::Backend::CopyEngine);
    let group = if all_to_all {
        format!("all_to_all_{dst_name}")
    } else {
        format!("all_gather_{dst_name}")
    };
    let ctx = ir::context_of(op);
    let b = Builder::before(op);
    // Offsets along `dim` for chunk `c` of block `owner`; 0 elsewhere.
    let offsets = |owner: &str, c: i64| -> Vec<String> {
        (0..buffer.shape.len())
            .map(|d| {
                if d == dim {
                    format!("({owner}) * {block} + {}", c * rows)
                } else {
                    "0".into()
                }
            })
            .collect()
    };
    let mut sizes = buffer.shape.clone();
    sizes[dim] = rows;
    let sizes_text = sizes
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let region = |buf: &str, offsets: Vec<String>| {
        ir::parse_attr(
            ctx,
            &format!(
                "#chunk.region<@{buf}[(r) -> ({})] [{sizes_text}]>",
                offsets.join(", ")
            ),
        )
    };
    let rank_map = |expr: &str| ir::parse_attr(ctx, &format!("affine_map<(r) -> ({expr})>"));
    let i32t = ir::i32_type(ctx);
    let i64t = ir::i64_type(ctx);
    for k in 0..w {
        let peer = if k == 0 {
            "r".to_string()
        } else {
            format!("(r + {k}) mod {w}")
        };
        for c in 0..chunks {
            // all_gather: the peer's block `peer` of A into the same place.
            // all_to_all: block `r` of the peer's X into block `peer` of Y.
            let (src, dst) = if all_to_all {
                (
                    region(&src_name, offsets("r", c)),
                    region(&dst_name, offsets(&peer, c)),
                )
            } else {
                (
                    region(&src_name, offsets(&peer, c)),
                    region(&dst_name, offsets(&peer, c)),
                )
            };
            let (Some(src), Some(dst), Some(src_rank), Some(dst_rank)) =
                (src, dst, rank_map(&peer), rank_map("r"))
            else {
                return Err(fail(
                    op,
                    "chunk-expand-collectives: internal error building a region",
                ));
            };
            let mode = if k == 0 && !all_to_all {
                attrs::TransferMode::Local
            } else {
                attrs::TransferMode::Pull
            };
            let mode = if k == 0 && all_to_all {
                attrs::TransferMode::Local
            } else {
                mode
            };
            let backend = if mode == attrs::TransferMode::Local {
                attrs::Backend::CopyEngine
            } else {
                backend
            };
            b.op(
                "chunk.transfer",
                &[],
                &[],
                &[
                    (
                        "sym_name",
                        ir::string_attr(ctx, &format!("{dst_name}_p{k}_c{c}")),
                    ),
                    ("mode", ir::int_attr_of(i32t, mode as i64)),
                    ("backend", ir::int_attr_of(i32t, backend as i64)),
                    ("src", src),
                    ("src_rank", src_rank),
                    ("dst", dst),
                    ("dst_rank", dst_rank),
                    ("order", ir::int_attr_of(i64t, k * chunks + c)),
                    ("group", ir::string_attr(ctx, &group)),
                ],
            );
        }
    }
    ir::erase(op);
    Ok(())
}
