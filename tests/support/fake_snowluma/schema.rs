//! The JSON Schema subset used by the catalog's `returnsSchema`: build a
//! value that satisfies a schema (fallback answers for actions without a
//! canned one) and check a value against a schema (for tests).

use serde_json::{Map, Value, json};

use super::{GROUP_ID, MESSAGE_ID, SELF_ID, USER_ID};

/// A value satisfying `schema`, or `None` when nothing can (`not: {}` marks
/// actions that always fail in SnowLuma). `key` is the property name, used
/// to pick ids that match the other canned answers.
pub(super) fn synthesize(schema: &Value, key: Option<&str>) -> Option<Value> {
    let Some(obj) = schema.as_object() else {
        return Some(Value::Null);
    };
    if let Some(c) = obj.get("const") {
        return Some(c.clone());
    }
    if let Some(first) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return Some(first.clone());
    }
    if obj
        .get("not")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        return None;
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str),
        _ if obj.contains_key("properties") => Some("object"),
        _ => None,
    };
    let Some(ty) = ty else {
        // A bare oneOf/anyOf: its first branch is enough.
        let branch = obj
            .get("oneOf")
            .or_else(|| obj.get("anyOf"))
            .and_then(Value::as_array)
            .and_then(|b| b.first());
        return match branch {
            Some(b) => synthesize(b, key),
            None => Some(Value::Null),
        };
    };
    Some(match ty {
        "object" => {
            let mut out = Map::new();
            if obj.get("maxProperties").and_then(Value::as_u64) == Some(0) {
                return Some(Value::Object(out));
            }
            // Every listed property, so `anyOf: [{required: [..]}]` holds too.
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    out.insert(name.clone(), synthesize(sub, Some(name))?);
                }
            }
            for name in obj
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                out.entry(name.to_string()).or_insert_with(|| json!(""));
            }
            Value::Object(out)
        }
        "array" => {
            let max = obj.get("maxItems").and_then(Value::as_u64);
            let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let count = if max == Some(0) { 0 } else { min.max(1) };
            match obj.get("items") {
                Some(items) if count > 0 => {
                    let one = synthesize(items, None)?;
                    Value::Array(vec![one; count as usize])
                }
                _ => json!([]),
            }
        }
        "string" => {
            let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let pattern = obj.get("pattern").and_then(Value::as_str).unwrap_or("");
            if pattern.contains("{64}") {
                // sha256 of the empty input.
                json!("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
            } else {
                Value::String("0".repeat(min as usize))
            }
        }
        "integer" | "number" => {
            let hint = match key.unwrap_or("") {
                "group_id" => GROUP_ID,
                "self_id" => SELF_ID,
                "message_id" | "real_id" => MESSAGE_ID,
                k if k.ends_with("user_id") || k == "operator_id" || k == "target_id" => USER_ID,
                "time" => 1_700_000_000,
                _ => 0,
            };
            let mut v = hint as f64;
            if let Some(min) = obj.get("minimum").and_then(Value::as_f64) {
                v = v.max(min);
            }
            if let Some(max) = obj.get("maximum").and_then(Value::as_f64) {
                v = v.min(max);
            }
            if ty == "integer" {
                json!(v as i64)
            } else {
                json!(v)
            }
        }
        "boolean" => json!(true),
        _ => Value::Null,
    })
}

/// Check `value` against `schema`; the error names the failing path.
/// Unknown `pattern`s are not checked (only the catalog's three are known).
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "$")
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return match schema {
            Value::Bool(false) => Err(format!("{at}: schema false")),
            _ => Ok(()),
        };
    };
    let fail = |what: String| Err(format!("{at}: {what} (got {})", short(value)));
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => is_type(t, value),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| is_type(t, value)),
            _ => true,
        };
        if !ok {
            return fail(format!("expected type {t}"));
        }
    }
    if let Some(c) = s.get("const")
        && c != value
    {
        return fail(format!("expected const {c}"));
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(value)
    {
        return fail(format!("expected one of {}", Value::Array(e.clone())));
    }
    if let Some(n) = s.get("not")
        && check(n, value, at).is_ok()
    {
        return fail("matches a `not` schema".to_string());
    }
    if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
        let hits = branches
            .iter()
            .filter(|b| check(b, value, at).is_ok())
            .count();
        if hits != 1 {
            return fail(format!("matches {hits} oneOf branches, expected 1"));
        }
    }
    if let Some(branches) = s.get("anyOf").and_then(Value::as_array)
        && !branches.iter().any(|b| check(b, value, at).is_ok())
    {
        return fail("matches no anyOf branch".to_string());
    }
    if let Some(branches) = s.get("allOf").and_then(Value::as_array) {
        for b in branches {
            check(b, value, at)?;
        }
    }
    match value {
        Value::Object(o) => {
            let props = s.get("properties").and_then(Value::as_object);
            for name in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !o.contains_key(name) {
                    return fail(format!("missing required property {name:?}"));
                }
            }
            for (k, v) in o {
                match props.and_then(|p| p.get(k)) {
                    Some(sub) => check(sub, v, &format!("{at}.{k}"))?,
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            return fail(format!("unexpected property {k:?}"));
                        }
                        Some(extra @ Value::Object(_)) => check(extra, v, &format!("{at}.{k}"))?,
                        _ => {}
                    },
                }
            }
            if let Some(max) = s.get("maxProperties").and_then(Value::as_u64)
                && o.len() as u64 > max
            {
                return fail(format!("more than {max} properties"));
            }
            if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
                && (o.len() as u64) < min
            {
                return fail(format!("fewer than {min} properties"));
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.get("items") {
                for (i, v) in a.iter().enumerate() {
                    check(items, v, &format!("{at}[{i}]"))?;
                }
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
                && a.len() as u64 > max
            {
                return fail(format!("more than {max} items"));
            }
            if let Some(min) = s.get("minItems").and_then(Value::as_u64)
                && (a.len() as u64) < min
            {
                return fail(format!("fewer than {min} items"));
            }
        }
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if let Some(min) = s.get("minLength").and_then(Value::as_u64)
                && len < min
            {
                return fail(format!("shorter than {min}"));
            }
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
                && len > max
            {
                return fail(format!("longer than {max}"));
            }
            if let Some(p) = s.get("pattern").and_then(Value::as_str)
                && !pattern_matches(p, text)
            {
                return fail(format!("does not match {p}"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = s.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                return fail(format!("below minimum {min}"));
            }
            if let Some(max) = s.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                return fail(format!("above maximum {max}"));
            }
        }
        _ => {}
    }
    Ok(())
}

fn is_type(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

/// The patterns the catalog uses; no regex crate is available here.
fn pattern_matches(pattern: &str, text: &str) -> bool {
    let lower_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    match pattern {
        "^[0-9a-f]*$" => text.chars().all(lower_hex),
        "^[0-9a-f]{64}$" => text.len() == 64 && text.chars().all(lower_hex),
        "^Index-> ([1-9]|10)$" => text
            .strip_prefix("Index-> ")
            .and_then(|n| {
                n.parse::<u32>()
                    .ok()
                    .filter(|n| n.to_string().len() == text.len() - 8)
            })
            .is_some_and(|n| (1..=10).contains(&n)),
        _ => true,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}
