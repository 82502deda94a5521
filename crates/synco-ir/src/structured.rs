//! Typed Rust values as structured MLIR attributes, and back.
//!
//! A pass that hands a record to the next one (a list of copies, a flag
//! layout, the host schedule) stores it as builtin attributes rather than
//! as text: a struct becomes a `DictionaryAttr` (fields that are `None`
//! left out), a sequence of integers a `DenseI64ArrayAttr`
//! (`array<i64: 2, 4>`), any other sequence an `ArrayAttr`, an integer an
//! `i64` `IntegerAttr`, a string a `StringAttr`, a `bool` a `BoolAttr`.
//! So the record prints as MLIR (`{bytes = 256 : i64, owner = 1 : i64,
//! produced = array<i64: 0, 4>}`), a test can CHECK it field by field, and
//! [`from_attr`] reads it back into the same Rust type, refusing an
//! attribute of the wrong shape with a message naming the field.
//!
//! The conversion goes through `serde`'s data model (a value tree in
//! memory), so any `Serialize + Deserialize` type works without code of
//! its own.

use crate::{Attr, Ctx, sref, string};
use mlir_sys::*;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Number, Value as Tree};

/// Why a value could not be stored as, or read from, an attribute.
#[derive(Debug, thiserror::Error)]
pub enum StructuredError {
    #[error("{0}")]
    Shape(String),
    #[error("{0}")]
    Serde(#[from] serde_json::Error),
    #[error("at {}: {}", .0.path(), .0.inner())]
    Field(#[from] serde_path_to_error::Error<serde_json::Error>),
}

/// `value` as a structured attribute (see the module's description).
pub fn to_attr<T: Serialize>(ctx: Ctx, value: &T) -> Result<Attr, StructuredError> {
    encode(ctx, &serde_json::to_value(value)?)
}

/// The value of type `T` that `attr` holds (as [`to_attr`] wrote it).
pub fn from_attr<T: DeserializeOwned>(attr: Attr) -> Result<T, StructuredError> {
    Ok(serde_path_to_error::deserialize(decode(attr)?)?)
}

fn encode(ctx: Ctx, tree: &Tree) -> Result<Attr, StructuredError> {
    // SAFETY: `ctx` is a live context; every handle built here lives in it.
    unsafe {
        Ok(match tree {
            Tree::Null => mlirUnitAttrGet(ctx),
            Tree::Bool(b) => mlirBoolAttrGet(ctx, *b as i32),
            Tree::Number(n) => {
                let Some(v) = n.as_i64() else {
                    return Err(StructuredError::Shape(format!(
                        "{n} is not a 64-bit signed integer"
                    )));
                };
                mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), v)
            }
            Tree::String(s) => mlirStringAttrGet(ctx, sref(s)),
            Tree::Array(items) => match integers(items) {
                Some(ints) if !ints.is_empty() => {
                    mlirDenseI64ArrayGet(ctx, ints.len() as isize, ints.as_ptr())
                }
                _ => {
                    let elements = items
                        .iter()
                        .map(|item| encode(ctx, item))
                        .collect::<Result<Vec<_>, _>>()?;
                    mlirArrayAttrGet(ctx, elements.len() as isize, elements.as_ptr())
                }
            },
            Tree::Object(fields) => {
                let mut named = Vec::with_capacity(fields.len());
                for (key, value) in fields.iter().filter(|(_, v)| !v.is_null()) {
                    let name = mlirIdentifierGet(ctx, sref(key));
                    named.push(mlirNamedAttributeGet(name, encode(ctx, value)?));
                }
                mlirDictionaryAttrGet(ctx, named.len() as isize, named.as_ptr())
            }
        })
    }
}

fn integers(items: &[Tree]) -> Option<Vec<i64>> {
    items.iter().map(Tree::as_i64).collect()
}

fn decode(attr: Attr) -> Result<Tree, StructuredError> {
    // SAFETY: `attr` is a live attribute; the accessors match its kind.
    unsafe {
        if mlirAttributeIsAUnit(attr) {
            Ok(Tree::Null)
        } else if mlirAttributeIsABool(attr) {
            Ok(Tree::Bool(mlirBoolAttrGetValue(attr)))
        } else if mlirAttributeIsAInteger(attr) {
            Ok(Tree::Number(Number::from(mlirIntegerAttrGetValueInt(attr))))
        } else if mlirAttributeIsAString(attr) {
            Ok(Tree::String(string(mlirStringAttrGetValue(attr))))
        } else if mlirAttributeIsADenseI64Array(attr) {
            Ok(Tree::Array(
                (0..mlirDenseArrayGetNumElements(attr))
                    .map(|i| Tree::Number(Number::from(mlirDenseI64ArrayGetElement(attr, i))))
                    .collect(),
            ))
        } else if mlirAttributeIsAArray(attr) {
            (0..mlirArrayAttrGetNumElements(attr))
                .map(|i| decode(mlirArrayAttrGetElement(attr, i)))
                .collect::<Result<_, _>>()
                .map(Tree::Array)
        } else if mlirAttributeIsADictionary(attr) {
            let mut fields = Map::new();
            for i in 0..mlirDictionaryAttrGetNumElements(attr) {
                let named = mlirDictionaryAttrGetElement(attr, i);
                let key = string(mlirIdentifierStr(named.name));
                fields.insert(key, decode(named.attribute)?);
            }
            Ok(Tree::Object(fields))
        } else {
            Err(StructuredError::Shape(format!(
                "{} is not a record attribute (a dictionary, array, integer, string or bool)",
                crate::print_attr(attr)
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Copy {
        name: String,
        bytes: i64,
        produced: (i64, i64),
        arrived: Option<i64>,
        before_kernel: bool,
        rows: Option<Rows>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Rows {
        count: i64,
        pitch: i64,
    }

    struct Context(Ctx);
    impl Drop for Context {
        fn drop(&mut self) {
            unsafe { mlirContextDestroy(self.0) }
        }
    }

    fn context() -> Context {
        Context(unsafe { mlirContextCreate() })
    }

    fn copies() -> Vec<Vec<Copy>> {
        vec![
            vec![Copy {
                name: "C_p1".into(),
                bytes: 1 << 40,
                produced: (3, 4),
                arrived: None,
                before_kernel: true,
                rows: Some(Rows {
                    count: 256,
                    pitch: -512,
                }),
            }],
            vec![],
        ]
    }

    #[test]
    fn records_print_as_mlir_and_read_back() {
        let ctx = context();
        let attr = to_attr(ctx.0, &copies()).expect("encodes");
        assert_eq!(
            crate::print_attr(attr),
            "[[{before_kernel = true, bytes = 1099511627776 : i64, name = \"C_p1\", \
             produced = array<i64: 3, 4>, rows = {count = 256 : i64, pitch = -512 : i64}}], []]"
        );
        let back: Vec<Vec<Copy>> = from_attr(attr).expect("decodes");
        assert_eq!(back, copies());
    }

    #[test]
    fn attributes_of_another_shape_are_refused() {
        let ctx = context();
        // A copy whose `produced` is a string, and one without it.
        for text in [
            "[[{before_kernel = true, bytes = 1, name = \"x\", produced = \"3, 4\"}]]",
            "[[{before_kernel = true, bytes = 1, name = \"x\"}]]",
            "[[{before_kernel = true, bytes = 1.5, name = \"x\", produced = array<i64: 3, 4>}]]",
        ] {
            let attr = crate::parse_attr(ctx.0, text).expect("parses");
            let error = from_attr::<Vec<Vec<Copy>>>(attr)
                .expect_err(text)
                .to_string();
            assert!(
                error.contains("produced") || error.contains("1.5"),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn integers_beyond_i64_are_refused() {
        let ctx = context();
        assert!(to_attr(ctx.0, &[u64::MAX]).is_err());
    }
}
