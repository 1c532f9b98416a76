//! Checks SnowLuma makes inside an action's body, on the raw request, after its declared
//! params were coerced. The catalog names them per param (`check:` in spec/), so a call that
//! SnowLuma would answer with 1400 is refused here before it is sent.

use std::fmt;

use serde_json::{Map, Value};

use super::coerce::{Literal, ParamError, js_numeric, triggered};

/// One body check, named as in spec/README.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The raw value is truthy in JavaScript: present, not `null`, `false`, `0` or `""`.
    Truthy,
    /// SnowLuma's lenient `asNumber` of the raw value is not 0 (absent and non-numeric
    /// values count as 0).
    NonZeroNumber,
    /// A non-empty string, or a non-empty array of non-empty strings.
    PathList,
    /// Any JSON array.
    Array,
    /// A string of hex digits with an even length (absent is fine: the default is `""`).
    EvenHex,
    /// SnowLuma's `asString` of the value (a string as is, numbers and booleans stringified,
    /// anything else `""`) is `""` (the action's default applies) or one of these.
    AsStringIn(&'static [&'static str]),
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Check::Truthy => "truthy",
            Check::NonZeroNumber => "non_zero_number",
            Check::PathList => "path_list",
            Check::Array => "array",
            Check::EvenHex => "even_hex",
            Check::AsStringIn(_) => "as_string_in",
        })
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn reason(check: Check, value: Option<&Value>) -> Option<String> {
    match check {
        Check::Truthy => (!value.is_some_and(truthy))
            .then(|| "is required and must not be empty, 0, false or null".to_string()),
        Check::NonZeroNumber => {
            let n = value.and_then(js_numeric).map(f64::trunc).unwrap_or(0.0);
            (n == 0.0).then(|| {
                "is required: pass a non-zero number or numeric string (negative is fine)"
                    .to_string()
            })
        }
        Check::PathList => match value {
            Some(Value::String(s)) if !s.is_empty() => None,
            Some(Value::String(_)) => Some("must not be empty".into()),
            Some(Value::Array(items)) if items.is_empty() => Some("must not be empty".into()),
            Some(Value::Array(items))
                if items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| !s.is_empty())) =>
            {
                None
            }
            _ => Some("must be a path string or an array of non-empty path strings".into()),
        },
        Check::Array => {
            (!value.is_some_and(Value::is_array)).then(|| "must be an array".to_string())
        }
        Check::EvenHex => {
            let text = match value {
                None => return None,
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                Some(other) => other.to_string(),
            };
            let hex = text.bytes().all(|b| b.is_ascii_hexdigit());
            (!hex || text.len() % 2 != 0).then(|| {
                "must be a hex string of even length (two digits per byte, e.g. \"0a1b\")"
                    .to_string()
            })
        }
        Check::AsStringIn(allowed) => {
            let text = match value {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::Bool(b)) => b.to_string(),
                _ => return None,
            };
            (!text.is_empty() && !allowed.contains(&text.as_str())).then(|| {
                format!(
                    "must be one of: {} (or omitted); SnowLuma reads numbers and booleans as text, so {text} is refused",
                    allowed.join(", ")
                )
            })
        }
    }
}

/// Runs one body check on `params[name]`.
pub fn check(params: &Map<String, Value>, name: &str, check: Check) -> Result<(), ParamError> {
    match reason(check, params.get(name)) {
        None => Ok(()),
        Some(reason) => Err(ParamError {
            field: Some(name.to_string()),
            reason,
        }),
    }
}

/// `field` must pass `kind` when `param` holds one of `values` (compared as SnowLuma's body
/// compares them, see [`triggered`]); the error is the invariant's `text`.
pub fn required_when_check(
    params: &Map<String, Value>,
    field: &str,
    param: &str,
    values: &[Literal],
    kind: Check,
    text: &str,
) -> Result<(), ParamError> {
    if triggered(params, param, values) && reason(kind, params.get(field)).is_some() {
        return Err(ParamError {
            field: Some(field.to_string()),
            reason: text.to_string(),
        });
    }
    Ok(())
}

/// SnowLuma reads `fields[0] || fields[1] || …` (JavaScript's `||`: the first truthy value,
/// else the last operand) and refuses anything but a JSON string; the error is `text`.
pub fn first_truthy_string(
    params: &Map<String, Value>,
    fields: &[&str],
    text: &str,
) -> Result<(), ParamError> {
    let picked = fields
        .iter()
        .map(|f| params.get(*f))
        .find(|v| v.is_some_and(truthy))
        .unwrap_or_else(|| fields.last().and_then(|f| params.get(*f)));
    if picked.is_some_and(Value::is_string) {
        Ok(())
    } else {
        Err(ParamError {
            field: fields.first().map(|f| f.to_string()),
            reason: text.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn passes(check_kind: Check, value: Option<Value>) -> bool {
        let mut params = Map::new();
        if let Some(value) = value {
            params.insert("p".into(), value);
        }
        check(&params, "p", check_kind).is_ok()
    }

    #[test]
    fn truthy_follows_javascript() {
        for ok in [
            json!("b"),
            json!(1),
            json!(-1),
            json!(true),
            json!([]),
            json!({}),
        ] {
            assert!(passes(Check::Truthy, Some(ok.clone())), "{ok}");
        }
        for bad in [json!(""), json!(0), json!(false), json!(null)] {
            assert!(!passes(Check::Truthy, Some(bad.clone())), "{bad}");
        }
        assert!(!passes(Check::Truthy, None));
    }

    #[test]
    fn non_zero_number_follows_as_number() {
        for ok in [
            json!(-123456),
            json!("-123456"),
            json!(" 0x10 "),
            json!(1.9),
        ] {
            assert!(passes(Check::NonZeroNumber, Some(ok.clone())), "{ok}");
        }
        for bad in [
            json!(0),
            json!("0"),
            json!(""),
            json!("abc"),
            json!(0.4),
            json!(null),
        ] {
            assert!(!passes(Check::NonZeroNumber, Some(bad.clone())), "{bad}");
        }
        assert!(!passes(Check::NonZeroNumber, None));
    }

    #[test]
    fn path_list_wants_non_empty_strings() {
        assert!(passes(Check::PathList, Some(json!("/a.txt"))));
        assert!(passes(Check::PathList, Some(json!(["/a", "/b"]))));
        for bad in [
            json!(""),
            json!([]),
            json!(["/a", ""]),
            json!([1]),
            json!(5),
        ] {
            assert!(!passes(Check::PathList, Some(bad.clone())), "{bad}");
        }
        assert!(!passes(Check::PathList, None));
    }

    #[test]
    fn array_and_even_hex() {
        assert!(passes(Check::Array, Some(json!([]))));
        assert!(!passes(Check::Array, Some(json!("hello"))));
        assert!(!passes(Check::Array, None));
        assert!(passes(Check::EvenHex, None));
        assert!(passes(Check::EvenHex, Some(json!(""))));
        assert!(passes(Check::EvenHex, Some(json!("0aFF"))));
        assert!(passes(Check::EvenHex, Some(json!(1234))));
        for bad in [json!("abc"), json!("0g"), json!("0x00"), json!(123)] {
            assert!(!passes(Check::EvenHex, Some(bad.clone())), "{bad}");
        }
    }
}
