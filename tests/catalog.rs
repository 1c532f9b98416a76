//! The bundled catalog as data: counts, aliases, stream kinds, every example valid through the
//! generated typed structs and against its inputSchema, every returnsSchema a valid JSON
//! Schema object, SnowLuma's coercion rules, and a deterministic codegen.

use serde_json::{Map, Value, json};
use snowluma_mcp::catalog::params::{SendMsgParams, SetGroupBanParams};
use snowluma_mcp::catalog::{ACTIONS, CATALOG_JSON, CATEGORIES, FromParams, StreamKind, resolve};

fn document() -> Value {
    serde_json::from_str(CATALOG_JSON).expect("catalog.json is JSON")
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// One file per action under spec/actions/<category>/: the count the generated table must
/// have, read from the spec rather than written here, so adding an action keeps this green.
fn spec_action_files() -> usize {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/actions");
    let mut count = 0;
    for category in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(category.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "yaml") {
                count += 1;
            }
        }
    }
    count
}

#[test]
fn the_catalog_covers_every_snowluma_action_and_alias() {
    assert_eq!(ACTIONS.len(), spec_action_files());
    // Every action and alias of the SnowLuma catalog spec/ was last synced from resolves (spec/
    // may hold more: actions SnowLuma's own catalog leaves out, or newly added ones).
    let upstream: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/upstream-catalog.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for action in upstream["actions"].as_array().unwrap() {
        let name = action["name"].as_str().unwrap();
        assert!(resolve(name).is_some(), "upstream action {name} is missing");
        for alias in action["aliases"].as_array().unwrap() {
            let alias = alias.as_str().unwrap();
            assert_eq!(resolve(alias).map(|r| r.meta.name), Some(name), "{alias}");
        }
    }
    for (alias, target) in [
        ("get_ptt_text", "fetch_ptt_text"),
        ("get_record_text", "fetch_ptt_text"),
        ("nc_get_rkey", "get_rkey"),
        (".ocr_image", "ocr_image"),
        (".send_packet", "send_packet"),
        ("send_group_sign", "set_group_sign"),
    ] {
        let resolved = resolve(alias).unwrap_or_else(|| panic!("{alias} does not resolve"));
        assert_eq!(resolved.meta.name, target);
        assert_eq!(resolved.alias, Some(alias));
    }
    assert_eq!(
        CATEGORIES.iter().map(|c| c.count).sum::<usize>(),
        ACTIONS.len()
    );
    let streams: Vec<(&str, StreamKind)> = ACTIONS
        .iter()
        .filter(|a| a.is_stream())
        .map(|a| (a.name, a.stream))
        .collect();
    assert!(streams.contains(&("upload_file_stream", StreamKind::Upload)));
    assert!(streams.contains(&("test_download_stream", StreamKind::Frames)));
    assert!(streams.contains(&("download_file_record_stream", StreamKind::Download)));
    assert!(!resolve("clean_stream_temp_file").unwrap().meta.is_stream());
}

#[test]
fn every_contract_slice_is_the_action_it_claims() {
    for action in &ACTIONS {
        let contract: Value = serde_json::from_str(action.contract_json()).unwrap();
        assert_eq!(contract["name"], action.name);
        assert_eq!(contract["read_only"], action.read_only);
    }
    assert_eq!(
        document()["actions"].as_array().unwrap().len(),
        ACTIONS.len()
    );
}

#[test]
fn every_example_validates_through_the_typed_structs_and_the_input_schema() {
    let mut checked = 0;
    let mut aliases_with_examples = std::collections::BTreeSet::new();
    for contract in document()["actions"].as_array().unwrap() {
        let schema =
            jsonschema::validator_for(&contract["inputSchema"]).expect("inputSchema compiles");
        let examples = contract["examples"].as_array().unwrap();
        assert!(!examples.is_empty(), "{} has no example", contract["name"]);
        for example in examples {
            let called = example["action"].as_str().unwrap();
            let resolved = resolve(called).unwrap();
            assert_eq!(resolved.meta.name, contract["name"]);
            if resolved.alias.is_some() {
                aliases_with_examples.insert(called.to_string());
            }
            let params = object(example["params"].clone());
            if let Err(error) = resolved.meta.check_params(&params) {
                panic!(
                    "{called}: example {:?} rejected by the typed struct: {error}",
                    example["summary"]
                );
            }
            assert!(
                schema.is_valid(&example["params"]),
                "{called}: example fails inputSchema"
            );
            assert!(!example["summary"].as_str().unwrap().is_empty());
            checked += 1;
        }
    }
    assert!(checked >= ACTIONS.len());
    let aliases: std::collections::BTreeSet<String> = ACTIONS
        .iter()
        .flat_map(|a| a.aliases.iter().map(|alias| alias.to_string()))
        .collect();
    assert_eq!(
        aliases_with_examples, aliases,
        "every alias has its own example"
    );
}

#[test]
fn every_returns_schema_is_a_valid_json_schema_object() {
    for contract in document()["actions"].as_array().unwrap() {
        let schema = &contract["returnsSchema"];
        assert!(schema.is_object(), "{}", contract["name"]);
        jsonschema::meta::validate(schema).unwrap_or_else(|e| panic!("{}: {e}", contract["name"]));
        assert!(!contract["returns"].as_str().unwrap().is_empty());
    }
}

#[test]
fn coercion_follows_snowluma() {
    let ban = |params: Value| SetGroupBanParams::from_params(&object(params));
    let parsed = ban(json!({ "group_id": "20001", "user_id": 30001.9, "extra_key": [1] })).unwrap();
    assert_eq!(
        (parsed.group_id.0, parsed.user_id.0, parsed.duration.0),
        (20001, 30001, 1800)
    );
    assert_eq!(
        parsed.extra.get("extra_key"),
        Some(&json!([1])),
        "unknown keys are kept"
    );
    assert_eq!(
        ban(json!({ "user_id": 1 })).unwrap_err().to_string(),
        "group_id: is required"
    );
    assert_eq!(
        ban(json!({ "group_id": null, "user_id": 1 }))
            .unwrap_err()
            .to_string(),
        "group_id: must be an integer"
    );
    assert_eq!(
        ban(json!({ "group_id": 0, "user_id": 1 }))
            .unwrap_err()
            .to_string(),
        "group_id: must be >= 1"
    );
    assert_eq!(
        ban(json!({ "group_id": 1, "user_id": 1, "duration": -1 }))
            .unwrap_err()
            .to_string(),
        "duration: must be >= 0"
    );

    let get_msg = resolve("get_msg").unwrap().meta;
    assert!(
        get_msg
            .check_params(&object(json!({ "message_id": -123456 })))
            .is_ok()
    );
    assert!(
        get_msg
            .check_params(&object(json!({ "message_id": "-123456" })))
            .is_ok()
    );
    assert_eq!(
        get_msg
            .check_params(&object(json!({ "message_id": 0 })))
            .unwrap_err()
            .to_string(),
        "message_id: must not be 0"
    );

    let send = |params: Value| SendMsgParams::from_params(&object(params));
    let flags = send(json!({ "message": "hi", "user_id": 1, "auto_escape": "yes" })).unwrap();
    assert!(flags.auto_escape.0);
    assert_eq!(
        send(json!({ "message": 5, "user_id": 1 }))
            .unwrap_err()
            .field
            .as_deref(),
        Some("message")
    );
    assert!(
        send(json!({ "message": "hi" })).is_err(),
        "send_msg needs a group or user target"
    );
}

/// Freshness of the committed generated/ is checked by CI (`git status` after `cargo build`,
/// in .ci/run): a test here would compare what build.rs has just rewritten with itself. What a
/// test can check is that the codegen is deterministic, so that check is meaningful.
#[test]
fn codegen_output_is_deterministic() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let first = snowluma_mcp_codegen_check::generate(&root.join("spec"));
    let second = snowluma_mcp_codegen_check::generate(&root.join("spec"));
    assert!(!first.is_empty());
    assert_eq!(first, second, "two runs over the same spec differ");
}

/// The codegen crate is a build-dependency only; the determinism check reaches it through a
/// dev-dependency path so the shipped binary never links it.
mod snowluma_mcp_codegen_check {
    pub fn generate(spec: &std::path::Path) -> Vec<(&'static str, String)> {
        snowluma_mcp_codegen::generate(spec)
            .expect("spec is valid")
            .into_iter()
            .map(|f| (f.name, f.contents))
            .collect()
    }
}

/// `get_action` keeps one serialization per action for the plain case; an alias request in
/// between must still say which alias was asked for, and the kept answer must not.
#[test]
fn get_action_answers_stay_per_request_around_the_kept_contract() {
    use snowluma_mcp::server::catalog_call_line;
    let call = |name: &str| -> Value {
        let line = catalog_call_line("get_action", object(json!({ "name": name }))).unwrap();
        let message: Value = serde_json::from_slice(&line).unwrap();
        message["result"]["structuredContent"]["result"].clone()
    };
    let alias = ACTIONS
        .iter()
        .find(|a| !a.aliases.is_empty())
        .expect("an action with an alias");
    let first = call(alias.name);
    let by_alias = call(alias.aliases[0]);
    let again = call(alias.name);
    assert_eq!(first["name"], json!(alias.name));
    assert!(first.get("requested_alias").is_none(), "{first}");
    assert_eq!(by_alias["requested_alias"], json!(alias.aliases[0]));
    assert_eq!(by_alias["name"], json!(alias.name));
    assert_eq!(first, again);
    // The kept answer is the bundled contract, field for field.
    let mut bundled: Value =
        serde_json::from_str(resolve(alias.name).unwrap().meta.contract_json()).unwrap();
    bundled.as_object_mut().unwrap().retain(|_, v| !v.is_null());
    assert_eq!(first, bundled);
}
