//! What a launch's bindings must satisfy, checked before anything is issued.
//!
//! The compiler placed the plan's copies and the kernel's remote stores
//! relative to the symmetric buffers the caller binds to the plan's buffers
//! by name. A binding that is missing, smaller than the plan's buffer, or a
//! kernel argument that the plan binds to a buffer (`bind(i)`) but that
//! points elsewhere would make copies and tiles read or write past the
//! buffer, or tiles wait for chunks that land somewhere else: wrong results
//! or a corrupted heap, not an error. [`check`] turns each of those into an
//! error before the launch issues any work, so that no rank runs a launch
//! that another rank refused.

use crate::{
    args::Arg,
    error::{ArgNotBuffer, IndexOutOfBuffer, Result, RuntimeError, ScalarArgMismatch},
    heap::Buffer,
};
use synco_manifest::{FusedPlan, LaunchManifest, Param, ParamRole};

/// The plan's buffers that the launch needs bound, by name, in the plan's
/// order: those the copy schedule reads or writes, those the kernel takes
/// as `synco_buffer_<name>`, and those bound to kernel arguments (the
/// kernel's remote stores find peers' copies of them at the same heap
/// offsets). The kernel's own staging and trace buffers come with it.
fn needed<'a>(m: &'a LaunchManifest, fused: &'a FusedPlan) -> Vec<&'a str> {
    let copied = fused
        .copies
        .iter()
        .flatten()
        .flat_map(|c| [c.src_buffer.as_str(), c.dst_buffer.as_str()]);
    let reduced = fused
        .reduction_copies
        .iter()
        .flatten()
        .flat_map(|c| [c.src_buffer.as_str(), c.dst_buffer.as_str()]);
    let abi = m
        .params
        .iter()
        .filter(|p| p.role == ParamRole::Synco)
        .filter_map(|p| p.name.strip_prefix("synco_buffer_"));
    let used: Vec<&str> = copied.chain(reduced).chain(abi).collect();
    fused
        .buffers
        .iter()
        .filter(|b| !b.staging && !b.trace)
        .filter(|b| b.arg.is_some() || used.contains(&b.name.as_str()))
        .map(|b| b.name.as_str())
        .collect()
}

/// Checks a launch of `m` with `bindings` (plan buffer name -> symmetric
/// buffer; names the plan does not declare are ignored) and the user's
/// arguments `args(rank)`; `address(rank, buffer)` is where `buffer` lies
/// on `rank`.
pub(crate) fn check(
    m: &LaunchManifest,
    ranks: std::ops::Range<usize>,
    bindings: &[(&str, Buffer)],
    args: &dyn Fn(usize) -> Vec<Arg>,
    address: &dyn Fn(usize, &Buffer) -> u64,
) -> Result<()> {
    let Some(fused) = &m.fused else {
        return Ok(());
    };
    let bound = |name: &str| bindings.iter().find(|(n, _)| *n == name).map(|(_, b)| *b);
    for name in needed(m, fused) {
        if bound(name).is_none() {
            return Err(RuntimeError::UnboundBuffer(name.into()));
        }
    }
    for plan_buffer in fused.buffers.iter().filter(|b| !b.staging && !b.trace) {
        let Some(buffer) = bound(&plan_buffer.name) else {
            continue;
        };
        let plan_bytes = plan_buffer.bytes().max(0) as usize;
        if buffer.bytes < plan_bytes {
            return Err(RuntimeError::BufferTooSmall {
                name: plan_buffer.name.clone(),
                shape: plan_buffer
                    .shape
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join("x"),
                element: plan_buffer.element.clone(),
                needed: plan_bytes,
                bound: buffer.bytes,
            });
        }
    }
    // Kernel argument i of `bind(i)` is the i-th of the kernel's own
    // parameters (a descriptor's parts count).
    let user_params: Vec<&str> = own_params(m).map(|(_, p)| p.name.as_str()).collect();
    let pinned: Vec<(usize, &str, Buffer)> = fused
        .buffers
        .iter()
        .filter_map(|b| Some((b.arg?, b.name.as_str(), bound(&b.name)?)))
        .collect();
    if pinned.is_empty() && fused.scalar_args.is_empty() {
        return Ok(());
    }
    for rank in ranks {
        let given = crate::descriptor::expand(m, &args(rank))?;
        check_scalar_args(m, fused, rank, &given, &user_params)?;
        for &(index, name, buffer) in &pinned {
            let expected = address(rank, &buffer);
            // A missing or non-pointer argument is the kernel's argument
            // check's to report (with the parameter's type).
            let pointer = match given.get(index) {
                Some(Arg::Ptr(pointer)) => Some(pointer),
                Some(Arg::Descriptor(view)) => Some(&view.base),
                _ => None,
            };
            if let Some(pointer) = pointer
                && *pointer != expected
            {
                return Err(RuntimeError::ArgNotBuffer(Box::new(ArgNotBuffer {
                    kernel: m.kernel.clone(),
                    rank,
                    index,
                    param: user_params.get(index).copied().unwrap_or("?").to_string(),
                    buffer: name.to_string(),
                    given: *pointer,
                    expected,
                })));
            }
        }
    }
    Ok(())
}

/// The user's arguments of a launch of `m` on `rank`, before anything is
/// issued: their number, each one's type against its parameter's, and the
/// values the plan fixes (`scalar_args`). What [`Node::launch`] checks of
/// them, for callers that build arguments elsewhere (the Python package).
///
/// [`Node::launch`]: crate::Node::launch
pub fn check_user_args(m: &LaunchManifest, rank: usize, args: &[Arg]) -> Result<()> {
    crate::args::check_arg_count(m, args.len())?;
    let own = crate::descriptor::expand(m, args)?;
    let params: Vec<(usize, &Param)> = own_params(m).collect();
    for (&(index, param), value) in params.iter().zip(&own) {
        value.check_fits(m, index, param)?;
    }
    let names: Vec<&str> = params.iter().map(|(_, p)| p.name.as_str()).collect();
    match &m.fused {
        Some(fused) => check_scalar_args(m, fused, rank, &own, &names),
        None => Ok(()),
    }
}

/// Every value the plan bounds (`FusedPlan::index_bounds`: a head's first
/// element in a bound buffer, the last row a loop reads) is within its
/// bounds on every program of a launch of `m` on `grid` with `args` on
/// `rank`, or the launch is refused naming the program.
pub fn check_index_bounds(
    m: &LaunchManifest,
    rank: usize,
    grid: (u32, u32, u32),
    args: &[Arg],
) -> Result<()> {
    let Some(fused) = m.fused.as_ref().filter(|f| !f.index_bounds.is_empty()) else {
        return Ok(());
    };
    let own = crate::descriptor::expand(m, args)?;
    let value = |i: usize| own.get(i).and_then(Arg::integer);
    let grid = [grid.0, grid.1, grid.2].map(i64::from);
    for bound in &fused.index_bounds {
        if let Some((program, value)) = bound.violation(grid, &value) {
            return Err(RuntimeError::IndexOutOfBuffer(Box::new(IndexOutOfBuffer {
                kernel: m.kernel.clone(),
                rank,
                buffer: bound.buffer.clone(),
                what: bound.what.clone(),
                program,
                value,
                lowest: bound.lowest,
                highest: bound.highest,
            })));
        }
    }
    Ok(())
}

/// The kernel's own parameters with their indices: the user's, and the
/// parts of the user's descriptors (index `i` is the kernel's argument `i`).
fn own_params(m: &LaunchManifest) -> impl Iterator<Item = (usize, &Param)> {
    m.params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.role, ParamRole::User | ParamRole::DescriptorPart))
}

/// The arguments the plan fixes (strides and extents of bound buffers) have
/// their values on `rank`. (A missing or non-integer argument is the
/// kernel's argument check's to report.)
fn check_scalar_args(
    m: &LaunchManifest,
    fused: &FusedPlan,
    rank: usize,
    given: &[Arg],
    user_params: &[&str],
) -> Result<()> {
    for fixed in &fused.scalar_args {
        let Some(value) = given.get(fixed.arg).and_then(Arg::integer) else {
            continue;
        };
        if !fixed.role.allows(value, fixed.value) {
            return Err(RuntimeError::ScalarArg(Box::new(ScalarArgMismatch {
                kernel: m.kernel.clone(),
                rank,
                index: fixed.arg,
                param: user_params
                    .get(fixed.arg)
                    .copied()
                    .unwrap_or("?")
                    .to_string(),
                buffer: fixed.buffer.clone(),
                dim: fixed.dim,
                role: fixed.role,
                given: value,
                expected: fixed.value,
            })));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reduce-scatter on the copy engine: @P (bound to argument 2) is
    /// copied into the staging buffer, @C is the kernel's ABI output.
    const MANIFEST: &str = r#"{
      "format": "synco-launch-manifest", "version": 1, "kernel": "matmul",
      "cubin": "matmul.cubin", "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
      "num_warps": 8, "num_ctas": 1, "shared_mem_bytes": 0,
      "global_scratch": {"size": 0, "align": 1}, "profile_scratch": {"size": 0, "align": 1},
      "triton_version": "3.6.0",
      "params": [
        {"name": "a_ptr", "type": "*bf16", "role": "user"},
        {"name": "b_ptr", "type": "*bf16", "role": "user"},
        {"name": "c_ptr", "type": "*bf16", "role": "user"},
        {"name": "M", "type": "i32", "role": "user"},
        {"name": "synco_buffer_C", "type": "*bf16", "role": "synco"}
      ],
      "fused": {
        "plan": "gemm_rs", "world_size": 2, "num_flags": 4,
        "buffers": [
          {"name": "P", "arg": 2, "shape": [256, 128], "element": "bf16", "element_bytes": 2},
          {"name": "C", "arg": null, "shape": [128, 128], "element": "bf16", "element_bytes": 2},
          {"name": "P_staging", "arg": null, "shape": [256, 128], "element": "bf16", "element_bytes": 2, "staging": true}
        ],
        "chunks": [], "copies": [[], []]
      }
    }"#;

    fn manifest() -> LaunchManifest {
        serde_json::from_str(MANIFEST).expect("the test manifest parses")
    }

    const P: Buffer = Buffer {
        offset: 0,
        bytes: 256 * 128 * 2,
    };
    const C: Buffer = Buffer {
        offset: 1 << 20,
        bytes: 128 * 128 * 2,
    };

    /// Rank r's heap starts at r << 32.
    fn address(rank: usize, buffer: &Buffer) -> u64 {
        ((rank as u64) << 32) + buffer.offset as u64
    }

    fn args_pointing_at(p: Buffer) -> impl Fn(usize) -> Vec<Arg> {
        move |rank| {
            vec![
                Arg::Ptr(7),
                Arg::Ptr(8),
                Arg::Ptr(address(rank, &p)),
                Arg::I32(256),
            ]
        }
    }

    #[test]
    fn accepts_the_plan_buffers_bound_and_pointed_at() {
        let bindings = [("P", P), ("C", C), ("unrelated", C)];
        check(&manifest(), 0..2, &bindings, &args_pointing_at(P), &address)
            .expect("a launch bound as the plan says is accepted");
    }

    #[test]
    fn refuses_a_buffer_the_launch_needs_unbound() {
        let e = check(
            &manifest(),
            0..2,
            &[("P", P)],
            &args_pointing_at(P),
            &address,
        )
        .expect_err("@C, the kernel's synco_buffer_C, is unbound");
        assert_eq!(
            e.to_string(),
            "the plan's buffer @C has no symmetric buffer bound to it"
        );
    }

    #[test]
    fn refuses_a_binding_smaller_than_the_plan_buffer() {
        let small = Buffer {
            offset: 1 << 20,
            bytes: 128 * 128 * 2 - 512,
        };
        let e = check(
            &manifest(),
            0..2,
            &[("P", P), ("C", small)],
            &args_pointing_at(P),
            &address,
        )
        .expect_err("a short @C is refused");
        assert_eq!(
            e.to_string(),
            "the plan's buffer @C (128x128 bf16) takes 32768 bytes, but the symmetric buffer bound to it holds 32256"
        );
    }

    #[test]
    fn refuses_a_bound_argument_that_points_elsewhere() {
        // Rank 1's c_ptr points at @C instead of @P.
        let args = |rank: usize| {
            let at = if rank == 1 { C } else { P };
            vec![
                Arg::Ptr(7),
                Arg::Ptr(8),
                Arg::Ptr(address(rank, &at)),
                Arg::I32(256),
            ]
        };
        let e = check(&manifest(), 0..2, &[("P", P), ("C", C)], &args, &address)
            .expect_err("c_ptr must be @P's address");
        assert_eq!(
            e.to_string(),
            "argument 2 ('c_ptr') of 'matmul' on rank 1 is 0x100100000, but the plan binds it to @P, which lies at 0x100000000 on that rank: pass the bound buffer's address"
        );
    }

    /// The test manifest with argument 3 fixed as `role` of @P's dimension
    /// 0, `value`.
    fn fixing_arg3(role: synco_manifest::ScalarRole, value: i64) -> LaunchManifest {
        let mut m = manifest();
        let fused = m.fused.as_mut().expect("the test manifest has a plan");
        fused.scalar_args = vec![synco_manifest::ScalarArg {
            arg: 3,
            value,
            buffer: "P".into(),
            dim: 0,
            role,
        }];
        m
    }

    /// Arguments pointing at @P with argument 3 `value` on `rank` (128 on
    /// the others).
    fn arg3_on(rank: usize, value: i32) -> impl Fn(usize) -> Vec<Arg> {
        move |r: usize| {
            let mut args = args_pointing_at(P)(r);
            args[3] = Arg::I32(if r == rank { value } else { 128 });
            args
        }
    }

    #[test]
    fn refuses_a_row_stride_the_plan_does_not_have() {
        // The kernel steps @P's rows by argument 3 (here named M): @P has
        // 128 elements per row.
        let m = fixing_arg3(synco_manifest::ScalarRole::Stride, 128);
        let bindings = [("P", P), ("C", C)];
        check(&m, 0..2, &bindings, &arg3_on(1, 128), &address)
            .expect("the plan's stride is accepted");
        let e = check(&m, 0..2, &bindings, &arg3_on(1, 4096), &address)
            .expect_err("another stride on rank 1 is refused");
        assert_eq!(
            e.to_string(),
            "argument 3 ('M') of 'matmul' on rank 1 is 4096, but the kernel takes the stride of plan buffer @P along dimension 0 from it, which the plan makes 128: compile for the shape you launch"
        );
    }

    #[test]
    fn bounds_an_extent_from_above() {
        // The kernel masks @P's rows by argument 3 (M): at most 256.
        let m = fixing_arg3(synco_manifest::ScalarRole::MaxExtent, 256);
        let bindings = [("P", P), ("C", C)];
        for fewer in [1, 128, 256] {
            check(&m, 0..2, &bindings, &arg3_on(0, fewer), &address)
                .expect("at most the plan's rows");
        }
        let e = check(&m, 0..2, &bindings, &arg3_on(0, 257), &address).expect_err("past @P's rows");
        assert_eq!(
            e.to_string(),
            "argument 3 ('M') of 'matmul' on rank 0 is 257, but the kernel takes the bound of plan buffer @P along dimension 0 from it, which the plan makes at most 256: compile for the shape you launch"
        );
    }

    #[test]
    fn takes_any_multiple_for_an_offset_factor() {
        // The kernel offsets @P's tiles by argument 3 times a program's
        // index: whole rows of 128 elements, or the offset would shift rows.
        let m = fixing_arg3(synco_manifest::ScalarRole::Multiple, 128);
        let bindings = [("P", P), ("C", C)];
        for whole in [0, 128, 256 * 128] {
            check(&m, 0..2, &bindings, &arg3_on(0, whole), &address).expect("whole rows");
        }
        for shifted in [64, 129, -128] {
            let e = check(&m, 0..2, &bindings, &arg3_on(0, shifted), &address)
                .expect_err("not whole rows");
            assert_eq!(
                e.to_string(),
                format!(
                    "argument 3 ('M') of 'matmul' on rank 0 is {shifted}, but the kernel takes the offset factor of plan buffer @P along dimension 0 from it, which the plan makes a multiple of 128: compile for the shape you launch"
                )
            );
        }
    }

    #[test]
    fn leaves_kernels_without_a_plan_alone() {
        let mut m = manifest();
        m.fused = None;
        check(&m, 0..2, &[], &|_| Vec::new(), &address).expect("no plan, nothing to check");
    }

    /// An attention's K [2 heads, 256, 64] read a head at a time at
    /// `(program_id(1) % H) // (H // H_KV) * stride_kh` (arguments 0, 1, 2
    /// of a kernel whose argument 3 is K).
    #[test]
    fn refuses_a_launch_whose_heads_go_past_the_buffer() {
        let mut m = manifest();
        let bound: synco_manifest::IndexBound = serde_json::from_str(
            r#"{"buffer": "K", "what": "the element its head starts at", "lowest": 0,
                 "highest": 16384, "value": {"mul": [
                 {"div": [{"rem": [{"program_id": 1}, {"arg": 0}]},
                          {"div": [{"arg": 0}, {"arg": 1}]}]},
                 {"arg": 2}]}}"#,
        )
        .expect("the bound parses");
        m.fused.as_mut().expect("fused").index_bounds = vec![bound];
        let args = |h: i32, h_kv: i32| [Arg::I32(h), Arg::I32(h_kv), Arg::I32(16384), Arg::Ptr(0)];
        check_index_bounds(&m, 1, (4, 8, 1), &args(8, 2)).expect("2 KV heads fit");
        let err = check_index_bounds(&m, 1, (4, 8, 1), &args(8, 4)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kernel 'matmul' on rank 1: on program [0, 4, 0], the element its head starts at in @K is 32768, past 16384: the grid or the arguments (head counts, lengths, strides) do not match the plan's buffer"
        );
        // 16 programs along axis 1 with H = 8: the offset (no batch term
        // here) wraps around to the same heads.
        assert!(check_index_bounds(&m, 1, (4, 16, 1), &args(8, 2)).is_ok());
    }
}
