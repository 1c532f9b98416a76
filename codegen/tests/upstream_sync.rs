//! catalog-sync against SnowLuma's own catalogs (../shared/reference in the workspace's
//! parent, copied into the test as JSON) and synthetic upstream variants built here. `--write`
//! runs on a copy of spec/ in a temporary directory, never on spec/ itself.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use snowluma_mcp_codegen::sync::diff::{Kind, Report};
use snowluma_mcp_codegen::sync::{self, render::render};

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec")
}

/// The upstream catalogs the spec was checked against: 1.11.1's is the committed baseline;
/// the development line's is checked in as a fixture.
fn release() -> String {
    std::fs::read_to_string(spec_dir().join("upstream-catalog.json")).unwrap()
}

fn development() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstream/snowluma-catalog-dev-884db94.json");
    std::fs::read_to_string(path).unwrap()
}

fn drift(report: &Report) -> Vec<(String, String, Kind)> {
    report
        .drift
        .iter()
        .map(|c| (c.action.clone(), c.field.clone(), c.kind))
        .collect()
}

/// spec/ copied into a temporary directory (`<tmp>/spec`), so `--write` never touches ours.
fn spec_copy() -> (tempfile::TempDir, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec");
    copy(&spec_dir(), &spec);
    (dir, spec)
}

#[test]
fn the_release_catalog_reports_zero_drift() {
    let report = sync::compare(&spec_dir(), &release()).unwrap();
    assert_eq!(drift(&report), vec![], "{}", render(&report));
    assert!(report.stale_differences.is_empty(), "{}", render(&report));
    assert!(report.is_clean());
    // What spec/ adds is kept, not drift.
    assert!(report.kept.actions_with_examples >= 177);
    assert!(
        !report
            .kept
            .returns_schema_where_upstream_has_none
            .is_empty()
    );
}

#[test]
fn the_development_catalog_adds_exactly_set_qzone_msg_right() {
    let report = sync::compare(&spec_dir(), &development()).unwrap();
    assert_eq!(
        drift(&report),
        vec![("set_qzone_msg_right".into(), "action".into(), Kind::Added)]
    );
    insta::assert_snapshot!("dev_884db94_report", render(&report));
}

#[test]
fn write_creates_the_new_action_and_a_second_run_reports_no_drift() {
    let (_dir, spec) = spec_copy();
    let upstream = development();
    let report = sync::compare(&spec, &upstream).unwrap();
    let loaded = snowluma_mcp_codegen::load::load(&spec).unwrap();
    let written = sync::write::apply(&spec, &loaded, &upstream, &report, None).unwrap();
    assert_eq!(
        written.files,
        vec![
            "actions/qzone/set_qzone_msg_right.yaml",
            "upstream-catalog.json"
        ]
    );
    assert!(written.left.is_empty(), "{:?}", written.left);

    // The build's codegen accepts it and emits the action with upstream's params and rules.
    let files = snowluma_mcp_codegen::generate(&spec).unwrap_or_else(|e| panic!("{e}"));
    let catalog: Value = files
        .iter()
        .find(|f| f.name == "catalog.json")
        .map(|f| serde_json::from_str(&f.contents).unwrap())
        .unwrap();
    let action = catalog["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "set_qzone_msg_right")
        .expect("the new action is in the generated catalog");
    let params: Vec<(Value, Value, Value)> = action["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].clone(), p["type"].clone(), p["required"].clone()))
        .collect();
    assert_eq!(
        params,
        vec![
            (json!("tid"), json!("string"), json!(true)),
            (json!("ugc_right"), json!("int"), json!(true)),
            (json!("target_uins"), json!("uint[]"), json!(false)),
        ]
    );
    assert_eq!(action["params"][1]["values"], json!([1, 4, 16, 64, 128]));
    assert_eq!(action["params"][0]["minLength"].clone(), Value::Null);
    assert_eq!(action["inputSchema"]["properties"]["tid"]["minLength"], 1);
    assert_eq!(
        action["invariants"][1]["required_when"],
        json!({ "field": "target_uins", "param": "ugc_right", "in": [16, 128] })
    );
    assert_eq!(action["returnsSchema"]["required"], json!(["ugc_right"]));
    let params_rs = &files
        .iter()
        .find(|f| f.name == "params.rs")
        .unwrap()
        .contents;
    assert!(params_rs.contains("pub struct SetQzoneMsgRightParams"));

    // Its example awaits review: the build warns, CI fails until a person clears it.
    let pending =
        snowluma_mcp_codegen::review::pending(&snowluma_mcp_codegen::load::load(&spec).unwrap());
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert!(
        pending[0].starts_with("spec/actions/qzone/set_qzone_msg_right.yaml:"),
        "{}",
        pending[0]
    );

    let again = sync::compare(&spec, &upstream).unwrap();
    assert!(again.is_clean(), "{}", render(&again));
}

/// 1.11.1's catalog with one edit made by `edit` on its JSON.
fn variant(edit: impl FnOnce(&mut Value)) -> String {
    let mut catalog: Value = serde_json::from_str(&release()).unwrap();
    edit(&mut catalog);
    catalog.to_string()
}

/// Edits an upstream catalog's JSON.
type Edit = fn(&mut Value);

fn action<'a>(catalog: &'a mut Value, name: &str) -> &'a mut Value {
    catalog["actions"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|a| a["name"] == name)
        .unwrap()
}

fn param<'a>(actions: &'a mut Value, name: &str, param: &str) -> &'a mut Value {
    action(actions, name)["params"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["name"] == param)
        .unwrap()
}

fn removed_action(catalog: &mut Value) {
    let actions = catalog["actions"].as_array_mut().unwrap();
    actions.retain(|a| a["name"] != "get_status");
}

fn renamed_param(actions: &mut Value) {
    param(actions, "get_group_info", "group_id")["name"] = json!("gid");
}

fn flipped_required(actions: &mut Value) {
    param(actions, "send_group_msg", "message")["required"] = json!(false);
}

fn narrowed_enum(actions: &mut Value) {
    let out_format = param(actions, "get_record", "out_format");
    out_format["schema"]["enum"] = json!(["mp3", "amr", "wma", "m4a", "spx", "ogg", "wav"]);
}

fn added_alias(actions: &mut Value) {
    action(actions, "send_group_msg")["aliases"] = json!(["send_group_message"]);
}

#[test]
fn synthetic_changes_are_each_reported_exactly() {
    let cases: [(Edit, (&str, &str, Kind)); 5] = [
        (removed_action, ("get_status", "action", Kind::Removed)),
        (
            renamed_param,
            ("get_group_info", "params.group_id", Kind::Renamed),
        ),
        (
            flipped_required,
            ("send_group_msg", "params.message.required", Kind::Changed),
        ),
        (
            narrowed_enum,
            ("get_record", "params.out_format.enum", Kind::Changed),
        ),
        (
            added_alias,
            ("send_group_msg", "aliases.send_group_message", Kind::Added),
        ),
    ];
    for (edit, (action, field, kind)) in cases {
        let report = sync::compare(&spec_dir(), &variant(edit)).unwrap();
        assert_eq!(
            drift(&report),
            vec![(action.to_string(), field.to_string(), kind)],
            "{}",
            render(&report)
        );
    }
}

#[test]
fn write_edits_existing_files_in_place_and_keeps_what_it_does_not_own() {
    let (_dir, spec) = spec_copy();
    let upstream = variant(|actions| {
        flipped_required(actions);
        narrowed_enum(actions);
        added_alias(actions);
    });
    let message = spec.join("actions/message/send_group_msg.yaml");
    let record = spec.join("actions/extended/get_record.yaml");
    let before = |p: &Path| std::fs::read_to_string(p).unwrap();
    let (message_before, record_before) = (before(&message), before(&record));
    let report = sync::compare(&spec, &upstream).unwrap();
    let loaded = snowluma_mcp_codegen::load::load(&spec).unwrap();
    let written = sync::write::apply(&spec, &loaded, &upstream, &report, None).unwrap();
    assert!(written.left.is_empty(), "{:?}", written.left);
    snowluma_mcp_codegen::generate(&spec).unwrap_or_else(|e| panic!("{e}"));
    let again = sync::compare(&spec, &upstream).unwrap();
    assert!(again.is_clean(), "{}", render(&again));

    // Only the owned lines moved: the enum line, the required line, the alias line and the
    // alias's example appended at the end; comments, returns and our examples stay as they were.
    let changed = |old: &str, new: &str| -> (Vec<String>, Vec<String>) {
        let old_lines: Vec<&str> = old.lines().collect();
        let new_lines: Vec<&str> = new.lines().collect();
        let gone = old_lines
            .iter()
            .filter(|l| !new_lines.contains(l))
            .map(|l| l.to_string())
            .collect();
        let came = new_lines
            .iter()
            .filter(|l| !old_lines.contains(l))
            .map(|l| l.to_string())
            .collect();
        (gone, came)
    };
    let (gone, came) = changed(&record_before, &before(&record));
    assert_eq!(
        gone,
        vec![r#"    values: ["mp3", "amr", "wma", "m4a", "spx", "ogg", "wav", "flac"]"#]
    );
    assert_eq!(
        came,
        vec!["    values: [mp3, amr, wma, m4a, spx, ogg, wav]"]
    );
    let expected = message_before
        .replacen(
            "name: \"send_group_msg\"\n",
            "name: \"send_group_msg\"\naliases: [send_group_message]\n",
            1,
        )
        .replacen(
            "    type: message\n    required: true\n",
            "    type: message\n",
            1,
        )
        + "  - summary: \"通过别名 send_group_message 调用（由 catalog-sync 生成，待核对）\"\n    action: send_group_message\n    params: {group_id: 20001, message: \"[CQ:at,qq=30001] 请查看群公告\"}\n    review: true\n";
    assert_eq!(before(&message), expected);
}

#[test]
fn the_command_exits_by_drift_and_prints_json() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_catalog-sync"))
            .args(args)
            .output()
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("catalog.json");
    std::fs::write(&dev, development()).unwrap();
    let spec = spec_dir();
    let spec = spec.to_str().unwrap();
    let clean = run(&[
        spec_dir().join("upstream-catalog.json").to_str().unwrap(),
        "--spec",
        spec,
    ]);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let drifted = run(&[dev.to_str().unwrap(), "--json", "--spec", spec]);
    assert_eq!(drifted.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&drifted.stdout).unwrap();
    assert_eq!(json["drift"][0]["action"], "set_qzone_msg_right");
    assert_eq!(json["drift"][0]["kind"], "added");
    let refused = run(&[dev.to_str().unwrap(), "--version", "1.12.0", "--spec", spec]);
    assert_eq!(refused.status.code(), Some(2), "--version needs --write");
}

#[test]
fn version_moves_only_when_asked() {
    let (_dir, spec) = spec_copy();
    let upstream = development();
    let version = |spec: &Path| {
        let text = std::fs::read_to_string(spec.join("catalog.yaml")).unwrap();
        text.lines()
            .find(|l| l.starts_with("version:"))
            .unwrap()
            .to_string()
    };
    let report = sync::compare(&spec, &upstream).unwrap();
    let loaded = snowluma_mcp_codegen::load::load(&spec).unwrap();
    sync::write::apply(&spec, &loaded, &upstream, &report, None).unwrap();
    assert_eq!(version(&spec), r#"version: "1.11.1""#);
    let loaded = snowluma_mcp_codegen::load::load(&spec).unwrap();
    sync::write::apply(&spec, &loaded, &upstream, &report, Some("1.12.0")).unwrap();
    assert_eq!(version(&spec), r#"version: "1.12.0""#);
    let catalog = std::fs::read_to_string(spec.join("catalog.yaml")).unwrap();
    assert!(catalog.starts_with("# The catalog header"), "comments stay");
}

#[test]
fn no_example_awaits_review() {
    // CI fails while any `review: true` example written by catalog-sync remains in spec/.
    let spec = snowluma_mcp_codegen::load::load(&spec_dir()).unwrap();
    let pending = snowluma_mcp_codegen::review::pending(&spec);
    assert!(
        pending.is_empty(),
        "examples await review:\n{}",
        pending.join("\n")
    );
}
