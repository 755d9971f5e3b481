//! An MCP tool's input schema, cleaned to what the OpenAI function format accepts.
//!
//! MCP servers send any JSON Schema; chat-completions servers accept less. The request must
//! not fail because one server wrote a schema loosely, so the schema is mended where the fix
//! is clear and the meaning kept:
//!
//! - the top level is an object schema (`"type": "object"` with `properties`), without the
//!   combinators (`anyOf`, `oneOf`, `allOf`, `not`) and `enum`/`const` that OpenAI refuses
//!   there;
//! - a sub-schema without `type` gets the one its keywords imply (`properties`: object,
//!   `items`: array, `enum`/`const`: the values' type, string or number keywords), else
//!   `string`, as Codex does; `true` becomes `{}` with that default and `false` is dropped with
//!   its property;
//! - an object gets `properties`, an array `items` when missing (OpenAI answers 400 to an
//!   array without `items`);
//! - `$schema` and `$id`, which some servers refuse, are removed.
//!
//! A schema nested deeper than [`MAX_DEPTH`] or larger than [`MAX_SCHEMA_BYTES`] once cleaned
//! is refused: its tool is left out with a warning.

use serde_json::{Map, Value};

/// Levels of nested sub-schemas a tool's schema may have.
pub const MAX_DEPTH: usize = 32;

/// Bytes of one tool's cleaned schema, as JSON: it is sent with every request.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// The cleaned schema, or why the tool cannot be offered.
pub fn clean(input: &Map<String, Value>) -> Result<Value, String> {
    let mut top = input.clone();
    for k in ["anyOf", "oneOf", "allOf", "not", "enum", "const"] {
        top.remove(k);
    }
    let is_object = match top.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !is_object {
        return Err("its input schema is not an object schema".into());
    }
    top.insert("type".into(), Value::String("object".into()));
    let mut top = Value::Object(top);
    mend(&mut top, 0)?;
    let size = serde_json::to_string(&top).map_or(usize::MAX, |s| s.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is {size} bytes of JSON; the limit is {MAX_SCHEMA_BYTES}"
        ));
    }
    Ok(top)
}

/// Keywords whose value is a map of sub-schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is a list of sub-schemas.
const SCHEMA_LISTS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value is one sub-schema.
const SCHEMA_ONE: [&str; 4] = ["items", "additionalProperties", "not", "contains"];

fn mend(schema: &mut Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "its input schema is nested deeper than {MAX_DEPTH} levels"
        ));
    }
    if schema == &Value::Bool(true) {
        *schema = Value::Object(Map::new());
    }
    let Value::Object(map) = schema else {
        return Ok(());
    };
    map.remove("$schema");
    map.remove("$id");
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(subs)) = map.get_mut(key) {
            subs.retain(|_, v| v != &Value::Bool(false));
            for v in subs.values_mut() {
                mend(v, depth + 1)?;
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            for v in subs.iter_mut() {
                mend(v, depth + 1)?;
            }
        }
    }
    for key in SCHEMA_ONE {
        // `additionalProperties: false` is meaningful as it is; only schemas are mended.
        if let Some(v @ Value::Object(_)) = map.get_mut(key) {
            mend(v, depth + 1)?;
        }
    }
    if !map.contains_key("type") && !has_combinator(map) {
        let t = implied_type(map);
        map.insert("type".into(), Value::String(t.into()));
    }
    let has = |map: &Map<String, Value>, t: &str| match map.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(ts)) => ts.iter().any(|x| x == t),
        _ => false,
    };
    if has(map, "object") && !map.contains_key("properties") {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    if has(map, "array") && !matches!(map.get("items"), Some(Value::Object(_))) {
        let mut items = Map::new();
        items.insert("type".into(), Value::String("string".into()));
        map.insert("items".into(), Value::Object(items));
    }
    Ok(())
}

/// Schemas made of alternatives (or references) get their type from them.
fn has_combinator(map: &Map<String, Value>) -> bool {
    ["anyOf", "oneOf", "allOf", "$ref", "not"]
        .iter()
        .any(|k| map.contains_key(*k))
}

fn implied_type(map: &Map<String, Value>) -> &'static str {
    let any = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
    if any(&[
        "properties",
        "additionalProperties",
        "patternProperties",
        "required",
    ]) {
        return "object";
    }
    if any(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
    ]) {
        return "array";
    }
    let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(vs)), _) => vs.iter().collect(),
        (_, Some(v)) => vec![v],
        _ => Vec::new(),
    };
    if let Some(first) = values.first() {
        return match first {
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            _ => "string",
        };
    }
    if any(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        return "number";
    }
    "string"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cleaned(v: Value) -> Result<Value, String> {
        match v {
            Value::Object(m) => clean(&m),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn a_good_schema_passes_unchanged() {
        let s = json!({"type": "object", "properties": {"path": {"type": "string",
            "description": "p"}}, "required": ["path"], "additionalProperties": false});
        assert_eq!(cleaned(s.clone()), Ok(s));
    }

    #[test]
    fn loose_schemas_are_mended() {
        let s = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "anyOf": [{"required": ["a"]}],
            "properties": {
                "a": {"description": "no type"},
                "b": {"enum": [1, 2]},
                "c": {"type": "array"},
                "d": {"properties": {"x": true}},
                "e": false,
                "f": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "g": {"type": ["array", "null"], "items": {"minimum": 0}}
            }
        });
        assert_eq!(
            cleaned(s),
            Ok(json!({
                "properties": {
                    "a": {"description": "no type", "type": "string"},
                    "b": {"enum": [1, 2], "type": "integer"},
                    "c": {"type": "array", "items": {"type": "string"}},
                    "d": {"properties": {"x": {"type": "string"}}, "type": "object"},
                    "f": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "g": {"type": ["array", "null"], "items": {"minimum": 0, "type": "number"}}
                },
                "type": "object"
            }))
        );
        assert_eq!(
            cleaned(json!({})),
            Ok(json!({"type": "object", "properties": {}}))
        );
    }

    #[test]
    fn what_cannot_be_mended_is_refused() {
        let e = cleaned(json!({"type": "string"})).unwrap_err();
        assert_eq!(e, "its input schema is not an object schema");
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        let e = cleaned(deep).unwrap_err();
        assert!(e.contains("deeper than 32"), "{e}");
        let big = json!({"type": "object", "description": "x".repeat(70_000)});
        let e = cleaned(big).unwrap_err();
        assert!(e.contains("the limit is 65536"), "{e}");
    }
}
