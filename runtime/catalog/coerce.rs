//! SnowLuma's param coercion, as its action kit applies it: only an absent key is missing
//! (`null` is a present, invalid value), numeric strings count as numbers exactly when
//! JavaScript's `Number()` reads them (see js_number.rs), fractions are truncated, booleans
//! accept `yes/no/on/off/1/0`, and unknown keys are ignored. One deliberate difference:
//! integers beyond 2^53 - 1 are refused rather than rounded (spec/README.md). The generated
//! parameter structs are built from these pieces, and errors read like SnowLuma's own
//! (`group_id: must be >= 1`).

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::js_number::{js_number, js_trim};

/// A rejected param: `field: reason`, or an invariant's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    pub field: Option<String>,
    pub reason: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{field}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ParamError {}

/// A literal in generated code (enum values, `required_when` triggers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Literal {
    Str(&'static str),
    Int(i64),
    Bool(bool),
}

impl Literal {
    fn matches(&self, value: &Value) -> bool {
        match (self, value) {
            (Literal::Str(s), Value::String(v)) => s == v,
            (Literal::Int(n), Value::Number(v)) => {
                v.as_i64() == Some(*n) || v.as_f64() == Some(*n as f64)
            }
            (Literal::Bool(b), Value::Bool(v)) => b == v,
            _ => false,
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => f.write_str(s),
            Literal::Int(n) => write!(f, "{n}"),
            Literal::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// The declared limits of one param.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
    pub min_length: Option<u64>,
    pub min_items: Option<u64>,
    pub item_min_length: Option<u64>,
    pub non_zero: bool,
    pub values: &'static [Literal],
}

impl Bounds {
    pub const NONE: Bounds = Bounds {
        minimum: None,
        maximum: None,
        min_length: None,
        min_items: None,
        item_min_length: None,
        non_zero: false,
        values: &[],
    };

    fn for_items(&self) -> Bounds {
        Bounds {
            min_length: self.item_min_length,
            ..Bounds::NONE
        }
    }
}

/// A value SnowLuma's kit knows how to coerce.
pub trait Coerce: Sized {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String>;
}

/// Builds a typed parameter struct from the raw params object.
pub trait FromParams: Sized {
    fn from_params(params: &Map<String, Value>) -> Result<Self, ParamError>;
}

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A numeric value as SnowLuma reads it: a JSON number as is, or a string whose JavaScript
/// trim is not blank and whose `Number()` is finite. Anything else is `None`.
pub fn js_numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|n| n.is_finite()),
        Value::String(s) if !js_trim(s).is_empty() => Some(js_number(s)).filter(|n| n.is_finite()),
        _ => None,
    }
}

/// SnowLuma's integer coercion (`Math.trunc` of [`js_numeric`]). One deliberate difference:
/// beyond 2^53 - 1 SnowLuma silently rounds to a neighbouring double, so it would act on a
/// different id than the one sent; such values are refused here instead.
fn integer(value: &Value) -> Result<i64, String> {
    let n = js_numeric(value).ok_or("must be an integer")?.trunc();
    if n.abs() > MAX_SAFE_INTEGER {
        return Err(format!(
            "{n} is beyond 2^53 - 1 ({}); SnowLuma would round it to a different number, so send the exact value within that range",
            MAX_SAFE_INTEGER as i64
        ));
    }
    Ok(n as i64)
}

/// SnowLuma's order: the non-zero rule, then the minimum, then the maximum; then the list of
/// allowed values, a rule the action runs on the coerced number.
fn check_range(n: i64, bounds: &Bounds) -> Result<(), String> {
    if bounds.non_zero && n == 0 {
        return Err("must not be 0".into());
    }
    if let Some(min) = bounds.minimum.filter(|min| n < *min) {
        return Err(format!("must be >= {min}"));
    }
    if let Some(max) = bounds.maximum.filter(|max| n > *max) {
        return Err(format!("must be <= {max}"));
    }
    if !bounds.values.is_empty() && !bounds.values.contains(&Literal::Int(n)) {
        return Err(one_of(bounds.values));
    }
    Ok(())
}

fn one_of(values: &[Literal]) -> String {
    let allowed: Vec<String> = values.iter().map(ToString::to_string).collect();
    format!("expected one of: {}", allowed.join(", "))
}

/// `uint`: an integer >= 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Uint(pub u64);

impl Coerce for Uint {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String> {
        let n = integer(value)?;
        if n < 1 {
            return Err("must be >= 1".into());
        }
        check_range(n, bounds)?;
        Ok(Uint(n as u64))
    }
}

/// `int`: an integer within the declared bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Int(pub i64);

impl Coerce for Int {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String> {
        let n = integer(value)?;
        check_range(n, bounds)?;
        Ok(Int(n))
    }
}

/// `message_id`: any non-zero integer; negative ids are normal (signed 32-bit hashes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct MessageId(pub i64);

impl Coerce for MessageId {
    fn coerce(value: &Value, _: &Bounds) -> Result<Self, String> {
        match integer(value)? {
            0 => Err("must not be 0".into()),
            n => Ok(MessageId(n)),
        }
    }
}

/// `number`: a finite number, fractions kept.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Number(pub f64);

impl Coerce for Number {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String> {
        let n = js_numeric(value).ok_or("must be a number")?;
        if bounds.minimum.is_some_and(|min| n < min as f64)
            || bounds.maximum.is_some_and(|max| n > max as f64)
        {
            check_range(n.trunc() as i64, bounds)?;
        }
        Ok(Number(n))
    }
}

/// `string`: numbers and booleans are stringified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Text(pub String);

impl Coerce for Text {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String> {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return Err("must be a string".into()),
        };
        if let Some(min) = bounds
            .min_length
            .filter(|min| (text.chars().count() as u64) < *min)
        {
            return Err(if min == 1 {
                "must not be empty".into()
            } else {
                format!("must be at least {min} characters")
            });
        }
        Ok(Text(text))
    }
}

/// `bool`: booleans, numbers (non-zero is true) and yes/no words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Flag(pub bool);

impl Coerce for Flag {
    fn coerce(value: &Value, _: &Bounds) -> Result<Self, String> {
        match value {
            Value::Bool(b) => Ok(Flag(*b)),
            Value::Number(n) => Ok(Flag(n.as_f64().is_some_and(|n| n != 0.0))),
            Value::String(s) => match js_trim(s).to_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(Flag(true)),
                "false" | "0" | "no" | "off" => Ok(Flag(false)),
                _ => Err("must be a boolean".into()),
            },
            _ => Err("must be a boolean".into()),
        }
    }
}

/// `message`: a CQ-code string, a segment array, or one segment object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Message(pub Value);

impl Coerce for Message {
    fn coerce(value: &Value, _: &Bounds) -> Result<Self, String> {
        match value {
            Value::String(_) | Value::Array(_) | Value::Object(_) => Ok(Message(value.clone())),
            _ => Err("must be a message (string, segment array or segment object)".into()),
        }
    }
}

/// `enum`: one of the declared values, matched exactly.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Choice(pub Value);

impl Coerce for Choice {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String> {
        if bounds.values.iter().any(|v| v.matches(value)) {
            return Ok(Choice(value.clone()));
        }
        Err(one_of(bounds.values))
    }
}

/// `raw`: anything, unchecked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Raw(pub Value);

impl Coerce for Raw {
    fn coerce(value: &Value, _: &Bounds) -> Result<Self, String> {
        Ok(Raw(value.clone()))
    }
}

impl<T: Coerce> Coerce for Vec<T> {
    fn coerce(value: &Value, bounds: &Bounds) -> Result<Self, String> {
        let items = value.as_array().ok_or("must be an array")?;
        if let Some(min) = bounds.min_items.filter(|min| (items.len() as u64) < *min) {
            return Err(format!("must have at least {min} item(s)"));
        }
        let item_bounds = bounds.for_items();
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                T::coerce(item, &item_bounds).map_err(|reason| format!("[{i}] {reason}"))
            })
            .collect()
    }
}

fn named<T>(name: &str, result: Result<T, String>) -> Result<T, ParamError> {
    result.map_err(|reason| ParamError {
        field: Some(name.to_string()),
        reason,
    })
}

pub fn required<T: Coerce>(
    params: &Map<String, Value>,
    name: &str,
    bounds: &Bounds,
) -> Result<T, ParamError> {
    match params.get(name) {
        Some(value) => named(name, T::coerce(value, bounds)),
        None => named(name, Err("is required".into())),
    }
}

pub fn optional<T: Coerce>(
    params: &Map<String, Value>,
    name: &str,
    bounds: &Bounds,
) -> Result<Option<T>, ParamError> {
    params
        .get(name)
        .map(|value| named(name, T::coerce(value, bounds)))
        .transpose()
}

pub fn defaulted<T: Coerce>(
    params: &Map<String, Value>,
    name: &str,
    bounds: &Bounds,
    default: impl FnOnce() -> T,
) -> Result<T, ParamError> {
    Ok(optional(params, name, bounds)?.unwrap_or_else(default))
}

/// The keys the action does not declare, kept exactly as sent.
pub fn unknown_keys(params: &Map<String, Value>, known: &[&str]) -> Map<String, Value> {
    params
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn present(params: &Map<String, Value>, name: &str) -> bool {
    params
        .get(name)
        .is_some_and(|v| !v.is_null() && v.as_str() != Some(""))
}

/// At least one of `fields` is present and not empty.
pub fn any_of(params: &Map<String, Value>, fields: &[&str], text: &str) -> Result<(), ParamError> {
    if fields.iter().any(|f| present(params, f)) {
        Ok(())
    } else {
        Err(ParamError {
            field: None,
            reason: text.to_string(),
        })
    }
}

/// Whether `param` holds one of `values` as SnowLuma's action body sees it: an integer
/// trigger compares the coerced number (`"0x10"` is 16), any other literal the raw value.
pub fn triggered(params: &Map<String, Value>, param: &str, values: &[Literal]) -> bool {
    params.get(param).is_some_and(|v| {
        values.iter().any(|l| match l {
            Literal::Int(n) => js_numeric(v).is_some_and(|x| x.trunc() == *n as f64),
            _ => l.matches(v),
        })
    })
}

/// `field` must be present when `param` equals one of `values`.
pub fn required_when(
    params: &Map<String, Value>,
    field: &str,
    param: &str,
    values: &[Literal],
    text: &str,
) -> Result<(), ParamError> {
    if triggered(params, param, values) && !present(params, field) {
        Err(ParamError {
            field: Some(field.to_string()),
            reason: text.to_string(),
        })
    } else {
        Ok(())
    }
}
