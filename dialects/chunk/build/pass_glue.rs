//! Generates, from `ChunkPasses.td` (read as `llvm-tblgen --dump-json`
//! records), the two halves that connect each declared pass to its Rust
//! body:
//!
//! * C++ (`ChunkPassImpls.cpp.inc`): one final class per pass, deriving from
//!   the `impl::<Pass>Base` that `-gen-pass-decls` writes; it checks
//!   `BoundedOption` ranges when the pipeline is parsed and hands its typed
//!   option values to the Rust body registered under the pass's argument;
//! * Rust (`pass_options.rs`): one options struct per pass and one enum per
//!   enum option type, with the declared defaults, built from those values;
//! * C++ (`SyncoFuseOptions.h.inc`): the options `synco-fuse` forwards to its
//!   passes (`SyncoFuseForwards`), as members of its options struct, and the
//!   pass text that hands them on.
//!
//! Nothing here is written by hand twice: a pass's options exist, with one
//! type, one default and one description, in the `.td`.

use serde_json::Value;
use std::fmt::Write as _;

type Error = Box<dyn std::error::Error>;

/// An enum usable as an option type (an `I32EnumAttr` in the `.td`).
pub struct OptionEnum {
    /// C++ type, e.g. `::synco::chunk::ReductionMode`.
    pub cpp_type: String,
    pub rust_name: String,
    pub summary: String,
    /// (C++ symbol, spelling in pipelines, value).
    pub cases: Vec<(String, String, i64)>,
}

impl OptionEnum {
    /// The C++ function that `-gen-enum-decls` writes for a case's
    /// spelling: `::synco::chunk::stringifyReductionMode`.
    pub fn stringify_function(&self) -> String {
        match self.cpp_type.rsplit_once("::") {
            Some((namespace, class)) => format!("{namespace}::stringify{class}"),
            None => format!("stringify{}", self.cpp_type),
        }
    }
}

pub enum OptionKind {
    Int {
        bounds: Option<(i64, i64)>,
    },
    Bool,
    /// `count_or_auto`: a `CountOrAutoOption`, `auto` or a count in the
    /// range (checked when the pipeline is parsed).
    Str {
        count_or_auto: Option<(i64, i64)>,
    },
    Enum(usize),
}

pub struct PassOption {
    pub cpp_name: String,
    pub argument: String,
    pub description: String,
    pub default: String,
    /// C++ `llvm::cl` modifiers after the default, e.g. the enum's
    /// `::llvm::cl::values(...)` list.
    pub additional_flags: String,
    pub kind: OptionKind,
}

pub struct PassDecl {
    /// The record name, e.g. `ChunkTraceTiles`.
    pub name: String,
    pub argument: String,
    pub summary: String,
    pub options: Vec<PassOption>,
}

pub struct Declarations {
    pub enums: Vec<OptionEnum>,
    pub passes: Vec<PassDecl>,
}

/// A pass option that a pipeline takes under an argument of its own (a
/// `ForwardedOption` in the `.td`) and hands on to the pass.
pub struct ForwardedOption {
    /// The declaring pass, an index into `Declarations::passes`.
    pub pass: usize,
    /// The option, an index into that pass's `options`.
    pub option: usize,
    /// The option's argument in the pipeline.
    pub argument: String,
}

fn field<'a>(record: &'a Value, name: &str) -> Result<&'a Value, Error> {
    record
        .get(name)
        .ok_or_else(|| format!("record {} has no field {name}", record["!name"]).into())
}

fn string(record: &Value, name: &str) -> Result<String, Error> {
    Ok(field(record, name)?
        .as_str()
        .ok_or_else(|| format!("field {name} of {} is not a string", record["!name"]))?
        .to_string())
}

fn int(record: &Value, name: &str) -> Result<i64, Error> {
    field(record, name)?
        .as_i64()
        .ok_or_else(|| format!("field {name} of {} is not an integer", record["!name"]).into())
}

/// The records a list field refers to (`[{"def": "anonymous_3"}, ...]`).
fn defs<'a>(records: &'a Value, record: &Value, name: &str) -> Result<Vec<&'a Value>, Error> {
    field(record, name)?
        .as_array()
        .ok_or_else(|| format!("field {name} is not a list"))?
        .iter()
        .map(|item| {
            let def = item["def"].as_str().ok_or("list item is not a def")?;
            records
                .get(def)
                .ok_or_else(|| format!("no record {def}").into())
        })
        .collect()
}

fn instances<'a>(records: &'a Value, class: &str) -> Vec<&'a str> {
    records["!instanceof"][class]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn camel_case(snake: &str) -> String {
    snake
        .split(['_', '-'])
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn snake_case(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads the passes and option enums out of the `--dump-json` records.
pub fn read(records: &Value) -> Result<Declarations, Error> {
    let mut enums = Vec::new();
    for name in instances(records, "I32EnumAttr") {
        let record = &records[name];
        let class = string(record, "className")?;
        let mut cases = Vec::new();
        for case in defs(records, record, "enumerants")? {
            cases.push((
                string(case, "symbol")?,
                string(case, "str")?,
                int(case, "value")?,
            ));
        }
        enums.push(OptionEnum {
            cpp_type: format!("{}::{class}", string(record, "cppNamespace")?),
            rust_name: class,
            summary: string(record, "summary")?,
            cases,
        });
    }
    let mut passes = Vec::new();
    for name in instances(records, "Pass") {
        let record = &records[name];
        let mut options = Vec::new();
        for option in defs(records, record, "options")? {
            options.push(read_option(option, &enums)?);
        }
        passes.push(PassDecl {
            name: name.to_string(),
            argument: string(record, "argument")?,
            summary: string(record, "summary")?,
            options,
        });
    }
    Ok(Declarations { enums, passes })
}

fn read_option(option: &Value, enums: &[OptionEnum]) -> Result<PassOption, Error> {
    let cpp_type = string(option, "type")?;
    let argument = string(option, "argument")?;
    let kind = match cpp_type.as_str() {
        "int64_t" => {
            let bounded = option.get("minValue").is_some();
            OptionKind::Int {
                bounds: if bounded {
                    Some((int(option, "minValue")?, int(option, "maxValue")?))
                } else {
                    None
                },
            }
        }
        "bool" => OptionKind::Bool,
        "std::string" => OptionKind::Str {
            // `CountOrAutoOption`: `auto` or a count in the range.
            count_or_auto: if option.get("minValue").is_some() {
                Some((int(option, "minValue")?, int(option, "maxValue")?))
            } else {
                None
            },
        },
        other => {
            let index = enums
                .iter()
                .position(|e| e.cpp_type == other)
                .ok_or_else(|| {
                    format!(
                        "option {argument} has type {other}: use int64_t (or BoundedOption), \
                         bool, std::string or an I32EnumAttr declared in ChunkPasses.td"
                    )
                })?;
            // The `cl::values` list is the one place the spellings are
            // repeated; it must name every case.
            let flags = string(option, "additionalOptFlags")?;
            for (_, spelling, _) in &enums[index].cases {
                if !flags.contains(&format!("\"{spelling}\"")) {
                    return Err(format!(
                        "option {argument}: its cl::values list does not name \"{spelling}\""
                    )
                    .into());
                }
            }
            OptionKind::Enum(index)
        }
    };
    Ok(PassOption {
        cpp_name: string(option, "cppName")?,
        argument,
        description: string(option, "description")?,
        default: string(option, "defaultValue")?,
        additional_flags: string(option, "additionalOptFlags")?,
        kind,
    })
}

/// Reads the options that the record `forwards` (e.g. `SyncoFuseForwards`)
/// lists, each found among the declared passes' options.
pub fn read_forwards(
    records: &Value,
    forwards: &str,
    decls: &Declarations,
) -> Result<Vec<ForwardedOption>, Error> {
    let record = records
        .get(forwards)
        .ok_or_else(|| format!("ChunkPasses.td declares no {forwards}"))?;
    let mut options: Vec<ForwardedOption> = Vec::new();
    for forward in defs(records, record, "options")? {
        let option = read_forward(forward, decls)?;
        if options.iter().any(|o| o.argument == option.argument) {
            return Err(format!("{forwards}: option {} is listed twice", option.argument).into());
        }
        options.push(option);
    }
    Ok(options)
}

fn read_forward(forward: &Value, decls: &Declarations) -> Result<ForwardedOption, Error> {
    let pass_name = field(forward, "pass")?["def"]
        .as_str()
        .ok_or_else(|| format!("field pass of {} is not a record", forward["!name"]))?;
    let pass = decls
        .passes
        .iter()
        .position(|p| p.name == pass_name)
        .ok_or_else(|| format!("{pass_name} is not a pass declared in ChunkPasses.td"))?;
    let pass_argument = string(forward, "passArgument")?;
    let option = decls.passes[pass]
        .options
        .iter()
        .position(|o| o.argument == pass_argument)
        .ok_or_else(|| {
            format!(
                "{} has no option {pass_argument}",
                decls.passes[pass].argument
            )
        })?;
    Ok(ForwardedOption {
        pass,
        option,
        argument: string(forward, "argument")?,
    })
}

/// The C++ pass classes.
pub fn cpp(decls: &Declarations) -> String {
    let mut out =
        String::from("// Generated by dialects/chunk/build/pass_glue.rs from ChunkPasses.td.\n\n");
    for pass in &decls.passes {
        let _ = writeln!(out, "#define GEN_PASS_DEF_{}", pass.name.to_uppercase());
    }
    out.push_str("#include \"synco/Dialect/Chunk/ChunkPasses.h.inc\"\n\nnamespace {\n");
    for pass in &decls.passes {
        let name = &pass.name;
        let _ = writeln!(
            out,
            "\nstruct {name}Pass final : impl::{name}Base<{name}Pass> {{\n  using Base::Base;"
        );
        let bounded: Vec<String> = pass
            .options
            .iter()
            .filter_map(|o| match o.kind {
                OptionKind::Int {
                    bounds: Some((min, max)),
                } => Some(format!(
                    "checkBounds(\"{}\", \"{}\", {}.getValue(), {min}LL, {max}LL, report)",
                    pass.argument, o.argument, o.cpp_name
                )),
                OptionKind::Str {
                    count_or_auto: Some((min, max)),
                } => Some(format!(
                    "checkCountOrAuto(\"{}\", \"{}\", {}.getValue(), {min}LL, {max}LL, report)",
                    pass.argument, o.argument, o.cpp_name
                )),
                _ => None,
            })
            .collect();
        if !bounded.is_empty() {
            let _ = writeln!(
                out,
                "  ::mlir::LogicalResult checkOptions(\n      \
                 ::llvm::function_ref<::mlir::LogicalResult(const ::llvm::Twine &)> report) {{\n    \
                 return ::mlir::success({});\n  }}",
                bounded
                    .iter()
                    .map(|c| format!("::mlir::succeeded({c})"))
                    .collect::<Vec<_>>()
                    .join(" &&\n        ")
            );
            out.push_str(
                "  ::mlir::LogicalResult initializeOptions(\n      ::llvm::StringRef options,\n      \
                 ::llvm::function_ref<::mlir::LogicalResult(const ::llvm::Twine &)> errorHandler) override {\n    \
                 if (::mlir::failed(Pass::initializeOptions(options, errorHandler)))\n      \
                 return ::mlir::failure();\n    return checkOptions(errorHandler);\n  }\n",
            );
        }
        out.push_str("  void runOnOperation() override {\n");
        if !bounded.is_empty() {
            out.push_str(
                "    if (::mlir::failed(checkOptions([&](const ::llvm::Twine &message) {\n          \
                 return getOperation()->emitError(message);\n        })))\n      \
                 return signalPassFailure();\n",
            );
        }
        let values: Vec<String> = pass
            .options
            .iter()
            .map(|o| format!("optionValue({}.getValue())", o.cpp_name))
            .collect();
        if values.is_empty() {
            out.push_str("    if (::mlir::failed(runRustPass(*this, getOperation(), {})))\n");
        } else {
            let _ = writeln!(
                out,
                "    const SyncoPassOptionValue values[] = {{{}}};\n    \
                 if (::mlir::failed(runRustPass(*this, getOperation(), values)))",
                values.join(", ")
            );
        }
        out.push_str("      signalPassFailure();\n  }\n};\n");
    }
    out.push_str("\n} // namespace\n");
    out.push_str(
        "\n/// Whether `argument` names a pass that ChunkPasses.td declares (one\n/// whose body is Rust).\nbool isDeclaredPass(::llvm::StringRef argument) {\n  static constexpr ::llvm::StringLiteral declared[] = {",
    );
    for pass in &decls.passes {
        let _ = write!(out, "\n      \"{}\",", pass.argument);
    }
    out.push_str("\n  };\n  return ::llvm::is_contained(declared, argument);\n}\n");
    out
}

fn rust_type(decls: &Declarations, kind: &OptionKind) -> String {
    match kind {
        OptionKind::Int { .. } => "i64".into(),
        OptionKind::Bool => "bool".into(),
        OptionKind::Str { .. } => "String".into(),
        OptionKind::Enum(index) => decls.enums[*index].rust_name.clone(),
    }
}

fn rust_default(decls: &Declarations, option: &PassOption) -> Result<String, Error> {
    let default = option.default.trim();
    Ok(match &option.kind {
        OptionKind::Int { .. } => {
            let value: i64 = default.parse().map_err(|_| {
                format!(
                    "option {}: default {default:?} is not an integer",
                    option.argument
                )
            })?;
            value.to_string()
        }
        OptionKind::Bool => match default {
            "true" => "true".into(),
            "false" | "" => "false".into(),
            other => {
                return Err(format!("option {}: bool default {other:?}", option.argument).into());
            }
        },
        OptionKind::Str { .. } => {
            let text = default.trim_matches('"');
            format!("String::from({text:?})")
        }
        OptionKind::Enum(index) => {
            let e = &decls.enums[*index];
            let symbol = default.rsplit("::").next().unwrap_or_default();
            if !e.cases.iter().any(|(s, _, _)| s == symbol) {
                return Err(format!(
                    "option {}: default {default:?} is not a case",
                    option.argument
                )
                .into());
            }
            format!("{}::{}", e.rust_name, camel_case(symbol))
        }
    })
}

/// The `llvm::cl::parser` specialisations of the option enums.
pub fn cpp_parsers(decls: &Declarations) -> String {
    let mut out =
        String::from("// Generated by dialects/chunk/build/pass_glue.rs from ChunkPasses.td.\n");
    for e in &decls.enums {
        let _ = writeln!(
            out,
            "\ntemplate <>\nclass llvm::cl::parser<{0}>\n    : public ::synco::chunk::EnumOptionParser<{0}> {{\npublic:\n  \
             using EnumOptionParser::EnumOptionParser;\n}};",
            e.cpp_type
        );
    }
    out
}

/// The members of the options struct of `pipeline` (its argument) for the
/// options it forwards: one `Option` each, with the pass option's type,
/// default and modifiers, and `printPass`, which writes a pass of the
/// pipeline's list with the options forwarded to it.
pub fn cpp_forwarded_options(
    decls: &Declarations,
    pipeline: &str,
    forwards: &[ForwardedOption],
) -> String {
    let mut out = format!(
        "// Generated by dialects/chunk/build/pass_glue.rs from ChunkPasses.td: the\n\
         // options {pipeline} forwards to its passes, as members of its options\n\
         // struct.\n"
    );
    for forward in forwards {
        out.push_str(&forwarded_option_member(decls, forward));
    }
    out.push_str(&print_pass_function(decls, pipeline, forwards));
    out
}

fn forwarded_option_member(decls: &Declarations, forward: &ForwardedOption) -> String {
    let pass = &decls.passes[forward.pass];
    let option = &pass.options[forward.option];
    let description = format!(
        "{} {}: {}",
        possessive(&pass.argument),
        option.argument,
        lowercase_initial(&option.description)
    );
    let mut modifiers = vec![format!("::llvm::cl::desc({})", cpp_string(&description))];
    if !option.default.is_empty() {
        modifiers.push(format!("::llvm::cl::init({})", option.default));
    }
    if !option.additional_flags.trim().is_empty() {
        modifiers.push(reindent(&option.additional_flags, "        "));
    }
    format!(
        "\nOption<{}> {}{{\n    *this, \"{}\",\n    {}}};\n",
        cpp_type(decls, &option.kind),
        member_name(forward),
        forward.argument,
        modifiers.join(",\n    ")
    )
}

/// `printPass`: the pass's argument, then `{arg=value ...}` of the options
/// forwarded to it, in the order they are listed.
fn print_pass_function(
    decls: &Declarations,
    pipeline: &str,
    forwards: &[ForwardedOption],
) -> String {
    let mut out = format!(
        "\n/// Writes `pass` as pipeline text, with the options {pipeline} forwards to\n\
         /// it (`pass{{arg=value ...}}`).\n\
         void printPass(::llvm::raw_ostream &os, ::llvm::StringRef pass) const {{\n  \
         os << pass;\n"
    );
    for (i, pass) in forwarded_passes(forwards).into_iter().enumerate() {
        let assignments: Vec<String> = forwards
            .iter()
            .filter(|f| f.pass == pass)
            .enumerate()
            .map(|(j, f)| forwarded_assignment(decls, f, if j == 0 { '{' } else { ' ' }))
            .collect();
        let _ = writeln!(
            out,
            "  {}if (pass == \"{}\")\n    os << {} << \"}}\";",
            if i == 0 { "" } else { "else " },
            decls.passes[pass].argument,
            assignments.join("\n       << ")
        );
    }
    out.push_str("}\n");
    out
}

/// The passes that options are forwarded to, in the order of their first
/// option.
fn forwarded_passes(forwards: &[ForwardedOption]) -> Vec<usize> {
    let mut passes = Vec::new();
    for forward in forwards {
        if !passes.contains(&forward.pass) {
            passes.push(forward.pass);
        }
    }
    passes
}

/// `"{arg=" << value` of one forwarded option, as C++ stream operands
/// (`separator` is `{` for a pass's first option, else a space).
fn forwarded_assignment(
    decls: &Declarations,
    forward: &ForwardedOption,
    separator: char,
) -> String {
    let option = &decls.passes[forward.pass].options[forward.option];
    let value = format!("{}.getValue()", member_name(forward));
    let text = match &option.kind {
        OptionKind::Int { .. } | OptionKind::Str { .. } => value,
        OptionKind::Bool => format!("({value} ? \"true\" : \"false\")"),
        OptionKind::Enum(index) => {
            format!("{}({value})", decls.enums[*index].stringify_function())
        }
    };
    format!("\"{separator}{}=\" << {text}", option.argument)
}

/// The C++ name of a forwarded option's member: `reduction-mode` is
/// `reductionMode`.
fn member_name(forward: &ForwardedOption) -> String {
    lowercase_initial(&camel_case(&forward.argument))
}

fn cpp_type(decls: &Declarations, kind: &OptionKind) -> String {
    match kind {
        OptionKind::Int { .. } => "int64_t".into(),
        OptionKind::Bool => "bool".into(),
        OptionKind::Str { .. } => "std::string".into(),
        OptionKind::Enum(index) => decls.enums[*index].cpp_type.clone(),
    }
}

/// `chunk-select-backend's`, `chunk-reorder-tiles'`.
fn possessive(name: &str) -> String {
    if name.ends_with('s') {
        format!("{name}'")
    } else {
        format!("{name}'s")
    }
}

/// Code copied from the `.td` (trimmed), its lines after the first moved to
/// `indent` plus their depth below the least indented of them.
fn reindent(code: &str, indent: &str) -> String {
    let mut lines = code.trim().lines();
    let first = lines.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = lines.collect();
    let least = rest
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    rest.iter().fold(first, |text, line| {
        let depth = line.get(least..).unwrap_or("").trim_end();
        format!("{text}\n{indent}{depth}")
    })
}

/// `text` as a C++ string literal.
fn cpp_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The Rust option structs and enums.
pub fn rust(decls: &Declarations) -> Result<String, Error> {
    let mut out =
        String::from("// Generated by dialects/chunk/build/pass_glue.rs from ChunkPasses.td.\n");
    for e in &decls.enums {
        let name = &e.rust_name;
        let _ = writeln!(
            out,
            "\n/// {} (`{}` in ChunkPasses.td).\n#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\npub enum {name} {{",
            capitalise(&e.summary),
            e.cpp_type
        );
        for (symbol, spelling, _) in &e.cases {
            let _ = writeln!(out, "    /// `{spelling}`\n    {},", camel_case(symbol));
        }
        out.push_str("}\n");
        let _ = writeln!(
            out,
            "\nimpl {name} {{\n    /// Every case, in declaration order.\n    pub const ALL: &'static [Self] = &[{}];",
            e.cases
                .iter()
                .map(|(s, _, _)| format!("Self::{}", camel_case(s)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        out.push_str("\n    /// The spelling in pipelines (`mode=push`).\n    pub fn as_str(self) -> &'static str {\n        match self {\n");
        for (symbol, spelling, _) in &e.cases {
            let _ = writeln!(
                out,
                "            Self::{} => {spelling:?},",
                camel_case(symbol)
            );
        }
        out.push_str("        }\n    }\n\n    fn from_value(value: i64) -> Option<Self> {\n        match value {\n");
        for (symbol, _, value) in &e.cases {
            let _ = writeln!(
                out,
                "            {value} => Some(Self::{}),",
                camel_case(symbol)
            );
        }
        out.push_str("            _ => None,\n        }\n    }\n}\n");
    }
    for pass in &decls.passes {
        let name = format!("{}Options", pass.name);
        let _ = writeln!(
            out,
            "\n/// Options of `{}` ({}: {}).\n#[derive(Clone, Debug, PartialEq)]\npub struct {name} {{",
            pass.argument, pass.name, pass.summary
        );
        for o in &pass.options {
            let _ = writeln!(
                out,
                "    /// `{}`: {}\n    pub {}: {},",
                o.argument,
                o.description,
                snake_case(&o.cpp_name),
                rust_type(decls, &o.kind)
            );
        }
        out.push_str("}\n");
        let _ = writeln!(
            out,
            "\nimpl Default for {name} {{\n    fn default() -> Self {{\n        Self {{"
        );
        for o in &pass.options {
            let _ = writeln!(
                out,
                "            {}: {},",
                snake_case(&o.cpp_name),
                rust_default(decls, o)?
            );
        }
        out.push_str("        }\n    }\n}\n");
        let _ = writeln!(
            out,
            "\nimpl PassOptions for {name} {{\n    const ARGUMENT: &'static str = {:?};\n\n    \
             fn from_values(values: &[OptionValue]) -> Result<Self, String> {{\n        \
             if values.len() != {} {{\n            return Err(format!(\"{{}} values for {} options\", values.len()));\n        }}\n        Ok(Self {{",
            pass.argument,
            pass.options.len(),
            pass.options.len()
        );
        for (i, o) in pass.options.iter().enumerate() {
            let read = match &o.kind {
                OptionKind::Int { .. } => format!("values[{i}].integer"),
                OptionKind::Bool => format!("values[{i}].integer != 0"),
                OptionKind::Str { .. } => format!("values[{i}].text()?"),
                OptionKind::Enum(index) => format!(
                    "{0}::from_value(values[{i}].integer).ok_or(\"{1}: not a case of {0}\")?",
                    decls.enums[*index].rust_name, o.argument
                ),
            };
            let _ = writeln!(out, "            {}: {read},", snake_case(&o.cpp_name));
        }
        out.push_str("        })\n    }\n}\n");
    }
    let _ = writeln!(
        out,
        "\n/// The argument of every pass declared in ChunkPasses.td (by record name).\npub const DECLARED_PASSES: &[&str] = &[{}];",
        decls
            .passes
            .iter()
            .map(|p| format!("{:?}", p.argument))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(out)
}

/// `text` with its first letter in lower case, unless the word is an
/// acronym (`How partials` -> `how partials`, `TMA` stays).
fn lowercase_initial(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), second) if second.is_none_or(|c| !c.is_ascii_uppercase()) => {
            first.to_ascii_lowercase().to_string() + &text[first.len_utf8()..]
        }
        _ => text.to_string(),
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}
