//! Every schema the server emits is plain JSON Schema 2020-12 that any client accepts: each
//! tool's inputSchema and outputSchema (every tool on: write mode, events, uploads, tasks and
//! all typed tools) and each action's inputSchema and returnsSchema validate against the
//! draft 2020-12 meta-schema and use no `format` the draft does not define (schemars' `uint`,
//! `int64` … made the TypeScript SDK warn once per schema). Tool names match what LLM APIs
//! accept, and a typed tool whose action name does not keeps that name in `_meta`.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/task_stdio.rs"]
mod task_stdio;

use serde_json::{Value, json};
use snowluma_mcp::catalog::CATALOG_JSON;
use task_stdio::{Dirs, spawn_on, tasks_meta};

/// The formats JSON Schema 2020-12 defines (Validation, section 7.3).
const DRAFT_2020_12_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every `format` keyword in `schema` (a string value under the key `format`; a property
/// *named* `format` holds a schema object, not a string), with its JSON path.
fn formats(schema: &Value, path: &str, found: &mut Vec<(String, String)>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                let at = format!("{path}/{key}");
                if key == "format"
                    && let Some(format) = value.as_str()
                {
                    found.push((at.clone(), format.to_string()));
                }
                formats(value, &at, found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                formats(item, &format!("{path}/{i}"), found);
            }
        }
        _ => {}
    }
}

fn assert_standard(what: &str, schema: &Value) {
    let as_2020_12 = match schema {
        Value::Object(object) if !object.contains_key("$schema") => {
            let mut object = object.clone();
            object.insert(
                "$schema".into(),
                json!("https://json-schema.org/draft/2020-12/schema"),
            );
            Value::Object(object)
        }
        other => other.clone(),
    };
    if let Err(error) = jsonschema::meta::validate(&as_2020_12) {
        panic!("{what}: not a valid draft 2020-12 schema: {error}");
    }
    let mut found = Vec::new();
    formats(schema, "", &mut found);
    let unknown: Vec<_> = found
        .iter()
        .filter(|(_, format)| !DRAFT_2020_12_FORMATS.contains(&format.as_str()))
        .collect();
    assert!(unknown.is_empty(), "{what}: unknown formats {unknown:?}");
}

fn is_portable_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[tokio::test]
async fn every_listed_tool_has_a_portable_name_and_standard_schemas() {
    let dirs = Dirs::new("schema-standards");
    let uploads = dirs.downloads.to_string_lossy().to_string();
    // Listing opens no connection, so an endpoint nobody listens on is enough.
    let mut server = spawn_on(
        "http://127.0.0.1:9/",
        &dirs,
        &[
            ("SNOWLUMA_MCP_TOOLSETS", "all"),
            ("SNOWLUMA_MCP_EVENTS_URL", "ws://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_UPLOAD_ROOT", uploads.as_str()),
        ],
    );
    let listing = server
        .request(1, "tools/list", json!({ "_meta": tasks_meta() }))
        .await;
    let tools = listing["result"]["tools"].as_array().expect("a tool list");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in [
        "invoke_action_background",
        "subscribe_events",
        "get_group_info",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} not listed: {names:?}"
        );
    }
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(is_portable_tool_name(name), "tool name `{name}`");
        assert_standard(&format!("{name} inputSchema"), &tool["inputSchema"]);
        assert_standard(&format!("{name} outputSchema"), &tool["outputSchema"]);
    }

    // The actions whose names LLM APIs refuse are listed under a safe name that calls them.
    let typed = |action: &str| {
        tools
            .iter()
            .find(|t| t["_meta"]["snowluma/action"] == action)
            .unwrap_or_else(|| panic!("no typed tool for {action}"))
            .clone()
    };
    for (action, tool_name) in [
        (".handle_quick_operation", "_handle_quick_operation"),
        (".get_word_slices", "_get_word_slices"),
    ] {
        let tool = typed(action);
        assert_eq!(tool["name"], tool_name);
        assert!(
            tool["description"].as_str().unwrap().contains(action),
            "{tool}"
        );
    }
    assert_eq!(typed("get_group_info")["name"], "get_group_info");
    server.kill().await;
}

#[test]
fn every_action_schema_is_standard() {
    let catalog: Value = serde_json::from_str(CATALOG_JSON).unwrap();
    for action in catalog["actions"].as_array().unwrap() {
        let name = action["name"].as_str().unwrap();
        assert_standard(&format!("{name} inputSchema"), &action["inputSchema"]);
        assert_standard(&format!("{name} returnsSchema"), &action["returnsSchema"]);
    }
}
