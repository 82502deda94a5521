//! Values a kernel computes from its program ids and arguments that must
//! stay within a plan buffer, as integer expressions the runtime
//! evaluates over each launch: an attention's head offset `off_z *
//! stride_kz + off_h * stride_kh` (its head `off_h = program_id(1) % H`
//! comes from the grid and the arguments the caller passes), or the last
//! row a causal stage's loop reads, `N_CTX_KV - N_CTX_Q + (start_m + 1) *
//! BLOCK_M`.

use serde::{Deserialize, Serialize};

/// An integer the kernel computes from its program ids and scalar
/// arguments (`arith` on `tt.get_program_id`, `tt.get_num_programs`, its
/// arguments and constants). Evaluated in i64 with checked arithmetic;
/// division and remainder truncate toward zero, as `arith.divsi` and
/// `arith.remsi` do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexExpr {
    Const(i64),
    /// The kernel's argument at this index (a descriptor's parts count).
    Arg(usize),
    ProgramId(usize),
    NumPrograms(usize),
    Add(Box<IndexExpr>, Box<IndexExpr>),
    Sub(Box<IndexExpr>, Box<IndexExpr>),
    Mul(Box<IndexExpr>, Box<IndexExpr>),
    Div(Box<IndexExpr>, Box<IndexExpr>),
    Rem(Box<IndexExpr>, Box<IndexExpr>),
    Min(Box<IndexExpr>, Box<IndexExpr>),
    Max(Box<IndexExpr>, Box<IndexExpr>),
}

/// What [`IndexExpr::eval`] reads: a program's ids, the grid, and the
/// launch's integer arguments by index.
pub struct Program<'a> {
    pub id: [i64; 3],
    pub grid: [i64; 3],
    pub arg: &'a dyn Fn(usize) -> Option<i64>,
}

impl IndexExpr {
    /// The value on `program`; `None` where an argument is not an integer
    /// or the arithmetic overflows or divides by zero.
    pub fn eval(&self, program: &Program) -> Option<i64> {
        use IndexExpr as E;
        let both = |a: &E, b: &E| Some((a.eval(program)?, b.eval(program)?));
        match self {
            E::Const(c) => Some(*c),
            E::Arg(i) => (program.arg)(*i),
            E::ProgramId(axis) => program.id.get(*axis).copied(),
            E::NumPrograms(axis) => program.grid.get(*axis).copied(),
            E::Add(a, b) => both(a, b).and_then(|(x, y)| x.checked_add(y)),
            E::Sub(a, b) => both(a, b).and_then(|(x, y)| x.checked_sub(y)),
            E::Mul(a, b) => both(a, b).and_then(|(x, y)| x.checked_mul(y)),
            E::Div(a, b) => both(a, b).and_then(|(x, y)| x.checked_div(y)),
            E::Rem(a, b) => both(a, b).and_then(|(x, y)| x.checked_rem(y)),
            E::Min(a, b) => both(a, b).map(|(x, y)| x.min(y)),
            E::Max(a, b) => both(a, b).map(|(x, y)| x.max(y)),
        }
    }

    /// Whether the value depends on program id `axis`.
    pub fn uses_program_id(&self, axis: usize) -> bool {
        use IndexExpr as E;
        match self {
            E::ProgramId(a) => *a == axis,
            E::Const(_) | E::Arg(_) | E::NumPrograms(_) => false,
            E::Add(a, b)
            | E::Sub(a, b)
            | E::Mul(a, b)
            | E::Div(a, b)
            | E::Rem(a, b)
            | E::Min(a, b)
            | E::Max(a, b) => a.uses_program_id(axis) || b.uses_program_id(axis),
        }
    }
}

/// A value the kernel computes (`value`) that must be within
/// `lowest..=highest` on every program of a launch, or it would address
/// plan buffer `buffer` outside what the plan holds: `what` says which
/// value it is, for the runtime's message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexBound {
    pub buffer: String,
    pub what: String,
    pub value: IndexExpr,
    pub lowest: i64,
    pub highest: i64,
}

/// The most programs whose values the runtime evaluates for one bound on
/// one launch (the grid along the axes the value depends on): beyond, it
/// evaluates the corners and the middle of that grid only.
pub const MAX_EVALUATED_PROGRAMS: i64 = 1 << 16;

impl IndexBound {
    /// The first program of a launch on `grid` (ids along the axes the
    /// value uses, others 0) whose value is outside `lowest..=highest` or
    /// cannot be evaluated, with its value (`None`: not evaluated).
    pub fn violation(
        &self,
        grid: [i64; 3],
        arg: &dyn Fn(usize) -> Option<i64>,
    ) -> Option<([i64; 3], Option<i64>)> {
        let ranges: Vec<Vec<i64>> = (0..3)
            .map(|axis| {
                let n = grid[axis].max(1);
                if !self.value.uses_program_id(axis) {
                    vec![0]
                } else if grid.iter().product::<i64>() <= MAX_EVALUATED_PROGRAMS {
                    (0..n).collect()
                } else {
                    vec![0, 1, n / 2, n - 2, n - 1]
                        .into_iter()
                        .filter(|i| (0..n).contains(i))
                        .collect()
                }
            })
            .collect();
        for &x in &ranges[0] {
            for &y in &ranges[1] {
                for &z in &ranges[2] {
                    let id = [x, y, z];
                    let program = Program { id, grid, arg };
                    match self.value.eval(&program) {
                        Some(v) if (self.lowest..=self.highest).contains(&v) => {}
                        other => return Some((id, other)),
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IndexExpr as E;

    fn b(e: E) -> Box<E> {
        Box::new(e)
    }

    /// `(pid(1) % H) // (H // H_KV) * stride_kh`: the KV head of a query
    /// head, times a head's elements (args 0, 1, 2).
    fn kv_head_offset() -> IndexBound {
        let head = E::Rem(b(E::ProgramId(1)), b(E::Arg(0)));
        let group = E::Div(b(E::Arg(0)), b(E::Arg(1)));
        IndexBound {
            buffer: "K".into(),
            what: "the element its head starts at".into(),
            value: E::Mul(b(E::Div(b(head), b(group))), b(E::Arg(2))),
            lowest: 0,
            highest: 3 * 1024,
        }
    }

    #[test]
    fn a_launch_within_the_buffer_passes_and_one_past_it_names_a_program() {
        let bound = kv_head_offset();
        // 32 query heads over 4 KV heads of 1024 elements: heads 0..=3.
        let args = |i: usize| [32, 4, 1024].get(i).copied();
        assert_eq!(bound.violation([8, 32, 1], &args), None);
        // 8 KV heads claimed: query head 16 reads KV head 4, past the 4.
        let wrong = |i: usize| [32, 8, 1024].get(i).copied();
        assert_eq!(
            bound.violation([8, 32, 1], &wrong),
            Some(([0, 16, 0], Some(4096)))
        );
        // A division by zero is not evaluated, and refused.
        let zero = |i: usize| [32, 64, 1024].get(i).copied();
        assert_eq!(bound.violation([8, 32, 1], &zero), Some(([0, 0, 0], None)));
    }

    #[test]
    fn large_grids_are_evaluated_at_their_corners_and_middle() {
        let bound = IndexBound {
            buffer: "K".into(),
            what: "a row".into(),
            value: E::Mul(b(E::ProgramId(0)), b(E::Const(2))),
            lowest: 0,
            highest: 2 * 99_999,
        };
        assert_eq!(bound.violation([100_000, 1, 1], &|_| None), None);
        assert_eq!(
            bound.violation([100_001, 1, 1], &|_| None),
            Some(([100_000, 0, 0], Some(200_000)))
        );
    }
}
