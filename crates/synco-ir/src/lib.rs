//! Helpers over MLIR's C API for passes that rewrite generic-form IR.
//!
//! Triton's `tt` dialect is not registered in Synco's MLIR, so its ops can
//! only be read and built generically: by name, operands, result types and
//! attributes. These helpers work on the C API's plain handles ([`Op`],
//! [`Value`], [`Block`]), which are `Copy`, so a pass can hold several at
//! once while it edits the IR. They are `unsafe`-free to call as long as
//! the handles come from live IR, which is the contract of a pass body.
//!
//! [`Builder`] inserts ops at a point, with builders for the `arith`, `scf`
//! and `tt` ops Synco emits; attribute encodings follow Triton 3.6 (see the
//! `Sem`, `Scope`, `RmwOp` enums).

#![allow(clippy::missing_safety_doc)]

pub mod builder;
pub mod loc;
pub mod structured;

pub use builder::{Builder, RmwOp, Scope, Sem};
use mlir_sys::*;
// Links MLIR (libMLIR.so and the C API) into every binary using this crate.
use std::ffi::c_void;
use synco_mlir_sys as _;

pub type Op = MlirOperation;
pub type Value = MlirValue;
pub type Block = MlirBlock;
pub type Region = MlirRegion;
pub type Type = MlirType;
pub type Attr = MlirAttribute;
pub type Loc = MlirLocation;
pub type Ctx = MlirContext;

/// A string ref borrowing `text` (valid while `text` is).
pub fn sref(text: &str) -> MlirStringRef {
    MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    }
}

/// Copies an MLIR string ref into a `String`.
pub fn string(text: MlirStringRef) -> String {
    if text.data.is_null() {
        return String::new();
    }
    // SAFETY: MLIR string refs point to `length` valid bytes.
    let bytes = unsafe { std::slice::from_raw_parts(text.data.cast::<u8>(), text.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

unsafe extern "C" fn append_to_string(text: MlirStringRef, data: *mut c_void) {
    // SAFETY: `data` is the `String` passed by `print_with` below.
    let out = unsafe { &mut *(data as *mut String) };
    out.push_str(&string(text));
}

fn print_with(f: impl FnOnce(MlirStringCallback, *mut c_void)) -> String {
    let mut out = String::new();
    f(
        Some(append_to_string),
        &mut out as *mut String as *mut c_void,
    );
    out
}

// ----------------------------------------------------------------------------
// Operations
// ----------------------------------------------------------------------------

pub fn is_null_op(op: Op) -> bool {
    op.ptr.is_null()
}

pub fn op_name(op: Op) -> String {
    // SAFETY: `op` is live.
    unsafe { string(mlirIdentifierStr(mlirOperationGetName(op))) }
}

pub fn context_of(op: Op) -> Ctx {
    unsafe { mlirOperationGetContext(op) }
}

pub fn location_of(op: Op) -> Loc {
    unsafe { mlirOperationGetLocation(op) }
}

pub fn attr(op: Op, name: &str) -> Option<Attr> {
    let a = unsafe { mlirOperationGetAttributeByName(op, sref(name)) };
    (!a.ptr.is_null()).then_some(a)
}

pub fn set_attr(op: Op, name: &str, value: Attr) {
    unsafe { mlirOperationSetAttributeByName(op, sref(name), value) }
}

pub fn remove_attr(op: Op, name: &str) -> bool {
    unsafe { mlirOperationRemoveAttributeByName(op, sref(name)) }
}

pub fn int_attr(op: Op, name: &str) -> Option<i64> {
    attr(op, name).and_then(int_value)
}

pub fn str_attr(op: Op, name: &str) -> Option<String> {
    attr(op, name).and_then(str_value)
}

pub fn int_value(a: Attr) -> Option<i64> {
    unsafe { mlirAttributeIsAInteger(a).then(|| mlirIntegerAttrGetValueInt(a)) }
}

pub fn str_value(a: Attr) -> Option<String> {
    unsafe { mlirAttributeIsAString(a).then(|| string(mlirStringAttrGetValue(a))) }
}

/// The symbol a `FlatSymbolRefAttr` names (without `@`).
pub fn symbol_value(a: Attr) -> Option<String> {
    unsafe { mlirAttributeIsAFlatSymbolRef(a).then(|| string(mlirFlatSymbolRefAttrGetValue(a))) }
}

/// The elements of an `ArrayAttr`.
pub fn array_value(a: Attr) -> Option<Vec<Attr>> {
    unsafe {
        mlirAttributeIsAArray(a).then(|| {
            (0..mlirArrayAttrGetNumElements(a))
                .map(|i| mlirArrayAttrGetElement(a, i))
                .collect()
        })
    }
}

pub fn operands(op: Op) -> Vec<Value> {
    unsafe {
        (0..mlirOperationGetNumOperands(op))
            .map(|i| mlirOperationGetOperand(op, i))
            .collect()
    }
}

pub fn set_operand(op: Op, index: usize, value: Value) {
    unsafe { mlirOperationSetOperand(op, index as isize, value) }
}

pub fn results(op: Op) -> Vec<Value> {
    unsafe {
        (0..mlirOperationGetNumResults(op))
            .map(|i| mlirOperationGetResult(op, i))
            .collect()
    }
}

pub fn result(op: Op, index: usize) -> Value {
    unsafe { mlirOperationGetResult(op, index as isize) }
}

pub fn regions(op: Op) -> Vec<Region> {
    unsafe {
        (0..mlirOperationGetNumRegions(op))
            .map(|i| mlirOperationGetRegion(op, i))
            .collect()
    }
}

pub fn blocks(region: Region) -> Vec<Block> {
    let mut out = Vec::new();
    unsafe {
        let mut block = mlirRegionGetFirstBlock(region);
        while !block.ptr.is_null() {
            out.push(block);
            block = mlirBlockGetNextInRegion(block);
        }
    }
    out
}

pub fn ops_in(block: Block) -> Vec<Op> {
    let mut out = Vec::new();
    unsafe {
        let mut op = mlirBlockGetFirstOperation(block);
        while !op.ptr.is_null() {
            out.push(op);
            op = mlirOperationGetNextInBlock(op);
        }
    }
    out
}

pub fn block_args(block: Block) -> Vec<Value> {
    unsafe {
        (0..mlirBlockGetNumArguments(block))
            .map(|i| mlirBlockGetArgument(block, i))
            .collect()
    }
}

pub fn add_block_arg(block: Block, ty: Type, loc: Loc) -> Value {
    unsafe { mlirBlockAddArgument(block, ty, loc) }
}

/// `op` and every op nested in it, in pre-order (program order).
pub fn walk(op: Op) -> Vec<Op> {
    fn visit(op: Op, out: &mut Vec<Op>) {
        out.push(op);
        for region in regions(op) {
            for block in blocks(region) {
                for nested in ops_in(block) {
                    visit(nested, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    visit(op, &mut out);
    out
}

/// Every op named `name` nested in `op` (program order within blocks).
pub fn find_all(op: Op, name: &str) -> Vec<Op> {
    walk(op)
        .into_iter()
        .filter(|o| op_name(*o) == name)
        .collect()
}

pub fn parent_op(op: Op) -> Option<Op> {
    let p = unsafe { mlirOperationGetParentOperation(op) };
    (!p.ptr.is_null()).then_some(p)
}

/// The ops enclosing `op`, innermost first (not `op` itself).
pub fn ancestors(op: Op) -> impl Iterator<Item = Op> {
    std::iter::successors(parent_op(op), |p| parent_op(*p))
}

pub fn block_of(op: Op) -> Option<Block> {
    let b = unsafe { mlirOperationGetBlock(op) };
    (!b.ptr.is_null()).then_some(b)
}

/// Whether `ancestor` is `op` or contains it.
pub fn is_ancestor(ancestor: Op, op: Op) -> bool {
    let mut current = Some(op);
    while let Some(o) = current {
        if unsafe { mlirOperationEqual(o, ancestor) } {
            return true;
        }
        current = parent_op(o);
    }
    false
}

/// The ancestor of `op` (or `op` itself) that sits directly in `block`.
pub fn ancestor_in_block(op: Op, block: Block) -> Option<Op> {
    let mut current = Some(op);
    while let Some(o) = current {
        if block_of(o).is_some_and(|b| unsafe { mlirBlockEqual(b, block) }) {
            return Some(o);
        }
        current = parent_op(o);
    }
    None
}

pub fn same_type(a: Type, b: Type) -> bool {
    unsafe { mlirTypeEqual(a, b) }
}

pub fn same_op(a: Op, b: Op) -> bool {
    unsafe { mlirOperationEqual(a, b) }
}

pub fn same_value(a: Value, b: Value) -> bool {
    unsafe { mlirValueEqual(a, b) }
}

pub fn same_block(a: Block, b: Block) -> bool {
    unsafe { mlirBlockEqual(a, b) }
}

/// Whether `a` comes before `b` in their (shared) block.
pub fn is_before_in_block(a: Op, b: Op) -> bool {
    unsafe { mlirOperationIsBeforeInBlock(a, b) }
}

pub fn insert_before(anchor: Op, op: Op) {
    unsafe {
        let block = mlirOperationGetBlock(anchor);
        mlirBlockInsertOwnedOperationBefore(block, anchor, op)
    }
}

/// A copy of `op`, its regions and attributes included, in no block yet
/// (place it with [`insert_before`] or [`append`]); it uses the same
/// values from outside it as `op`.
pub fn clone_op(op: Op) -> Op {
    unsafe { mlirOperationClone(op) }
}

/// Moves `op` (already in a block) right before `anchor`.
pub fn move_before(op: Op, anchor: Op) {
    unsafe { mlirOperationMoveBefore(op, anchor) }
}

pub fn insert_after(anchor: Op, op: Op) {
    unsafe {
        let block = mlirOperationGetBlock(anchor);
        mlirBlockInsertOwnedOperationAfter(block, anchor, op)
    }
}

pub fn append(block: Block, op: Op) {
    unsafe { mlirBlockAppendOwnedOperation(block, op) }
}

pub fn erase(op: Op) {
    unsafe { mlirOperationDestroy(op) }
}

pub fn print_op(op: Op) -> String {
    print_with(|cb, data| unsafe { mlirOperationPrint(op, cb, data) })
}

// ----------------------------------------------------------------------------
// Values and types
// ----------------------------------------------------------------------------

pub fn type_of(value: Value) -> Type {
    unsafe { mlirValueGetType(value) }
}

pub fn defining_op(value: Value) -> Option<Op> {
    unsafe { mlirValueIsAOpResult(value).then(|| mlirOpResultGetOwner(value)) }
}

pub fn is_block_arg(value: Value) -> bool {
    unsafe { mlirValueIsABlockArgument(value) }
}

pub fn block_arg_number(value: Value) -> Option<usize> {
    unsafe {
        mlirValueIsABlockArgument(value).then(|| mlirBlockArgumentGetArgNumber(value) as usize)
    }
}

/// The block that owns a block argument.
pub fn block_arg_owner(value: Value) -> Option<Block> {
    unsafe { mlirValueIsABlockArgument(value).then(|| mlirBlockArgumentGetOwner(value)) }
}

/// The op whose region holds `block`.
pub fn block_parent_op(block: Block) -> Option<Op> {
    let op = unsafe { mlirBlockGetParentOperation(block) };
    (!op.ptr.is_null()).then_some(op)
}

/// Every (user op, operand index) of `value`.
pub fn uses(value: Value) -> Vec<(Op, usize)> {
    let mut out = Vec::new();
    unsafe {
        let mut operand = mlirValueGetFirstUse(value);
        while !mlirOpOperandIsNull(operand) {
            out.push((
                mlirOpOperandGetOwner(operand),
                mlirOpOperandGetOperandNumber(operand) as usize,
            ));
            operand = mlirOpOperandGetNextUse(operand);
        }
    }
    out
}

/// Replaces every use of `of` with `with`, except in the ops of `except`.
pub fn replace_uses_except(of: Value, with: Value, except: &[Op]) {
    unsafe {
        mlirValueReplaceAllUsesExcept(of, with, except.len() as isize, except.as_ptr() as *mut Op)
    }
}

pub fn replace_all_uses(of: Value, with: Value) {
    unsafe { mlirValueReplaceAllUsesOfWith(of, with) }
}

pub fn parse_type(ctx: Ctx, text: &str) -> Option<Type> {
    let t = unsafe { mlirTypeParseGet(ctx, sref(text)) };
    (!t.ptr.is_null()).then_some(t)
}

pub fn parse_attr(ctx: Ctx, text: &str) -> Option<Attr> {
    let a = unsafe { mlirAttributeParseGet(ctx, sref(text)) };
    (!a.ptr.is_null()).then_some(a)
}

/// The one op `text` holds, parsed (nested ops verified as the parser
/// does), detached; `None` if it does not parse (the context's handlers
/// get the diagnostic). `source` names the text in its locations.
pub fn parse_op(ctx: Ctx, text: &str, source: &str) -> Option<Op> {
    let op = unsafe { mlirOperationCreateParse(ctx, sref(text), sref(source)) };
    (!op.ptr.is_null()).then_some(op)
}

/// Gives `op` location `loc` (not its nested ops).
pub fn set_location(op: Op, loc: Loc) {
    unsafe { mlirOperationSetLocation(op, loc) }
}

pub fn print_type(ty: Type) -> String {
    print_with(|cb, data| unsafe { mlirTypePrint(ty, cb, data) })
}

pub fn print_attr(a: Attr) -> String {
    print_with(|cb, data| unsafe { mlirAttributePrint(a, cb, data) })
}

pub fn i32_type(ctx: Ctx) -> Type {
    unsafe { mlirIntegerTypeGet(ctx, 32) }
}

pub fn i64_type(ctx: Ctx) -> Type {
    unsafe { mlirIntegerTypeGet(ctx, 64) }
}

pub fn i1_type(ctx: Ctx) -> Type {
    unsafe { mlirIntegerTypeGet(ctx, 1) }
}

pub fn int_attr_of(ty: Type, value: i64) -> Attr {
    unsafe { mlirIntegerAttrGet(ty, value) }
}

pub fn string_attr(ctx: Ctx, text: &str) -> Attr {
    unsafe { mlirStringAttrGet(ctx, sref(text)) }
}

pub fn unit_attr(ctx: Ctx) -> Attr {
    unsafe { mlirUnitAttrGet(ctx) }
}

pub fn bool_attr(ctx: Ctx, value: bool) -> Attr {
    unsafe { mlirBoolAttrGet(ctx, value as i32) }
}

pub fn type_attr(ty: Type) -> Attr {
    unsafe { mlirTypeAttrGet(ty) }
}

pub fn type_attr_value(a: Attr) -> Option<Type> {
    unsafe { mlirAttributeIsAType(a).then(|| mlirTypeAttrGetValue(a)) }
}

/// Inputs of a `FunctionType`.
pub fn function_inputs(ty: Type) -> Vec<Type> {
    unsafe {
        (0..mlirFunctionTypeGetNumInputs(ty))
            .map(|i| mlirFunctionTypeGetInput(ty, i))
            .collect()
    }
}

pub fn function_results(ty: Type) -> Vec<Type> {
    unsafe {
        (0..mlirFunctionTypeGetNumResults(ty))
            .map(|i| mlirFunctionTypeGetResult(ty, i))
            .collect()
    }
}

pub fn function_type(ctx: Ctx, inputs: &[Type], results: &[Type]) -> Type {
    unsafe {
        mlirFunctionTypeGet(
            ctx,
            inputs.len() as isize,
            inputs.as_ptr(),
            results.len() as isize,
            results.as_ptr(),
        )
    }
}

pub fn is_integer_type(ty: Type, width: u32) -> bool {
    unsafe { mlirTypeIsAInteger(ty) && mlirIntegerTypeGetWidth(ty) == width }
}

pub fn is_f32_type(ty: Type) -> bool {
    unsafe { mlirTypeIsAF32(ty) }
}

pub fn is_ranked_tensor(ty: Type) -> bool {
    unsafe { mlirTypeIsARankedTensor(ty) }
}

/// Shape of a ranked tensor type.
pub fn tensor_shape(ty: Type) -> Option<Vec<i64>> {
    unsafe {
        mlirTypeIsARankedTensor(ty).then(|| {
            (0..mlirShapedTypeGetRank(ty))
                .map(|i| mlirShapedTypeGetDimSize(ty, i as isize))
                .collect()
        })
    }
}

pub fn tensor_element(ty: Type) -> Option<Type> {
    unsafe { mlirTypeIsARankedTensor(ty).then(|| mlirShapedTypeGetElementType(ty)) }
}

pub fn ranked_tensor(shape: &[i64], element: Type) -> Type {
    unsafe {
        mlirRankedTensorTypeGet(
            shape.len() as isize,
            shape.as_ptr(),
            element,
            mlirAttributeGetNull(),
        )
    }
}

// ----------------------------------------------------------------------------
// Locations
// ----------------------------------------------------------------------------

pub fn unknown_loc(ctx: Ctx) -> Loc {
    unsafe { mlirLocationUnknownGet(ctx) }
}

/// `loc("name"(child))`: how Triton names values after Python variables.
pub fn name_loc(ctx: Ctx, name: &str, child: Loc) -> Loc {
    unsafe { mlirLocationNameGet(ctx, sref(name), child) }
}

pub fn value_loc(value: Value) -> Loc {
    unsafe { mlirValueGetLocation(value) }
}

pub fn print_loc(loc: Loc) -> String {
    print_with(|cb, data| unsafe { mlirLocationPrint(loc, cb, data) })
}

/// The op after `op` in its block.
pub fn next_op(op: Op) -> Option<Op> {
    let n = unsafe { mlirOperationGetNextInBlock(op) };
    (!n.ptr.is_null()).then_some(n)
}

/// The constant integer value of `value`, if an `arith.constant` defines it.
pub fn constant_int(value: Value) -> Option<i64> {
    let op = defining_op(value)?;
    (op_name(op) == "arith.constant")
        .then(|| int_attr(op, "value"))
        .flatten()
}

/// The integer every element of `value` holds, if an `arith.constant`
/// defines it as a scalar or as a splat tensor of i32 or i64.
pub fn constant_splat_int(value: Value) -> Option<i64> {
    if let Some(scalar) = constant_int(value) {
        return Some(scalar);
    }
    let op = defining_op(value).filter(|op| op_name(*op) == "arith.constant")?;
    dense_splat_int(attr(op, "value")?)
}

/// The integer every element of `dense` holds, if it is a splat of i32 or
/// i64 (`dense<64> : tensor<1xi32>`, as Triton writes `tt.divisibility`).
pub fn dense_splat_int(dense: Attr) -> Option<i64> {
    unsafe {
        if !(mlirAttributeIsADenseIntElements(dense) && mlirDenseElementsAttrIsSplat(dense)) {
            return None;
        }
        let element = mlirShapedTypeGetElementType(mlirAttributeGetType(dense));
        match mlirIntegerTypeGetWidth(element) {
            32 => Some(i64::from(mlirDenseElementsAttrGetInt32SplatValue(dense))),
            64 => Some(mlirDenseElementsAttrGetInt64SplatValue(dense)),
            _ => None,
        }
    }
}

/// Every value `value` depends on through operands, `value` included.
/// Block arguments of `scf.for` bodies stand for the loop operands they come
/// from: an iteration argument for its initial value, the induction variable
/// for the lower bound and the step.
pub fn backward_slice(value: Value) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        if seen.iter().any(|s| same_value(*s, v)) {
            continue;
        }
        seen.push(v);
        if let Some(op) = defining_op(v) {
            stack.extend(operands(op));
        } else if let (Some(block), Some(index)) = (block_arg_owner(v), block_arg_number(v))
            && let Some(owner) = block_parent_op(block).filter(|o| op_name(*o) == "scf.for")
        {
            // scf.for operands: lower, upper, step, then the initial
            // values. The induction variable (argument 0) takes its
            // values from the lower bound and the step.
            let loop_operands = operands(owner);
            if index == 0 {
                stack.extend([loop_operands[0], loop_operands[2]]);
            } else if let Some(init) = loop_operands.get(2 + index) {
                stack.push(*init);
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ctx(MlirContext);
    impl Drop for Ctx {
        fn drop(&mut self) {
            unsafe { mlirContextDestroy(self.0) }
        }
    }

    fn context() -> Ctx {
        unsafe {
            let ctx = mlirContextCreate();
            mlirContextSetAllowUnregisteredDialects(ctx, true);
            let registry = mlirDialectRegistryCreate();
            mlirRegisterAllDialects(registry);
            mlirContextAppendDialectRegistry(ctx, registry);
            mlirDialectRegistryDestroy(registry);
            mlirContextLoadAllAvailableDialects(ctx);
            Ctx(ctx)
        }
    }

    fn parse(ctx: &Ctx, text: &str) -> Op {
        unsafe {
            let module = mlirModuleCreateParse(ctx.0, sref(text));
            assert!(!module.ptr.is_null(), "parses");
            mlirModuleGetOperation(module)
        }
    }

    const KERNEL: &str = r#"
      "tt.func"() <{function_type = (!tt.ptr<f32>, i32) -> (), sym_name = "k"}> ({
      ^bb0(%p: !tt.ptr<f32>, %n: i32):
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %c4 = arith.constant 4 : i32
        %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32 loc("pid_m"("k.py":3:0))
        %off = arith.muli %pid, %c4 : i32
        %q = "tt.addptr"(%p, %off) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %q) -> (!tt.ptr<f32>) : i32 {
          %x = "tt.load"(%acc) : (!tt.ptr<f32>) -> f32
          %next = "tt.addptr"(%acc, %c1) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
          scf.yield %next : !tt.ptr<f32>
        }
        "tt.return"() : () -> ()
      }) : () -> ()
    "#;

    #[test]
    fn walks_and_reads_generic_ops() {
        let ctx = context();
        let module = parse(&ctx, KERNEL);
        let names: Vec<String> = walk(module).into_iter().map(op_name).collect();
        assert_eq!(names.first().map(String::as_str), Some("builtin.module"));
        assert!(
            names.iter().position(|n| n == "scf.for") < names.iter().position(|n| n == "tt.load")
        );
        let pid = find_all(module, "tt.get_program_id")[0];
        assert_eq!(int_attr(pid, "axis"), Some(0));
        assert_eq!(loc::op_variable_name(pid).as_deref(), Some("pid_m"));
        let func = find_all(module, "tt.func")[0];
        assert_eq!(str_attr(func, "sym_name").as_deref(), Some("k"));
        let inputs =
            function_inputs(type_attr_value(attr(func, "function_type").unwrap()).unwrap());
        assert_eq!(
            inputs.iter().map(|t| print_type(*t)).collect::<Vec<_>>(),
            ["!tt.ptr<f32>", "i32"]
        );
    }

    #[test]
    fn backward_slices_see_through_loop_arguments() {
        let ctx = context();
        let module = parse(&ctx, KERNEL);
        let load = find_all(module, "tt.load")[0];
        let slice = backward_slice(operands(load)[0]);
        let pid = result(find_all(module, "tt.get_program_id")[0], 0);
        assert!(
            slice.iter().any(|v| same_value(*v, pid)),
            "the load's address depends on the program id"
        );
        let off = find_all(module, "arith.muli")[0];
        assert_eq!(constant_int(operands(off)[1]), Some(4));
        assert_eq!(constant_int(operands(off)[0]), None);
    }

    #[test]
    fn builds_ops_before_an_anchor() {
        let ctx = context();
        let module = parse(&ctx, KERNEL);
        let ret = find_all(module, "tt.return")[0];
        let b = Builder::before(ret);
        let x = b.const_i32(7);
        let y = b.addi(x, b.const_i32(1));
        b.if_then(b.cmpi(builder::Cmp::Slt, y, x), |inner| {
            inner.barrier();
        });
        assert!(unsafe { mlirOperationVerify(module) });
        let text = print_op(module);
        assert!(text.contains("arith.addi"), "{text}");
        assert!(text.contains("gpu.barrier"), "{text}");
        // The new ops sit before the return.
        let ops: Vec<String> = ops_in(block_of(ret).unwrap())
            .into_iter()
            .map(op_name)
            .collect();
        assert_eq!(ops.last().map(String::as_str), Some("tt.return"));
        assert!(ops.iter().any(|n| n == "scf.if"));
    }
}
