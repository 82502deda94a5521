//! Affine maps (a transfer's rank maps and region offsets) lowered to the
//! copy programs' own i32 arithmetic ([`emit_affine`]), with MLIR's affine
//! semantics and a bound on every value, so that no rank's value silently
//! leaves 32 bits.

use melior::ir::{AffineExpr, AffineMap};
use synco_ir::{Builder, Value, builder::Cmp};

/// Emits `map` (one dimension, no symbols: a rank map or a region's
/// offsets) at `rank` as i32 arithmetic with MLIR's affine semantics, as
/// the plan verifier evaluated it: `mod` is never negative, `floordiv` and
/// `ceildiv` round down and up. A verified map divides only by positive
/// constants. Each subexpression's range over ranks `0..world_size` is
/// bounded first: where a dividend cannot be negative, `mod` and
/// `floordiv` are a plain `remsi` / `divsi`; else a `select` corrects the
/// truncating result (so `(r - 1) mod W` on rank 0 is `W - 1`, not -1). A
/// map with a value that may leave i32 on some rank is refused, naming it.
pub fn emit_affine(
    b: &Builder,
    map: AffineMap,
    rank: Value,
    world_size: i64,
) -> Result<Vec<Value>, String> {
    let ranks = Range {
        lo: 0,
        hi: i128::from(world_size) - 1,
    };
    (0..map.result_count())
        .map(|i| {
            let expr = map.result(i).map_err(|e| e.to_string())?;
            Ok(emit_expr(b, expr, rank, ranks)?.0)
        })
        .collect()
}

/// The values an affine expression takes over a range of ranks, bounded
/// (`lo <= value <= hi`; the bounds may be loose, never wrong).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    lo: i128,
    hi: i128,
}

impl Range {
    /// The smallest range holding the four `values`.
    fn hull(values: [i128; 4]) -> Range {
        Range {
            lo: values.into_iter().fold(i128::MAX, i128::min),
            hi: values.into_iter().fold(i128::MIN, i128::max),
        }
    }
}

/// `expr` at `rank`, and the range of its values over `ranks`.
fn emit_expr(
    b: &Builder,
    expr: AffineExpr,
    rank: Value,
    ranks: Range,
) -> Result<(Value, Range), String> {
    let (value, range) = emit_unchecked(b, expr, rank, ranks)?;
    let fits = |v: i128| i32::try_from(v).is_ok();
    if !fits(range.lo) || !fits(range.hi) {
        return Err(format!(
            "`{expr}` may reach {} on ranks 0 to {}, beyond the 32-bit arithmetic of the copy code",
            if fits(range.lo) { range.hi } else { range.lo },
            ranks.hi
        ));
    }
    Ok((value, range))
}

fn emit_unchecked(
    b: &Builder,
    expr: AffineExpr,
    rank: Value,
    ranks: Range,
) -> Result<(Value, Range), String> {
    if expr.is_constant() {
        let c = expr.constant_value();
        let c128 = i128::from(c);
        return Ok((b.const_i32(c), Range { lo: c128, hi: c128 }));
    }
    if expr.is_dim() {
        return Ok((rank, ranks));
    }
    if !expr.is_binary() {
        return Err(format!(
            "`{expr}` has a symbol; rank maps and offsets have none"
        ));
    }
    let (lhs, l) = emit_expr(b, expr.lhs(), rank, ranks)?;
    let (rhs, r) = emit_expr(b, expr.rhs(), rank, ranks)?;
    if expr.is_add() {
        return Ok((
            b.addi(lhs, rhs),
            Range {
                lo: l.lo + r.lo,
                hi: l.hi + r.hi,
            },
        ));
    }
    if expr.is_mul() {
        let products = [l.lo * r.lo, l.lo * r.hi, l.hi * r.lo, l.hi * r.hi];
        return Ok((b.muli(lhs, rhs), Range::hull(products)));
    }
    // Without symbols a divisor is a constant, and the verifier refused
    // every plan whose divisor is not positive.
    let divisor = if expr.rhs().is_constant() {
        i128::from(expr.rhs().constant_value())
    } else {
        0
    };
    if divisor <= 0 {
        return Err(format!(
            "`{expr}` divides by a value that is not a positive constant"
        ));
    }
    let non_negative = l.lo >= 0;
    let zero = || b.const_i32(0);
    let one = || b.const_i32(1);
    if expr.is_mod() {
        let rem = b.remsi(lhs, rhs);
        let range = if non_negative && l.hi < divisor {
            l
        } else {
            Range {
                lo: 0,
                hi: divisor - 1,
            }
        };
        if non_negative {
            return Ok((rem, range));
        }
        let negative = b.cmpi(Cmp::Slt, rem, zero());
        return Ok((b.select(negative, b.addi(rem, rhs), rem), range));
    }
    let floor = |v: i128| v.div_euclid(divisor);
    let ceil = |v: i128| -(-v).div_euclid(divisor);
    if expr.is_floor_div() {
        let quotient = b.divsi(lhs, rhs);
        let range = Range {
            lo: floor(l.lo),
            hi: floor(l.hi),
        };
        if non_negative {
            return Ok((quotient, range));
        }
        let below = b.cmpi(Cmp::Slt, b.remsi(lhs, rhs), zero());
        return Ok((b.select(below, b.subi(quotient, one()), quotient), range));
    }
    if expr.is_ceil_div() {
        let quotient = b.divsi(lhs, rhs);
        let above = b.cmpi(Cmp::Sgt, b.remsi(lhs, rhs), zero());
        let range = Range {
            lo: ceil(l.lo),
            hi: ceil(l.hi),
        };
        return Ok((b.select(above, b.addi(quotient, one()), quotient), range));
    }
    Err(format!(
        "`{expr}` is not an affine operation the copy code lowers"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::{
        ir::{Attribute, Module},
        pass::{PassManager, transform::create_canonicalizer},
    };
    use synco_chunk::attrs;
    use synco_ir as ir;

    /// What the code `emit_affine` builds for `map` on 8 ranks computes on
    /// `rank` (or why it refused the map): the code is built in a function
    /// returning it, with a constant rank, and folded by the canonicalizer
    /// to the constant it returns.
    fn emitted_value(map: &str, rank: i64) -> Result<Option<i64>, String> {
        let context = synco_chunk::create_context();
        let module = Module::parse(
            &context,
            "func.func @f() -> i32 {\n  %rank = arith.constant 0 : i32\n  return %rank : i32\n}",
        )
        .expect("parses");
        let attribute = Attribute::parse(&context, &format!("affine_map<{map}>")).expect("a map");
        let map = attrs::affine_map_of(attribute).expect("an affine map");
        let module_op = module.as_operation().to_raw();
        let ret = ir::find_all(module_op, "func.return")[0];
        let b = Builder::before(ret);
        let rank = b.const_i32(rank);
        let [value] = emit_affine(&b, map, rank, 8)?[..] else {
            panic!("one result")
        };
        ir::set_operand(ret, 0, value);
        let passes = PassManager::new(&context);
        passes.add_pass(create_canonicalizer());
        let mut module = module;
        passes.run(&mut module).expect("canonicalizes");
        let ret = ir::find_all(module.as_operation().to_raw(), "func.return")[0];
        Ok(ir::constant_int(ir::operands(ret)[0]))
    }

    #[test]
    fn maps_beyond_32_bits_are_refused() {
        // 7 * 2^28 fits in i32; 7 * 2^29 does not, even where the result
        // would (a mod brings it back).
        assert_eq!(
            emitted_value("(d0) -> (d0 * 268435456)", 7),
            Ok(Some(7 << 28))
        );
        for map in [
            "(d0) -> (d0 * 536870912)",
            "(d0) -> ((d0 * 536870912) mod 3)",
            "(d0) -> (d0 - 2147483649)",
        ] {
            let why = emitted_value(map, 0).expect_err(map);
            assert!(why.contains("beyond the 32-bit arithmetic"), "{map}: {why}");
        }
    }

    #[test]
    fn emitted_affine_code_computes_what_the_verifier_evaluates() {
        let context = synco_chunk::create_context();
        for map in [
            "(d0) -> ((d0 + 1) mod 4)",
            "(d0) -> ((d0 - 1) mod 4)",
            "(d0) -> ((d0 * 3 - 7) mod 4)",
            "(d0) -> (((d0 - 5) floordiv 2) * 64)",
            "(d0) -> ((d0 - 5) ceildiv 2)",
            "(d0) -> (d0 ceildiv 3)",
            "(d0) -> (d0 floordiv 3 + 1)",
            "(d0) -> (((d0 + 3) mod 4) * 256 + 64)",
        ] {
            let attribute =
                Attribute::parse(&context, &format!("affine_map<{map}>")).expect("a map");
            let parsed = attrs::affine_map_of(attribute).expect("an affine map");
            for rank in 0..8 {
                let expected = attrs::evaluate_on_rank(parsed, rank).expect("evaluates")[0];
                assert_eq!(
                    emitted_value(map, rank),
                    Ok(Some(expected)),
                    "{map} on rank {rank}"
                );
            }
        }
    }
}
