//! Building generic `arith`, `scf`, `gpu` and `tt` ops at an insertion point.
//!
//! Attribute names and encodings are Triton 3.6's (Triton drops misspelled
//! attributes silently, so every op built here is compiled through Triton in
//! a lit test that checks the PTX).

use crate::*;

/// Triton's `MemSemantic` encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sem {
    Relaxed = 1,
    Acquire = 2,
    Release = 3,
    AcqRel = 4,
}

/// Triton's `MemSyncScope` encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Gpu = 1,
    Cta = 2,
    Sys = 3,
}

/// Triton's `RMWOp` encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    And = 1,
    Or = 2,
    Xor = 3,
    Add = 4,
    FAdd = 5,
    Max = 6,
    Min = 7,
    UMax = 8,
    UMin = 9,
    Xchg = 10,
}

/// `arith.cmpi` predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq = 0,
    Ne = 1,
    Slt = 2,
    Sle = 3,
    Sgt = 4,
    Sge = 5,
    Ult = 6,
}

#[derive(Clone, Copy)]
enum Point {
    Before(Op),
    End(Block),
}

/// Inserts ops before an op or at the end of a block, all at one location.
#[derive(Clone, Copy)]
pub struct Builder {
    pub ctx: Ctx,
    pub loc: Loc,
    point: Point,
}

impl Builder {
    pub fn before(op: Op) -> Self {
        Self {
            ctx: context_of(op),
            loc: location_of(op),
            point: Point::Before(op),
        }
    }

    pub fn at_end(ctx: Ctx, block: Block, loc: Loc) -> Self {
        Self {
            ctx,
            loc,
            point: Point::End(block),
        }
    }

    pub fn with_loc(mut self, loc: Loc) -> Self {
        self.loc = loc;
        self
    }

    /// Builds and inserts a generic op.
    pub fn op(
        &self,
        name: &str,
        operands: &[Value],
        results: &[Type],
        attrs: &[(&str, Attr)],
    ) -> Op {
        self.op_with_regions(name, operands, results, attrs, Vec::new())
    }

    pub fn op_with_regions(
        &self,
        name: &str,
        operands: &[Value],
        results: &[Type],
        attrs: &[(&str, Attr)],
        regions: Vec<Region>,
    ) -> Op {
        unsafe {
            let mut state = mlirOperationStateGet(sref(name), self.loc);
            mlirOperationStateAddOperands(&mut state, operands.len() as isize, operands.as_ptr());
            mlirOperationStateAddResults(&mut state, results.len() as isize, results.as_ptr());
            let named: Vec<MlirNamedAttribute> = attrs
                .iter()
                .map(|(n, a)| mlirNamedAttributeGet(mlirIdentifierGet(self.ctx, sref(n)), *a))
                .collect();
            mlirOperationStateAddAttributes(&mut state, named.len() as isize, named.as_ptr());
            mlirOperationStateAddOwnedRegions(&mut state, regions.len() as isize, regions.as_ptr());
            let op = mlirOperationCreate(&mut state);
            match self.point {
                Point::Before(anchor) => insert_before(anchor, op),
                Point::End(block) => append(block, op),
            }
            op
        }
    }

    /// Inserts `op`, made in no block (see [`crate::clone_op`]), at the
    /// builder's point.
    pub fn insert(&self, op: Op) {
        match self.point {
            Point::Before(anchor) => insert_before(anchor, op),
            Point::End(block) => append(block, op),
        }
    }

    fn i32(&self) -> Type {
        i32_type(self.ctx)
    }

    /// An `i32` integer attribute.
    pub fn i32_attr(&self, v: i64) -> Attr {
        int_attr_of(self.i32(), v)
    }

    // -- arith --------------------------------------------------------------

    pub fn constant(&self, ty: Type, value: i64) -> Value {
        result(
            self.op(
                "arith.constant",
                &[],
                &[ty],
                &[("value", int_attr_of(ty, value))],
            ),
            0,
        )
    }

    pub fn const_i32(&self, value: i64) -> Value {
        self.constant(self.i32(), value)
    }

    pub fn const_i64(&self, value: i64) -> Value {
        self.constant(i64_type(self.ctx), value)
    }

    pub fn const_bool(&self, value: bool) -> Value {
        result(
            self.op(
                "arith.constant",
                &[],
                &[i1_type(self.ctx)],
                &[("value", bool_attr(self.ctx, value))],
            ),
            0,
        )
    }

    fn binary(&self, name: &str, a: Value, b: Value) -> Value {
        let overflow = parse_attr(self.ctx, "#arith.overflow<none>");
        let attrs: Vec<(&str, Attr)> = match (name, overflow) {
            ("arith.addi" | "arith.subi" | "arith.muli", Some(o)) => vec![("overflowFlags", o)],
            _ => vec![],
        };
        result(self.op(name, &[a, b], &[type_of(a)], &attrs), 0)
    }

    pub fn addi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.addi", a, b)
    }
    pub fn subi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.subi", a, b)
    }
    pub fn muli(&self, a: Value, b: Value) -> Value {
        self.binary("arith.muli", a, b)
    }
    pub fn divsi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.divsi", a, b)
    }
    pub fn remsi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.remsi", a, b)
    }
    pub fn andi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.andi", a, b)
    }
    pub fn ori(&self, a: Value, b: Value) -> Value {
        self.binary("arith.ori", a, b)
    }
    pub fn minsi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.minsi", a, b)
    }
    pub fn maxsi(&self, a: Value, b: Value) -> Value {
        self.binary("arith.maxsi", a, b)
    }

    /// `arith.cmpi`: an i1, or a tensor of them for tensor operands.
    pub fn cmpi(&self, pred: Cmp, a: Value, b: Value) -> Value {
        let p = int_attr_of(i64_type(self.ctx), pred as i64);
        result(
            self.op(
                "arith.cmpi",
                &[a, b],
                &[shaped_like(a, i1_type(self.ctx))],
                &[("predicate", p)],
            ),
            0,
        )
    }

    /// `arith.extf` (or `arith.truncf` when narrowing) of a float or a
    /// tensor of floats to element type `element`; the value itself when it
    /// already has that element type.
    pub fn convert_float(&self, a: Value, element: Type) -> Value {
        let ty = type_of(a);
        let from = tensor_element(ty).unwrap_or(ty);
        if unsafe { mlirTypeEqual(from, element) } {
            return a;
        }
        let to = match tensor_shape(ty) {
            Some(shape) => ranked_tensor(&shape, element),
            None => element,
        };
        let widening = unsafe { mlirFloatTypeGetWidth(element) > mlirFloatTypeGetWidth(from) };
        let name = if widening {
            "arith.extf"
        } else {
            "arith.truncf"
        };
        result(self.op(name, &[a], &[to], &[]), 0)
    }

    pub fn addf(&self, a: Value, b: Value) -> Value {
        result(self.op("arith.addf", &[a, b], &[type_of(a)], &[]), 0)
    }

    /// `arith.select %cond, %a, %b` (`cond` an i1 or a tensor of them).
    pub fn select(&self, cond: Value, a: Value, b: Value) -> Value {
        result(
            self.op("arith.select", &[cond, a, b], &[type_of(a)], &[]),
            0,
        )
    }

    /// A zero constant of `ty` (a float or integer tensor type).
    pub fn zeros(&self, ty: Type) -> Value {
        let element = tensor_element(ty).unwrap_or(ty);
        let zero = if unsafe { mlirTypeIsAInteger(element) } {
            "0"
        } else {
            "0.0"
        };
        let attr = parse_attr(self.ctx, &format!("dense<{zero}> : {}", print_type(ty)))
            .expect("a dense splat of a tensor type");
        result(self.op("arith.constant", &[], &[ty], &[("value", attr)]), 0)
    }

    /// `arith.extsi` to i64, or to a tensor of i64 for a tensor.
    pub fn extsi_i64(&self, a: Value) -> Value {
        let ty = shaped_like(a, i64_type(self.ctx));
        result(self.op("arith.extsi", &[a], &[ty], &[]), 0)
    }

    /// `arith.trunci` to i32 (the caller knows the value fits).
    pub fn trunc_i32(&self, a: Value) -> Value {
        result(self.op("arith.trunci", &[a], &[self.i32()], &[]), 0)
    }

    // -- tt -------------------------------------------------------------------

    pub fn addptr(&self, ptr: Value, offset: Value) -> Value {
        result(
            self.op("tt.addptr", &[ptr, offset], &[type_of(ptr)], &[]),
            0,
        )
    }

    /// A scalar `tt.load` (no mask, no other).
    pub fn load(&self, ptr: Value, element: Type) -> Value {
        let segments = parse_attr(self.ctx, "array<i32: 1, 0, 0>").expect("valid attribute");
        let boundary = parse_attr(self.ctx, "array<i32>").expect("valid attribute");
        result(
            self.op(
                "tt.load",
                &[ptr],
                &[element],
                &[
                    ("boundaryCheck", boundary),
                    ("cache", self.i32_attr(1)),
                    ("evict", self.i32_attr(1)),
                    ("isVolatile", bool_attr(self.ctx, false)),
                    ("operandSegmentSizes", segments),
                ],
            ),
            0,
        )
    }

    /// A `tt.load` of a tensor of pointers under `mask`, `other` where the
    /// mask is off.
    pub fn load_masked(&self, ptrs: Value, mask: Value, other: Value) -> Value {
        let segments = parse_attr(self.ctx, "array<i32: 1, 1, 1>").expect("valid attribute");
        let boundary = parse_attr(self.ctx, "array<i32>").expect("valid attribute");
        result(
            self.op(
                "tt.load",
                &[ptrs, mask, other],
                &[type_of(other)],
                &[
                    ("boundaryCheck", boundary),
                    ("cache", self.i32_attr(1)),
                    ("evict", self.i32_attr(1)),
                    ("isVolatile", bool_attr(self.ctx, false)),
                    ("operandSegmentSizes", segments),
                ],
            ),
            0,
        )
    }

    /// A `tt.store` of a tensor under `mask`.
    pub fn store_masked(&self, ptrs: Value, value: Value, mask: Value) -> Op {
        let boundary = parse_attr(self.ctx, "array<i32>").expect("valid attribute");
        self.op(
            "tt.store",
            &[ptrs, value, mask],
            &[],
            &[
                ("boundaryCheck", boundary),
                ("cache", self.i32_attr(1)),
                ("evict", self.i32_attr(1)),
            ],
        )
    }

    pub fn store(&self, ptr: Value, value: Value) -> Op {
        let boundary = parse_attr(self.ctx, "array<i32>").expect("valid attribute");
        self.op(
            "tt.store",
            &[ptr, value],
            &[],
            &[
                ("boundaryCheck", boundary),
                ("cache", self.i32_attr(1)),
                ("evict", self.i32_attr(1)),
            ],
        )
    }

    /// `tt.ptr_to_int`: i64, or a tensor of i64 for a tensor of pointers.
    pub fn ptr_to_int(&self, ptr: Value) -> Value {
        let ty = match tensor_shape(type_of(ptr)) {
            Some(shape) => ranked_tensor(&shape, i64_type(self.ctx)),
            None => i64_type(self.ctx),
        };
        result(self.op("tt.ptr_to_int", &[ptr], &[ty], &[]), 0)
    }

    pub fn int_to_ptr(&self, int: Value, ptr_type: Type) -> Value {
        result(self.op("tt.int_to_ptr", &[int], &[ptr_type], &[]), 0)
    }

    pub fn atomic_cas(&self, ptr: Value, cmp: Value, val: Value, sem: Sem, scope: Scope) -> Value {
        result(
            self.op(
                "tt.atomic_cas",
                &[ptr, cmp, val],
                &[type_of(val)],
                &[
                    ("scope", self.i32_attr(scope as i64)),
                    ("sem", self.i32_attr(sem as i64)),
                ],
            ),
            0,
        )
    }

    pub fn atomic_rmw(&self, op: RmwOp, ptr: Value, val: Value, sem: Sem, scope: Scope) -> Value {
        let mask = self.const_bool(true);
        result(
            self.op(
                "tt.atomic_rmw",
                &[ptr, val, mask],
                &[type_of(val)],
                &[
                    ("atomic_rmw_op", self.i32_attr(op as i64)),
                    ("scope", self.i32_attr(scope as i64)),
                    ("sem", self.i32_attr(sem as i64)),
                ],
            ),
            0,
        )
    }

    /// Inline PTX run by every thread, one result (`tt.elementwise_inline_asm`).
    pub fn inline_asm(
        &self,
        asm: &str,
        constraints: &str,
        args: &[Value],
        result_type: Type,
    ) -> Value {
        result(
            self.op(
                "tt.elementwise_inline_asm",
                args,
                &[result_type],
                &[
                    ("asm_string", string_attr(self.ctx, asm)),
                    ("constraints", string_attr(self.ctx, constraints)),
                    ("packed_element", self.i32_attr(1)),
                    ("pure", bool_attr(self.ctx, false)),
                ],
            ),
            0,
        )
    }

    /// `value` (of 32-bit elements: `i32`, `f32` or a tensor of them)
    /// through a `mov.b32` of pure inline PTX per element, which LLVM
    /// cannot see through, nor sink below the branch it sits in: where a
    /// constant would let it prove what it should not act on (a loop bound
    /// that makes it widen the loop's induction variable to 64 bits), or
    /// where it would move a read of an accumulator out of its branch.
    pub fn opaque(&self, value: Value) -> Value {
        let op = self.op(
            "tt.elementwise_inline_asm",
            &[value],
            &[type_of(value)],
            &[
                ("asm_string", string_attr(self.ctx, "mov.b32 $0, $1;")),
                ("constraints", string_attr(self.ctx, "=r,r")),
                ("packed_element", self.i32_attr(1)),
                ("pure", bool_attr(self.ctx, true)),
            ],
        );
        result(op, 0)
    }

    /// Inline PTX run by every thread for its effect alone (a fence, a
    /// barrier, a wait): `asm` must write its one `i32` result, `$0`, which
    /// Triton's op needs and nothing reads.
    pub fn inline_asm_effect(&self, asm: &str) {
        self.inline_asm(asm, "=r", &[], self.i32());
    }

    pub fn barrier(&self) -> Op {
        self.op("gpu.barrier", &[], &[], &[])
    }

    // -- scf ------------------------------------------------------------------

    /// `scf.if %cond { then(builder) }` with no results and an empty else.
    pub fn if_then(&self, cond: Value, then: impl FnOnce(Builder)) -> Op {
        unsafe {
            let then_region = mlirRegionCreate();
            let then_block = mlirBlockCreate(0, std::ptr::null(), std::ptr::null());
            mlirRegionAppendOwnedBlock(then_region, then_block);
            let else_region = mlirRegionCreate();
            let op =
                self.op_with_regions("scf.if", &[cond], &[], &[], vec![then_region, else_region]);
            let inner = Builder::at_end(self.ctx, then_block, self.loc);
            then(inner);
            inner.op("scf.yield", &[], &[], &[]);
            op
        }
    }

    /// `scf.if %cond { then } else { otherwise }`, no results. Returns the op
    /// and the two blocks (each already ending in `scf.yield`).
    pub fn if_else(&self, cond: Value) -> (Op, Block, Block) {
        let (then_region, then_block) = region_with_block();
        let (else_region, else_block) = region_with_block();
        let op = self.op_with_regions("scf.if", &[cond], &[], &[], vec![then_region, else_region]);
        for block in [then_block, else_block] {
            Builder::at_end(self.ctx, block, self.loc).op("scf.yield", &[], &[], &[]);
        }
        (op, then_block, else_block)
    }

    /// `scf.if %cond -> (types) { then } else { otherwise }`: each branch's
    /// builder returns the values it yields. Returns the op.
    pub fn if_yield(
        &self,
        cond: Value,
        types: &[Type],
        then: impl FnOnce(Builder) -> Vec<Value>,
        otherwise: impl FnOnce(Builder) -> Vec<Value>,
    ) -> Op {
        let (then_region, then_block) = region_with_block();
        let (else_region, else_block) = region_with_block();
        let regions = vec![then_region, else_region];
        let op = self.op_with_regions("scf.if", &[cond], types, &[], regions);
        let yield_from = |block: Block, yielded: Vec<Value>| {
            Builder::at_end(self.ctx, block, self.loc).op("scf.yield", &yielded, &[], &[]);
        };
        yield_from(
            then_block,
            then(Builder::at_end(self.ctx, then_block, self.loc)),
        );
        yield_from(
            else_block,
            otherwise(Builder::at_end(self.ctx, else_block, self.loc)),
        );
        op
    }

    /// `scf.for %i = lower to upper step step` (i32 bounds), no iteration
    /// values; `body(builder, i)` builds the body before its `scf.yield`.
    pub fn for_loop(
        &self,
        lower: Value,
        upper: Value,
        step: Value,
        body: impl FnOnce(Builder, Value),
    ) -> Op {
        unsafe {
            let region = mlirRegionCreate();
            let ty = type_of(lower);
            let block = mlirBlockCreate(1, &ty, &self.loc);
            mlirRegionAppendOwnedBlock(region, block);
            let op = self.op_with_regions("scf.for", &[lower, upper, step], &[], &[], vec![region]);
            let inner = Builder::at_end(self.ctx, block, self.loc);
            body(inner, block_args(block)[0]);
            inner.op("scf.yield", &[], &[], &[]);
            op
        }
    }

    /// `scf.for %i = lower to upper step step iter_args(inits)`: the body
    /// `body(builder, i, iteration values)` builds returns what it yields.
    /// Returns the op (its results: the last iteration's values).
    pub fn for_loop_with(
        &self,
        lower: Value,
        upper: Value,
        step: Value,
        inits: &[Value],
        body: impl FnOnce(Builder, Value, Vec<Value>) -> Vec<Value>,
    ) -> Op {
        unsafe {
            let region = mlirRegionCreate();
            let types: Vec<Type> = std::iter::once(type_of(lower))
                .chain(inits.iter().map(|v| type_of(*v)))
                .collect();
            let locs = vec![self.loc; types.len()];
            let block = mlirBlockCreate(types.len() as isize, types.as_ptr(), locs.as_ptr());
            mlirRegionAppendOwnedBlock(region, block);
            let operands: Vec<Value> = [lower, upper, step]
                .into_iter()
                .chain(inits.iter().copied())
                .collect();
            let op = self.op_with_regions("scf.for", &operands, &types[1..], &[], vec![region]);
            let inner = Builder::at_end(self.ctx, block, self.loc);
            let args = block_args(block);
            let yielded = body(inner, args[0], args[1..].to_vec());
            inner.op("scf.yield", &yielded, &[], &[]);
            op
        }
    }

    /// `tt.make_range {start = 0, end = n}`: `tensor<n x i32>`.
    pub fn make_range(&self, n: i64) -> Value {
        let ty = ranked_tensor(&[n], i32_type(self.ctx));
        result(
            self.op(
                "tt.make_range",
                &[],
                &[ty],
                &[("start", self.i32_attr(0)), ("end", self.i32_attr(n))],
            ),
            0,
        )
    }

    /// `tt.splat` of a scalar to `shape`.
    pub fn splat(&self, value: Value, shape: &[i64]) -> Value {
        let ty = ranked_tensor(shape, type_of(value));
        result(self.op("tt.splat", &[value], &[ty], &[]), 0)
    }

    /// `tt.expand_dims` of a tensor: a dimension of 1 inserted at `axis`.
    pub fn expand_dims(&self, value: Value, axis: usize) -> Value {
        let ty = type_of(value);
        let mut shape = tensor_shape(ty).unwrap_or_default();
        shape.insert(axis.min(shape.len()), 1);
        let element = tensor_element(ty).unwrap_or(ty);
        let axis = self.i32_attr(axis as i64);
        result(
            self.op(
                "tt.expand_dims",
                &[value],
                &[ranked_tensor(&shape, element)],
                &[("axis", axis)],
            ),
            0,
        )
    }

    /// `tt.broadcast` of a tensor to `shape` (its dimensions of 1 repeated).
    pub fn broadcast(&self, value: Value, shape: &[i64]) -> Value {
        let ty = type_of(value);
        let element = tensor_element(ty).unwrap_or(ty);
        let ty = ranked_tensor(shape, element);
        result(self.op("tt.broadcast", &[value], &[ty], &[]), 0)
    }

    /// A `tt.load` of a tensor of pointers (no mask).
    pub fn load_tensor(&self, ptrs: Value, element: Type) -> Value {
        let shape = tensor_shape(type_of(ptrs)).unwrap_or_default();
        self.load(ptrs, ranked_tensor(&shape, element))
    }

    /// `arith.extsi` to i64 (or the value itself if it is one), element by
    /// element for a tensor.
    pub fn to_i64(&self, value: Value) -> Value {
        let ty = type_of(value);
        if is_integer_type(tensor_element(ty).unwrap_or(ty), 64) {
            value
        } else {
            self.extsi_i64(value)
        }
    }

    /// Marks the op defining `value` as a multiple of `divisor` for Triton's
    /// alignment analysis (what `tl.multiple_of` does).
    pub fn assume_multiple_of(&self, value: Value, divisor: i64) {
        if let Some(op) = defining_op(value) {
            let text = format!("dense<{divisor}> : tensor<1xi32>");
            if let Some(attr) = parse_attr(self.ctx, &text) {
                set_attr(op, "tt.divisibility", attr);
            }
        }
    }
}

/// A new region holding one empty block without arguments.
fn region_with_block() -> (Region, Block) {
    unsafe {
        let region = mlirRegionCreate();
        let block = mlirBlockCreate(0, std::ptr::null(), std::ptr::null());
        mlirRegionAppendOwnedBlock(region, block);
        (region, block)
    }
}

/// `element`, or a tensor of `element` of `like`'s shape where `like` is a
/// tensor.
fn shaped_like(like: Value, element: Type) -> Type {
    match tensor_shape(type_of(like)) {
        Some(shape) => ranked_tensor(&shape, element),
        None => element,
    }
}
