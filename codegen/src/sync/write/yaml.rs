//! YAML text for values the sync writes: JSON is valid YAML flow syntax, and plain words stay
//! plain so written files read like hand-written ones.

use serde_json::Value;

/// A scalar or flow value on one line.
pub fn flow(value: &Value) -> String {
    match value {
        Value::String(s) if is_plain(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", flow(&Value::String(k.clone())), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Words YAML reads back as the same string without quotes.
fn is_plain(s: &str) -> bool {
    let reserved = ["true", "false", "null", "yes", "no", "on", "off", "~", ""];
    !reserved.contains(&s.to_ascii_lowercase().as_str())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '/')
        && !s.starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn flow_values_read_back_as_written() {
        for value in [
            json!("talkative"),
            json!("true"),
            json!("16"),
            json!("带空格 的 文本: yes"),
            json!([1, 4, "a b"]),
            json!({"field": "x", "in": [16, 128]}),
            json!(null),
        ] {
            let text = format!("v: {}", flow(&value));
            let back: serde_json::Map<String, Value> = serde_yaml::from_str(&text).unwrap();
            assert_eq!(back["v"], value, "{text}");
        }
    }
}
