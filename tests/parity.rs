//! Parity with SnowLuma 1.11.1's own rules: checks its action bodies make, params it reads
//! unchecked, the action it registers outside its table, and examples that run as written.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use snowluma_mcp::catalog::{CATALOG_JSON, resolve};

fn check(action: &str, params: Value) -> Result<(), String> {
    let params: Map<String, Value> = params.as_object().cloned().unwrap();
    resolve(action)
        .unwrap_or_else(|| panic!("{action} is in the catalog"))
        .meta
        .check_params(&params)
        .map_err(|e| e.to_string())
}

fn contract(action: &str) -> Value {
    let meta = resolve(action).unwrap().meta;
    serde_json::from_str(meta.contract_json()).unwrap()
}

#[test]
fn numeric_strings_follow_javascript_number() {
    let group = |value: Value| check("get_group_info", json!({ "group_id": value }));
    for ok in [
        json!("0x4E21"),
        json!("0b1"),
        json!("0o17"),
        json!(" 20001 "),
        json!("+20001"),
        json!("2.0001e4"),
        json!("20001.9"),
        json!("\u{FEFF}20001"),
    ] {
        assert!(group(ok.clone()).is_ok(), "{ok}");
    }
    for bad in [
        json!(""),
        json!("  "),
        json!("Infinity"),
        json!("-0x10"),
        json!("1_0"),
        json!("0x"),
        json!("inf"),
    ] {
        assert_eq!(
            group(bad.clone()).unwrap_err(),
            "group_id: must be an integer",
            "{bad}"
        );
    }
    assert_eq!(group(json!("0.5")).unwrap_err(), "group_id: must be >= 1");
    assert_eq!(
        check("get_msg", json!({ "message_id": "-0.5" })).unwrap_err(),
        "message_id: must not be 0"
    );
}

#[test]
fn params_snowluma_reads_unchecked_are_forwarded_untyped() {
    // Declared-looking but read raw by the action body: any JSON value passes.
    for value in [json!(42), json!({ "x": 1 }), json!([1]), json!(null)] {
        let forward = json!({ "group_id": 20001, "messages": [], "source": value.clone(),
            "summary": value.clone(), "prompt": value.clone() });
        assert!(
            check("send_group_forward_msg", forward).is_ok(),
            "source/summary/prompt {value}"
        );
        assert!(
            check(
                "get_mini_app_ark",
                json!({ "title": value.clone(), "desc": value.clone() })
            )
            .is_ok(),
            "get_mini_app_ark text {value}"
        );
        let click = json!({ "group_id": 20001, "bot_appid": 1, "msg_seq": 2,
            "button_id": "b", "callback_data": value.clone() });
        assert!(check("click_inline_keyboard_button", click).is_ok());
    }
    let click = json!({ "group_id": 20001, "bot_appid": 1, "msg_seq": 2, "button_id": 7 });
    assert!(
        check("click_inline_keyboard_button", click).is_ok(),
        "a number id is truthy"
    );
}

#[test]
fn body_checks_are_machine_checks() {
    let click = |button: Option<Value>| {
        let mut params = json!({ "group_id": 20001, "bot_appid": 1, "msg_seq": 2 });
        if let Some(button) = button {
            params["button_id"] = button;
        }
        check("click_inline_keyboard_button", params)
    };
    assert!(
        click(None)
            .unwrap_err()
            .starts_with("button_id: is required")
    );
    for falsy in [json!(""), json!(0), json!(false), json!(null)] {
        assert!(click(Some(falsy.clone())).is_err(), "{falsy}");
    }

    let flash = |files: Value| check("create_flash_task", json!({ "files": files }));
    assert!(flash(json!("/path/on/snowluma/host/a.txt")).is_ok());
    assert!(flash(json!(["/a", "/b"])).is_ok());
    assert!(
        check("create_flash_task", json!({}))
            .unwrap_err()
            .starts_with("files: ")
    );
    assert_eq!(flash(json!([])).unwrap_err(), "files: must not be empty");
    assert!(flash(json!(["/a", 3])).is_err());

    assert!(check("translate_en2zh", json!({ "words": ["hello", 1] })).is_ok());
    assert_eq!(
        check("translate_en2zh", json!({ "words": "hello" })).unwrap_err(),
        "words: must be an array"
    );
    assert!(check("translate_en2zh", json!({})).is_err());

    assert!(check("fetch_ptt_text", json!({ "message_id": -123456 })).is_ok());
    assert!(check("get_ptt_text", json!({ "message_id": "-123456" })).is_ok());
    for bad in [
        json!({}),
        json!({ "message_id": "" }),
        json!({ "message_id": "abc" }),
        json!({ "message_id": 0 }),
    ] {
        assert!(
            check("fetch_ptt_text", bad.clone())
                .unwrap_err()
                .starts_with("message_id: is required"),
            "{bad}"
        );
    }

    let packet = |data: Value| check("send_packet", json!({ "cmd": "Svc.X", "data": data }));
    assert!(
        check("send_packet", json!({ "cmd": "Svc.X" })).is_ok(),
        "data defaults to \"\""
    );
    assert!(packet(json!("0aFF")).is_ok());
    for bad in [json!("abc"), json!("0x00"), json!("zz")] {
        assert!(
            packet(bad.clone())
                .unwrap_err()
                .contains("hex string of even length"),
            "{bad}"
        );
    }

    let qzone = |right: Value| {
        check(
            "send_qzone_msg",
            json!({ "content": "hi", "ugc_right": right, "target_uins": [30001] }),
        )
    };
    for ok in [1, 4, 16, 64, 128] {
        assert!(qzone(json!(ok)).is_ok(), "{ok}");
    }
    assert!(qzone(json!("64")).is_ok(), "numeric strings coerce first");
    assert_eq!(
        qzone(json!(2)).unwrap_err(),
        "ugc_right: expected one of: 1, 4, 16, 64, 128"
    );
}

#[test]
fn body_checks_show_in_the_input_schema() {
    let schema = &contract("send_packet")["inputSchema"];
    assert_eq!(
        schema["properties"]["data"]["pattern"],
        "^([0-9a-fA-F]{2})*$"
    );
    let schema = &contract("send_qzone_msg")["inputSchema"];
    assert_eq!(
        schema["properties"]["ugc_right"]["enum"],
        json!([1, 4, 16, 64, 128])
    );
    for (action, param) in [
        ("click_inline_keyboard_button", "button_id"),
        ("create_flash_task", "files"),
        ("translate_en2zh", "words"),
        ("fetch_ptt_text", "message_id"),
    ] {
        let required = contract(action)["inputSchema"]["required"].clone();
        assert!(
            required.as_array().unwrap().contains(&json!(param)),
            "{action}.{param} in {required}"
        );
    }
}

#[test]
fn handle_quick_operation_needs_context_and_operation() {
    assert!(CATALOG_JSON.contains("\".handle_quick_operation\""));
    let meta = resolve(".handle_quick_operation").unwrap().meta;
    assert!(!meta.read_only);
    let context = json!({ "post_type": "message", "message_type": "group", "group_id": 20001 });
    assert!(
        check(
            ".handle_quick_operation",
            json!({ "context": context, "operation": { "reply": "hi" } })
        )
        .is_ok()
    );
    assert!(
        check(".handle_quick_operation", json!({ "context": context }))
            .unwrap_err()
            .starts_with("operation: ")
    );
    assert!(
        check(".handle_quick_operation", json!({ "operation": {} }))
            .unwrap_err()
            .starts_with("context: ")
    );
    assert!(
        check(
            ".handle_quick_operation",
            json!({ "context": null, "operation": {} })
        )
        .is_err()
    );
}

#[test]
fn upload_file_stream_examples_run_as_written() {
    let examples = contract("upload_file_stream")["examples"]
        .as_array()
        .unwrap()
        .clone();
    let mut created = std::collections::BTreeMap::<String, Vec<u8>>::new();
    for (i, example) in examples.iter().enumerate() {
        let params = &example["params"];
        let stream = params["stream_id"].as_str().unwrap().to_string();
        let notes = example["notes"].as_str().unwrap_or_default();
        let creates = params.get("total_chunks").is_some();
        if creates {
            assert!(
                notes.contains("可以单独运行"),
                "example {} says it runs alone",
                i + 1
            );
            created.insert(stream.clone(), Vec::new());
        } else {
            assert!(
                notes.contains("须先运行示例"),
                "example {} names the example that must run first: {notes}",
                i + 1
            );
            assert!(
                created.contains_key(&stream),
                "example {}: its stream was created earlier",
                i + 1
            );
        }
        if let Some(chunk) = params["chunk_data"].as_str() {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(chunk)
                .unwrap();
            created.get_mut(&stream).unwrap().extend(bytes);
        }
        if let Some(expected) = params["expected_sha256"].as_str() {
            let digest = Sha256::digest(&created[&stream]);
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(
                hex, expected,
                "the completion example's checksum is of the chunks before it"
            );
        }
    }
}
