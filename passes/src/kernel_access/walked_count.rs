//! Which of several values a tile index counts its tiles of, where the
//! kernel counts more than one in tiles of the same size: a grouped GEMM
//! with 128x128 blocks computes its row tile from both `cdiv(M, 128)` and
//! `cdiv(N, 128)`, so the arithmetic alone does not say which is M.
//!
//! The kernel's own index arithmetic does: evaluated over every program
//! of a launch that covers the tiles (`tt.get_program_id(0)`, or the loop
//! over tiles of a persistent kernel, from 0 to their product), the tile
//! index walks exactly the plan's `n` tiles when the value it counts holds
//! `n` tiles, whatever the others hold. [`walked_count`] tries each value
//! so, with the others at two different counts, and names the one that
//! passes, if only one does.

use super::axes::root;
use synco_ir::{self as ir, Value};

/// The most programs one trial evaluates the index for.
const MAX_PROGRAMS: i64 = 1 << 16;

/// The others' tile counts in the trials.
const PROBES: [i64; 2] = [3, 5];

/// The index among `counted` (values the kernel counts as `cdiv(x, tile)`
/// on the way to tile index `t`) of the one whose tiles `t` walks, where
/// the plan has `tiles` of them: the only value for which `t` takes every
/// value in `0..tiles` exactly as often on every launch tried.
pub(super) fn walked_count(t: Value, counted: &[Value], tile: i64, tiles: i64) -> Option<usize> {
    let source = program_source(t)?;
    let passes: Vec<usize> = (0..counted.len())
        .filter(|walked| {
            PROBES.iter().all(|probe| {
                let extents: Vec<(Value, i64)> = counted
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (root(*x), tile * if i == *walked { tiles } else { *probe }))
                    .collect();
                let programs = extents
                    .iter()
                    .try_fold(1i64, |n, (_, x)| n.checked_mul(x / tile))
                    .filter(|n| *n <= MAX_PROGRAMS);
                programs.is_some_and(|p| walks_exactly(t, source, &extents, p, tiles))
            })
        })
        .collect();
    match passes[..] {
        [walked] => Some(walked),
        _ => None,
    }
}

/// What `t` counts programs by: the induction variable of a loop over
/// tiles (a persistent kernel's, which starts at the program id), else
/// `tt.get_program_id(0)`; the only one of its kind in `t`'s slice.
fn program_source(t: Value) -> Option<Value> {
    let slice = ir::backward_slice(t);
    let only = |found: Vec<Value>| match found[..] {
        [source] => Some(source),
        _ => None,
    };
    let inductions: Vec<Value> = slice
        .iter()
        .copied()
        .filter(|v| {
            ir::block_arg_number(*v) == Some(0)
                && ir::block_arg_owner(*v)
                    .and_then(ir::block_parent_op)
                    .is_some_and(|op| ir::op_name(op) == "scf.for")
        })
        .collect();
    if !inductions.is_empty() {
        return only(inductions);
    }
    only(
        slice
            .into_iter()
            .filter(|v| {
                ir::defining_op(*v).is_some_and(|op| {
                    ir::op_name(op) == "tt.get_program_id" && ir::int_attr(op, "axis") == Some(0)
                })
            })
            .collect(),
    )
}

/// Whether `t`, for `source` over `0..programs` and `extents` bound,
/// takes each value in `0..tiles` equally often and no other.
fn walks_exactly(
    t: Value,
    source: Value,
    extents: &[(Value, i64)],
    programs: i64,
    tiles: i64,
) -> bool {
    let Ok(slots) = usize::try_from(tiles) else {
        return false;
    };
    let mut hits = vec![0i64; slots];
    for program in 0..programs {
        let mut known: Vec<(Value, i64)> = extents.to_vec();
        known.push((source, program));
        match evaluate(t, &mut known) {
            Some(i) if (0..tiles).contains(&i) => hits[i as usize] += 1,
            _ => return false,
        }
    }
    // (No tiles, or no programs, walk nothing exactly.)
    if tiles <= 0 || programs % tiles != 0 {
        return false;
    }
    let each = programs / tiles;
    each > 0 && hits.iter().all(|h| *h == each)
}

/// The value of scalar integer `v`, given the values `known` (memoised
/// there); `None` for anything but integer arithmetic on known values.
fn evaluate(v: Value, known: &mut Vec<(Value, i64)>) -> Option<i64> {
    if let Some((_, x)) = known.iter().find(|(k, _)| ir::same_value(*k, v)) {
        return Some(*x);
    }
    let op = ir::defining_op(v)?;
    let name = ir::op_name(op);
    if name == "arith.constant" {
        return ir::int_attr(op, "value");
    }
    let mut operands = Vec::new();
    for operand in ir::operands(op) {
        operands.push(evaluate(operand, known)?);
    }
    let x = apply(&name, ir::int_attr(op, "predicate"), &operands)?;
    known.push((v, x));
    Some(x)
}

/// `arith`'s integer op `name` on `operands` (64-bit, checked).
fn apply(name: &str, predicate: Option<i64>, operands: &[i64]) -> Option<i64> {
    let (a, b) = match operands {
        [a] => (*a, 0),
        [a, b, ..] => (*a, *b),
        [] => return None,
    };
    Some(match name.strip_prefix("arith.")? {
        "extsi" | "extui" | "trunci" | "index_cast" => a,
        "addi" => a.checked_add(b)?,
        "subi" => a.checked_sub(b)?,
        "muli" => a.checked_mul(b)?,
        "divsi" | "divui" => a.checked_div(b)?,
        "remsi" | "remui" => a.checked_rem(b)?,
        "ceildivsi" => a.checked_add(b.checked_sub(1)?)?.checked_div(b)?,
        "floordivsi" => a.checked_div_euclid(b)?,
        "minsi" | "minui" => a.min(b),
        "maxsi" | "maxui" => a.max(b),
        "select" => {
            if a != 0 {
                b
            } else {
                *operands.get(2)?
            }
        }
        "cmpi" => i64::from(match predicate? {
            0 => a == b,
            1 => a != b,
            2 | 6 => a < b,
            3 | 7 => a <= b,
            4 | 8 => a > b,
            5 | 9 => a >= b,
            _ => return None,
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn integer_arithmetic_is_checked() {
        assert_eq!(apply("arith.ceildivsi", None, &[129, 128]), Some(2));
        assert_eq!(apply("arith.remsi", None, &[7, 3]), Some(1));
        assert_eq!(apply("arith.minsi", None, &[7, 3]), Some(3));
        assert_eq!(apply("arith.select", None, &[0, 5, 9]), Some(9));
        assert_eq!(apply("arith.cmpi", Some(2), &[1, 2]), Some(1));
        assert_eq!(apply("arith.cmpi", Some(5), &[1, 2]), Some(0));
        // Overflow and division by zero are no value, not a panic.
        assert_eq!(apply("arith.muli", None, &[i64::MAX, 2]), None);
        assert_eq!(apply("arith.divsi", None, &[1, 0]), None);
        assert_eq!(apply("arith.addf", None, &[1, 2]), None);
    }
}
