//! Action dispatch: the generated catalog tells which actions exist, which
//! stream, and how their params validate (SnowLuma's action-kit wording);
//! canned answers cover the common actions and every other catalog action
//! answers data built from its `returnsSchema`.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::streams::{self, Source, StreamJob};
use super::{
    DOWNLOAD_DIR, GROUP_ID, LARGE_GROUP_ID, LARGE_GROUP_MEMBERS, MESSAGE_ID, MISSING_MESSAGE_ID,
    SELF_ID, Shared, USER_ID,
};

const CATALOG_JSON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/generated/catalog.json"
));

/// The parts of one catalog entry the fake uses.
pub(super) struct ActionInfo {
    pub name: String,
    pub stream: bool,
    pub params: Vec<Value>,
    pub invariants: Vec<Value>,
    pub returns_schema: Value,
    pub examples: Vec<Value>,
}

struct Catalog {
    actions: Vec<ActionInfo>,
    /// Names and aliases → index into `actions`.
    by_name: HashMap<String, usize>,
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let doc: Value = serde_json::from_str(CATALOG_JSON).expect("generated/catalog.json");
        let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
        let mut cat = Catalog {
            actions: Vec::new(),
            by_name: HashMap::new(),
        };
        for entry in list(doc.get("actions")) {
            let Some(name) = entry.get("name").and_then(Value::as_str) else {
                continue;
            };
            let index = cat.actions.len();
            cat.by_name.insert(name.to_string(), index);
            for alias in list(entry.get("aliases")) {
                if let Some(alias) = alias.as_str() {
                    cat.by_name.insert(alias.to_string(), index);
                }
            }
            cat.actions.push(ActionInfo {
                name: name.to_string(),
                stream: entry
                    .get("stream")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                params: list(entry.get("params")),
                invariants: list(entry.get("invariants")),
                returns_schema: entry.get("returnsSchema").cloned().unwrap_or(Value::Null),
                examples: list(entry.get("examples")),
            });
        }
        cat
    })
}

pub(super) fn lookup(action: &str) -> Option<&'static ActionInfo> {
    let cat = catalog();
    cat.by_name.get(action).map(|&i| &cat.actions[i])
}

pub(super) fn is_stream(action: &str) -> bool {
    lookup(action).is_some_and(|a| a.stream)
}

/// The catalog's `returnsSchema` for an action or alias.
pub fn returns_schema(action: &str) -> Option<Value> {
    lookup(action).map(|a| a.returns_schema.clone())
}

/// Every catalog example as `(action, params, stream)`.
pub fn catalog_examples() -> Vec<(String, Value, bool)> {
    catalog()
        .actions
        .iter()
        .flat_map(|a| {
            a.examples.iter().map(|e| {
                let params = e.get("params").cloned().unwrap_or_else(|| json!({}));
                (a.name.clone(), params, a.stream)
            })
        })
        .collect()
}

/// Every catalog action name (aliases excluded).
pub fn catalog_actions() -> Vec<String> {
    catalog().actions.iter().map(|a| a.name.clone()).collect()
}

pub(super) fn ok(data: Value) -> Value {
    json!({"status": "ok", "retcode": 0, "data": data})
}

pub(super) fn failed(retcode: i64, wording: impl Into<String>) -> Value {
    json!({"status": "failed", "retcode": retcode, "data": null, "wording": wording.into()})
}

pub(super) enum Outcome {
    Envelope(Value),
    Stream(StreamJob),
}

/// Answer one action call (the adapter has already parsed the request).
pub(super) fn dispatch(shared: &Shared, action: &str, params: &Map<String, Value>) -> Outcome {
    let mut st = shared.lock();
    let stream = is_stream(action);
    let wrap = |env: Value| {
        if stream {
            Outcome::Stream(StreamJob::Terminal(env))
        } else {
            Outcome::Envelope(env)
        }
    };
    if let Some(env) = st.answers.get(action) {
        return wrap(env.clone());
    }
    let Some(info) = lookup(action) else {
        // Registered outside the action kit, so absent from the catalog.
        if action == ".handle_quick_operation" {
            return Outcome::Envelope(ok(Value::Null));
        }
        return Outcome::Envelope(failed(1404, "unknown action"));
    };
    if let Err(wording) = validate_params(info, params) {
        return wrap(failed(1400, wording));
    }
    let text = |k: &str| params.get(k).and_then(as_string).unwrap_or_default();
    match info.name.as_str() {
        "download_file_stream" | "download_file_image_stream" | "download_file_record_stream" => {
            let file = text("file");
            let target = if file.is_empty() {
                text("file_id")
            } else {
                file
            };
            let chunk_size = params
                .get("chunk_size")
                .and_then(as_int)
                .filter(|n| *n > 0)
                .map_or(streams::DEFAULT_CHUNK, |n| n as u64)
                .min(streams::MAX_CHUNK_REQUEST);
            match resolve_download(&st.files, &target) {
                Ok((source, name)) => Outcome::Stream(StreamJob::Download {
                    source,
                    name,
                    chunk_size,
                }),
                Err(wording) => wrap(failed(100, wording)),
            }
        }
        "upload_file_stream" => {
            let keep = shared.keep_upload_bytes;
            wrap(streams::upload(&mut st, keep, params))
        }
        "test_download_stream" => Outcome::Stream(StreamJob::Test {
            error: params.get("error").and_then(as_bool).unwrap_or(false),
        }),
        "clean_stream_temp_file" => {
            let mut removed = st.uploads.clean();
            let before = st.files.len();
            st.files
                .retain(|path, _| !path.starts_with(super::UPLOAD_DIR));
            removed += before - st.files.len();
            wrap(ok(json!({"message": "success", "removed": removed})))
        }
        _ => wrap(canned(info, params, &st.version)),
    }
}

fn resolve_download(
    files: &HashMap<String, Source>,
    target: &str,
) -> Result<(Source, String), String> {
    if target.is_empty() {
        return Err("file is required".into());
    }
    let found = files
        .get(target)
        .or_else(|| files.get(&format!("{DOWNLOAD_DIR}/{target}")));
    if let Some(source) = found {
        let name = target.rsplit('/').next().unwrap_or(target).to_string();
        return Ok((source.clone(), name));
    }
    let lower = target.to_ascii_lowercase();
    if let Some(rest) = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
    {
        // The fake has no network: answer the way SnowLuma refuses or fails.
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = host.rsplit('@').next().unwrap_or(host);
        let host = host
            .trim_start_matches('[')
            .split(']')
            .next()
            .unwrap_or(host);
        let host = if host.matches(':').count() == 1 {
            host.split(':').next().unwrap_or(host)
        } else {
            host
        };
        return Err(match host.parse::<std::net::IpAddr>() {
            Ok(ip) if is_private(ip) => "refusing to fetch a private/loopback address".into(),
            Ok(_) => "download failed: HTTP 404".into(),
            Err(_) if host == "localhost" => {
                "refusing to fetch a host that resolves to a private address".into()
            }
            Err(_) => format!("cannot resolve host: {host}"),
        });
    }
    Err(
        "file not found (expected a stream-dir path, an http(s) URL, or a cached image/voice id)"
            .into(),
    )
}

fn is_private(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || (o[0] == 100 && (64..=127).contains(&o[1]))
        }
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| is_private(v4.into()))
        }
    }
}

/// Hand-written answers; anything else is built from the returnsSchema.
fn canned(info: &ActionInfo, params: &Map<String, Value>, version: &str) -> Value {
    let int = |k: &str| params.get(k).and_then(as_int);
    let group_id = int("group_id").unwrap_or(GROUP_ID);
    let user_id = int("user_id").unwrap_or(USER_ID);
    match info.name.as_str() {
        "get_login_info" => ok(json!({"user_id": SELF_ID, "nickname": "SnowLuma Bot"})),
        "get_status" => ok(json!({"online": true, "good": true})),
        "get_version_info" => ok(json!({
            "app_name": "SnowLuma", "app_version": version, "protocol_version": "v11"
        })),
        "get_friend_list" => ok(json!([
            {"user_id": USER_ID, "nickname": "Tester", "remark": ""},
            {"user_id": USER_ID + 1, "nickname": "Second Friend", "remark": "bff"}
        ])),
        "get_group_list" => ok(json!([group_info(GROUP_ID)])),
        "get_group_info" => ok(group_info(group_id)),
        "get_group_member_info" => ok(member(group_id, user_id)),
        "get_group_member_list" if group_id == LARGE_GROUP_ID => ok(Value::Array(
            (0..LARGE_GROUP_MEMBERS).map(large_group_member).collect(),
        )),
        "get_group_msg_history" if group_id == LARGE_GROUP_ID => {
            // SnowLuma: count 0 or absent means 20, and at most 200 are returned.
            let count = match int("count").unwrap_or(0) {
                n if n <= 0 => 20,
                n => n.min(200),
            };
            ok(json!({ "messages": (0..count).map(large_group_message).collect::<Vec<_>>() }))
        }
        "get_group_member_list" => ok(json!([
            member(group_id, SELF_ID),
            member(group_id, USER_ID)
        ])),
        "get_msg" => match int("message_id") {
            Some(MISSING_MESSAGE_ID) => failed(100, "message not found"),
            id => ok(message(id.unwrap_or(MESSAGE_ID))),
        },
        "delete_msg" => match int("message_id") {
            Some(MISSING_MESSAGE_ID) => failed(100, "message not found or not retractable"),
            _ => ok(Value::Null),
        },
        "send_msg" => {
            // SnowLuma's routing: group when group_id is given or message_type
            // is "group"; otherwise private, which needs user_id.
            let group_hint = params.get("message_type").and_then(Value::as_str) == Some("group");
            let has_group = params.contains_key("group_id");
            if group_hint && !has_group {
                failed(1400, "group_id is required")
            } else if !has_group && !params.contains_key("user_id") {
                failed(1400, "user_id is required")
            } else {
                send_result(params)
            }
        }
        "send_private_msg" | "send_group_msg" => send_result(params),
        "set_group_ban" | "set_group_kick" | "set_group_card" => ok(Value::Null),
        "get_stranger_info" if user_id == USER_ID || user_id == SELF_ID => ok(json!({
            "user_id": user_id, "nickname": "Tester", "sex": "unknown", "age": 0,
            "qq_level": 12, "level": 12
        })),
        "get_stranger_info" => ok(json!({
            "user_id": user_id, "nickname": "", "sex": "unknown", "age": 0
        })),
        "can_send_image" | "can_send_record" => ok(json!({"yes": true})),
        _ => match super::schema::synthesize(&info.returns_schema, None) {
            Some(data) => ok(data),
            // `not: {}`: the action always fails in SnowLuma.
            None => failed(100, format!("{} is not supported", info.name)),
        },
    }
}

fn send_result(params: &Map<String, Value>) -> Value {
    if message_is_empty(params.get("message")) {
        failed(100, "message is empty")
    } else {
        ok(json!({"message_id": MESSAGE_ID}))
    }
}

fn group_info(group_id: i64) -> Value {
    if group_id == GROUP_ID {
        json!({"group_id": group_id, "group_name": "Test Group", "member_count": 2, "max_member_count": 200})
    } else {
        // SnowLuma answers a placeholder, still status ok, for unknown groups.
        json!({"group_id": group_id, "group_name": "", "member_count": 0, "max_member_count": 0})
    }
}

fn member(group_id: i64, user_id: i64) -> Value {
    let (nickname, role, level) = match user_id {
        SELF_ID => ("SnowLuma Bot", "owner", "10"),
        USER_ID => ("Tester", "member", "3"),
        _ => ("", "member", "0"),
    };
    json!({
        "group_id": group_id, "user_id": user_id, "nickname": nickname, "card": "",
        "sex": "unknown", "age": 0, "join_time": 1_700_000_000, "last_sent_time": 1_700_000_100,
        "level": level, "role": role, "title": ""
    })
}

/// Member `n` of [`LARGE_GROUP_ID`]: SnowLuma's member shape with long Chinese names, as a
/// big real group has.
fn large_group_member(n: i64) -> Value {
    json!({
        "group_id": LARGE_GROUP_ID, "user_id": 1_000_000 + n,
        "nickname": format!("群成员{n:04}号·昵称比较长的一位测试用户（来自大群）"),
        "card": format!("大群名片{n:04}｜负责测试分页与续读的成员，名片写得很长很长"),
        "sex": "unknown", "age": 0, "join_time": 1_600_000_000 + n, "last_sent_time": 1_700_000_000 + n,
        "level": format!("{}", n % 100), "role": if n == 0 { "owner" } else if n < 10 { "admin" } else { "member" },
        "title": format!("头衔{n:04}·资深潜水员与测试志愿者"),
    })
}

/// Message `n` of [`LARGE_GROUP_ID`]'s history, sanitised like SnowLuma's (no post_type or
/// self_id, `real_id` = `message_id`).
fn large_group_message(n: i64) -> Value {
    let id = -1_000_000 - n;
    let text = format!("第{n}条历史消息：今天的群聊内容比较多，这是用于测试分页的一条消息。");
    json!({
        "time": 1_700_000_000 + n, "message_type": "group", "sub_type": "normal",
        "message_id": id, "message_seq": 10_000 + n, "group_id": LARGE_GROUP_ID,
        "user_id": 1_000_000 + n % 50,
        "message": [{"type": "text", "data": {"text": text}}], "raw_message": text, "font": 0,
        "sender": {"user_id": 1_000_000 + n % 50, "nickname": format!("群成员{:04}号", n % 50),
                   "card": "", "role": "member", "sex": "unknown", "age": 0},
        "real_id": id
    })
}

fn message(message_id: i64) -> Value {
    json!({
        "time": 1_700_000_000, "message_type": "group", "sub_type": "normal",
        "message_id": message_id, "message_seq": 42, "group_id": GROUP_ID, "user_id": USER_ID,
        "message": [{"type": "text", "data": {"text": "hello"}}], "raw_message": "hello",
        "font": 0,
        "sender": {"user_id": USER_ID, "nickname": "Tester", "card": "", "role": "member",
                   "sex": "unknown", "age": 0},
        "anonymous": null, "real_id": message_id
    })
}

/// SnowLuma fails with "message is empty" when nothing sendable is left.
fn message_is_empty(message: Option<&Value>) -> bool {
    let segment_ok = |s: &Value| s.get("type").and_then(Value::as_str).is_some();
    match message {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => {
            let t = s.trim();
            if t.starts_with('[')
                && t.ends_with(']')
                && let Ok(Value::Array(a)) = serde_json::from_str::<Value>(t)
            {
                return !a.iter().any(segment_ok);
            }
            s.is_empty()
        }
        Some(Value::Array(a)) => !a.iter().any(segment_ok),
        Some(v @ Value::Object(_)) => !segment_ok(v),
        Some(_) => false,
    }
}

/// Param validation with the action-kit's wording (`<field>: <reason>`).
/// Actions answered by hand above report their own run-time errors, so only
/// the others get the catalog invariants checked here.
fn validate_params(info: &ActionInfo, params: &Map<String, Value>) -> Result<(), String> {
    for p in &info.params {
        if p.get("undeclared").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        match params.get(name) {
            None => {
                let required = p.get("required").and_then(Value::as_bool) == Some(true)
                    && p.get("default").is_none();
                if required {
                    return Err(format!("{name}: is required"));
                }
            }
            Some(v) => check_param(p, v, name)?,
        }
    }
    const HAND_CHECKED: &[&str] = &[
        "send_msg",
        "download_file_stream",
        "download_file_image_stream",
        "download_file_record_stream",
    ];
    if HAND_CHECKED.contains(&info.name.as_str()) {
        return Ok(());
    }
    for inv in &info.invariants {
        if let Some(any) = inv.get("any_of").and_then(Value::as_array) {
            let names: Vec<&str> = any.iter().filter_map(Value::as_str).collect();
            if !names.iter().any(|n| params.contains_key(*n)) {
                return Err(format!("at least one of: {}", names.join(", ")));
            }
        }
        if let Some(rw) = inv.get("required_when") {
            let field = rw.get("field").and_then(Value::as_str).unwrap_or("");
            let param = rw.get("param").and_then(Value::as_str).unwrap_or("");
            let hit = rw
                .get("in")
                .and_then(Value::as_array)
                .zip(params.get(param))
                .is_some_and(|(values, v)| values.contains(v));
            if hit && !params.contains_key(field) {
                return Err(format!("{field} is required"));
            }
        }
    }
    Ok(())
}

/// Coerce-check one present param; the error is the full kit wording.
fn check_param(p: &Value, v: &Value, name: &str) -> Result<(), String> {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("raw");
    let num = |k: &str| p.get(k).and_then(Value::as_i64);
    let reason = |why: String| format!("{name}: {why}");
    match ty {
        "uint" => check_int(
            v,
            "a positive integer",
            Some(num("minimum").unwrap_or(1)),
            num("maximum"),
            false,
        ),
        "int" => check_int(
            v,
            "an integer",
            num("minimum"),
            num("maximum"),
            p.get("non_zero").and_then(Value::as_bool) == Some(true),
        ),
        "message_id" => check_int(v, "a message id", num("minimum"), num("maximum"), true),
        "number" => as_number(v)
            .map(|_| ())
            .ok_or_else(|| "expected a number".to_string()),
        "string" => match as_string(v) {
            None => Err("expected a string".to_string()),
            Some(s) if s.is_empty() && num("min_length").unwrap_or(0) > 0 => {
                Err("must not be empty".to_string())
            }
            Some(_) => Ok(()),
        },
        "bool" => as_bool(v)
            .map(|_| ())
            .ok_or_else(|| "expected a boolean".to_string()),
        "enum" => {
            let values = p
                .get("values")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if (v.is_string() || v.is_number()) && values.contains(v) {
                Ok(())
            } else {
                let list: Vec<String> = values
                    .iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                    .collect();
                Err(format!("expected one of: {}", list.join(", ")))
            }
        }
        t if t.ends_with("[]") => {
            let Some(items) = v.as_array() else {
                return Err(reason("expected an array".to_string()));
            };
            let mut item = p.clone();
            item["type"] = json!(t.trim_end_matches("[]"));
            item["min_length"] = p.get("item_min_length").cloned().unwrap_or(json!(0));
            for (i, x) in items.iter().enumerate() {
                // The kit names an element `field[i]`.
                check_param(&item, x, &format!("{name}[{i}]"))?;
            }
            if num("min_items").unwrap_or(0) > 0 && items.is_empty() {
                return Err(reason("must not be empty".to_string()));
            }
            return Ok(());
        }
        _ => Ok(()), // message, raw
    }
    .map_err(reason)
}

fn check_int(
    v: &Value,
    what: &str,
    min: Option<i64>,
    max: Option<i64>,
    non_zero: bool,
) -> Result<(), String> {
    let n = as_int(v).ok_or_else(|| format!("expected {what}"))?;
    if non_zero && n == 0 {
        return Err("must not be 0".into());
    }
    if let Some(min) = min
        && n < min
    {
        return Err(format!("must be >= {min}"));
    }
    if let Some(max) = max
        && n > max
    {
        return Err(format!("must be <= {max}"));
    }
    Ok(())
}

fn as_number(v: &Value) -> Option<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) if !s.trim().is_empty() => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    n.is_finite().then_some(n)
}

/// Numbers or numeric strings, truncated (the kit's `intCore`).
pub(super) fn as_int(v: &Value) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    as_number(v).map(|f| f.trunc() as i64)
}

pub(super) fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => Some(n.as_f64() != Some(0.0)),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Some(true),
            "false" | "0" | "no" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Strings, with numbers and booleans stringified (the kit's `f.string`).
pub(super) fn as_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}
