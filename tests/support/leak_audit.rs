//! The leak audit's secrets and checks: per-run random tokens and message markers, every
//! encoding of them worth looking for, and the rules for where a marker may legitimately
//! appear (the content a result returns on purpose) and where nothing secret may (stderr,
//! diagnostics, errors, runtime info, files the server writes, its argv).
#![allow(dead_code)] // each includer uses a different part

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lower-case hex of fresh random bytes from the OS.
pub fn random_hex(bytes: usize) -> String {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).expect("OS random source");
    hex(&raw)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// This run's secrets. The tokens hold `+`, `/` and `=` so their URL-encoded form differs
/// from the raw one and both are looked for.
pub struct Secrets {
    /// SnowLuma's access token (SNOWLUMA_MCP_TOKEN / _FILE).
    pub token: String,
    /// The token HTTP clients present (SNOWLUMA_MCP_HTTP_TOKEN / _FILE).
    pub http_token: String,
    /// A wrong bearer token a client tries; a refusal must not echo it either.
    pub wrong_token: String,
    /// Shared prefix of every message marker, so one search finds them all.
    marker_root: String,
}

impl Secrets {
    pub fn new() -> Secrets {
        Secrets {
            token: format!("sltok+{}/{}=", random_hex(16), random_hex(16)),
            http_token: format!("mcptok+{}/{}=", random_hex(16), random_hex(16)),
            wrong_token: format!("wrongtok+{}/{}=", random_hex(16), random_hex(16)),
            marker_root: format!("LEAKMARK{}", random_hex(12)),
        }
    }

    /// A marker for content placed on one surface; the suffix says which when one leaks.
    pub fn marker(&self, surface: &str) -> String {
        format!("{}x{surface}", self.marker_root)
    }

    fn token_needles(&self) -> Vec<(String, String)> {
        let mut needles = Vec::new();
        for (name, secret) in [
            ("access token", &self.token),
            ("HTTP token", &self.http_token),
            ("wrong bearer token", &self.wrong_token),
        ] {
            needles.extend(
                encodings(secret)
                    .into_iter()
                    .map(|(how, needle)| (format!("{name} ({how})"), needle)),
            );
        }
        needles
    }

    fn marker_needles(&self) -> Vec<(String, String)> {
        encodings(&self.marker_root)
            .into_iter()
            .map(|(how, needle)| (format!("message marker ({how})"), needle))
            .collect()
    }

    /// Panics when any token, in any encoding, is in `text`.
    pub fn assert_no_token(&self, surface: &str, text: &str) {
        assert_absent(surface, text, &self.token_needles());
    }

    /// Panics when any message marker, in any encoding, is in `text`.
    pub fn assert_no_marker(&self, surface: &str, text: &str) {
        assert_absent(surface, text, &self.marker_needles());
    }

    /// Neither a token nor a marker: stderr, argv, runtime info, diagnostics, errors.
    pub fn assert_clean(&self, surface: &str, text: &str) {
        self.assert_no_token(surface, text);
        self.assert_no_marker(surface, text);
    }

    /// Which token form `text` holds, if any (for the audit's own checks).
    pub fn token_form_in(&self, text: &str) -> Option<String> {
        find(text, &self.token_needles()).map(|(what, _)| what.clone())
    }

    /// Which marker form a server message holds outside its returned content, if any.
    pub fn marker_outside_content(&self, line: &str) -> Option<String> {
        let mut message: Value = serde_json::from_str(line).ok()?;
        scrub_returned_content(&mut message);
        find(&message.to_string(), &self.marker_needles()).map(|(what, _)| what.clone())
    }

    /// Whether `text` holds a marker as plain text.
    pub fn has_marker(&self, text: &str) -> bool {
        text.contains(&self.marker_root)
    }

    /// One MCP message from the server: no token anywhere, and no marker outside the parts
    /// that return content on purpose (see [`scrub_returned_content`]).
    pub fn assert_message_clean(&self, surface: &str, line: &str) {
        self.assert_no_token(surface, line);
        let Ok(mut message) = serde_json::from_str::<Value>(line) else {
            // Not JSON (an SSE comment, a plain-text refusal): nothing is exempt.
            self.assert_no_marker(surface, line);
            return;
        };
        scrub_returned_content(&mut message);
        self.assert_no_marker(surface, &message.to_string());
    }

    /// Every file under `dir` (recursively): no token in any; a marker only in `allowed`.
    /// Returns the files read, so callers can assert the walk saw something.
    pub fn assert_dir_clean(&self, dir: &Path, allowed: &[PathBuf]) -> Vec<PathBuf> {
        let mut files = Vec::new();
        walk(dir, &mut files);
        for file in &files {
            let bytes = std::fs::read(file).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            let surface = format!("file {}", file.display());
            self.assert_no_token(&surface, &text);
            if !allowed.contains(file) {
                self.assert_no_marker(&surface, &text);
            }
        }
        files
    }

    /// The process's command line (`/proc/<pid>/cmdline`) holds no secret. Right after the
    /// spawn the child may still be the test binary before its exec, so this waits (bounded)
    /// until the command line is the server's.
    pub fn assert_argv_clean(&self, pid: u32) {
        let is_server = |raw: &[u8]| {
            let first = raw.split(|b| *b == 0).next().unwrap_or_default();
            Path::new(&*String::from_utf8_lossy(first)).file_name()
                == Some(std::ffi::OsStr::new("snowluma-mcp"))
        };
        let mut raw = Vec::new();
        for _ in 0..200 {
            raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if is_server(&raw) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let argv = String::from_utf8_lossy(&raw).replace('\0', " ");
        assert!(is_server(&raw), "read the server's argv: {argv:?}");
        self.assert_clean(&format!("argv of pid {pid}"), &argv);
    }
}

/// The forms a secret could take on its way into a log or a file: itself, URL-encoded (any
/// hex case), base64 (standard and URL-safe, at each of the three byte alignments it could
/// sit at inside a longer encoded string), hex, and its unsalted SHA-256.
pub fn encodings(secret: &str) -> Vec<(String, String)> {
    let mut forms = vec![
        ("raw".to_string(), secret.to_string()),
        (
            "URL-encoded".to_string(),
            url::form_urlencoded::byte_serialize(secret.as_bytes()).collect::<String>(),
        ),
        ("hex".to_string(), hex(secret.as_bytes())),
        (
            "SHA-256 hex".to_string(),
            hex(&Sha256::digest(secret.as_bytes())),
        ),
    ];
    for (name, engine) in [("base64", &STANDARD), ("base64url", &URL_SAFE_NO_PAD)] {
        for offset in 0..3 {
            // With `offset` bytes in front, the first 4 characters mix in those bytes and the
            // last 4 may mix in whatever follows; the characters between are fixed wherever
            // the secret sits at this alignment.
            let mut padded = vec![0u8; offset];
            padded.extend_from_slice(secret.as_bytes());
            let encoded = engine.encode(&padded);
            let fixed = encoded[4..encoded.len() - 4].to_string();
            forms.push((format!("{name}, offset {offset}"), fixed));
        }
    }
    // A plain marker URL-encodes to itself: look for each form once.
    let mut seen = std::collections::HashSet::new();
    forms.retain(|(_, form)| seen.insert(form.clone()));
    forms
}

/// The first needle found in `text`, as (what it is, the form found).
fn find<'a>(text: &str, needles: &'a [(String, String)]) -> Option<&'a (String, String)> {
    let lower = text.to_ascii_lowercase();
    needles.iter().find(|(what, needle)| {
        // Percent-encoding and hex may use either letter case; everything else is exact.
        if what.contains("URL-encoded") || what.contains("hex") {
            lower.contains(&needle.to_ascii_lowercase())
        } else {
            text.contains(needle.as_str())
        }
    })
}

fn assert_absent(surface: &str, text: &str, needles: &[(String, String)]) {
    if let Some((what, needle)) = find(text, needles) {
        panic!(
            "LEAK: the {what} appears in {surface}:\n{}",
            excerpt(text, needle)
        );
    }
}

fn excerpt(text: &str, needle: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let at = lower.find(&needle.to_ascii_lowercase()).unwrap_or(0);
    let around = at.saturating_sub(300)..(at + needle.len() + 300);
    text.char_indices()
        .filter(|(i, _)| around.contains(i))
        .map(|(_, c)| c)
        .collect()
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk(&path, files),
            Ok(kind) if kind.is_file() => files.push(path),
            _ => {}
        }
    }
}

/// Removes what a message returns on purpose, so markers there are not counted: a tool
/// result's original payload (`structuredContent.result`, SnowLuma's answer or a draft the
/// caller asked for, and the text block that mirrors it) and the events of an event page
/// (a tool result's or a `resources/read` of `snowluma://onebot/events/...`). Diagnostics,
/// errors, prompts, continuation state, progress, notifications and the rest of an event
/// page (its status and stop detail) stay and are checked. Applied at every depth, so a saved
/// task result inside `tasks/get` is treated the same way.
pub fn scrub_returned_content(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(structured) = map.get_mut("structuredContent") {
                scrub_payload(structured);
                // The text block is the same JSON as structuredContent (the raw client checks
                // that); drop it only when it really is, so nothing else hides there.
                let mirror = structured.clone();
                if let Some(Value::Array(blocks)) = map.get_mut("content") {
                    blocks.retain(|block| {
                        let text = block["text"].as_str().unwrap_or_default();
                        let mut parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                        scrub_payload(&mut parsed);
                        parsed != mirror
                    });
                }
            }
            if let Some(Value::Array(contents)) = map.get_mut("contents") {
                for item in contents {
                    let is_events = item["uri"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("snowluma://onebot/events/"));
                    if is_events && let Some(text) = item["text"].as_str() {
                        let mut page: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                        scrub_page(&mut page);
                        item["text"] = Value::String(page.to_string());
                    }
                }
            }
            for child in map.values_mut() {
                scrub_returned_content(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_returned_content),
        _ => {}
    }
}

/// `{result, diagnostics}`: an event page keeps everything but its entries; any other
/// payload is the caller's content.
fn scrub_payload(structured: &mut Value) {
    let Some(result) = structured.get_mut("result") else {
        return;
    };
    if result.get("entries").is_some() {
        scrub_page(result);
    } else if !result.is_null() {
        *result = Value::String("<returned content>".into());
    }
}

fn scrub_page(page: &mut Value) {
    if let Some(entries) = page.get_mut("entries") {
        *entries = Value::String("<returned events>".into());
    }
}

/// Trace ids for calls the test makes: each call's traceparent is unique, so the audit can
/// check that the server logged a diagnostics line for every one of them.
pub struct TraceIds {
    prefix: String,
    next: u64,
    pub sent: Vec<String>,
}

impl TraceIds {
    pub fn new() -> TraceIds {
        TraceIds {
            prefix: random_hex(8),
            next: 1,
            sent: Vec::new(),
        }
    }

    /// A fresh caller traceparent; its trace id is what the server keeps and logs.
    pub fn next(&mut self) -> String {
        let trace_id = format!("{}{:016x}", self.prefix, self.next);
        self.next += 1;
        self.sent.push(trace_id.clone());
        format!("00-{trace_id}-00f067aa0ba902b7-01")
    }

    /// Every traceparent sent has its call line in `stderr`: the logger really logged these
    /// calls, so an empty or silent log cannot pass the audit.
    pub fn assert_logged(&self, stderr: &str) {
        assert!(!self.sent.is_empty(), "no traced call was made");
        for trace_id in &self.sent {
            assert!(
                stderr
                    .lines()
                    .any(|l| l.contains("snowluma_mcp::call") && l.contains(trace_id.as_str())),
                "no diagnostics line for trace {trace_id} in stderr:\n{stderr}"
            );
        }
    }
}
