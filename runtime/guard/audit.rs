//! The audit log (`SNOWLUMA_MCP_AUDIT_LOG`): one JSON line per executed write and per refusal
//! by a limit, the gate or the user, appended and fsynced before the call answers. The file is
//! opened before anything runs, so a log that cannot be written refuses the call; it is
//! created 0600 and rotated by size, keeping one previous file (`<path>.1`).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AuditEntry {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// Who called: "default" for the HTTP token, the session id on stdio.
    pub principal: String,
    pub tool: String,
    pub action: String,
    /// `group:<id>` / `user:<id>` ids found in the params.
    pub targets: Vec<String>,
    /// success | failed | unknown | refused
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retcode: Option<i64>,
    pub traceparent: String,
    pub params_sha256: String,
    /// Only with SNOWLUMA_MCP_AUDIT_PARAMS=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// The sha256 of the params as compact JSON, in hex.
pub fn params_sha256(params: &Map<String, Value>) -> String {
    let text = serde_json::to_vec(params).unwrap_or_default();
    Sha256::digest(&text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The process's audit log.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    /// Whether entries carry the params themselves.
    pub with_params: bool,
    /// Serializes rotation and appends across sessions and tasks.
    lock: Arc<Mutex<()>>,
}

/// The log opened for one call, before it runs.
#[derive(Debug)]
pub struct AuditSlot {
    file: File,
    path: PathBuf,
    max_bytes: u64,
    lock: Arc<Mutex<()>>,
}

impl AuditLog {
    pub fn new(path: PathBuf, max_bytes: u64, with_params: bool) -> AuditLog {
        AuditLog {
            path,
            max_bytes,
            with_params,
            lock: Arc::new(Mutex::new(())),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the log for appending (creating it 0600); an error means the call must not run.
    pub fn open(&self) -> io::Result<AuditSlot> {
        Ok(AuditSlot {
            file: open_append(&self.path)?,
            path: self.path.clone(),
            max_bytes: self.max_bytes,
            lock: self.lock.clone(),
        })
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

impl AuditSlot {
    /// Appends one line and fsyncs it, rotating first when the line would take the file over
    /// its size. Blocking: call it from `spawn_blocking`.
    pub fn append(mut self, entry: &AuditEntry) -> io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line.push(b'\n');
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let size = self.file.metadata()?.len();
        if size > 0 && size + line.len() as u64 > self.max_bytes {
            let mut previous = self.path.clone().into_os_string();
            previous.push(".1");
            std::fs::rename(&self.path, &previous)?;
            self.file = open_append(&self.path)?;
        }
        self.file.write_all(&line)?;
        self.file.sync_data()
    }
}

/// Reads the entries of the log and its previous file, oldest first; lines that are not
/// entries are skipped and counted.
pub fn read_entries(path: &Path) -> io::Result<(Vec<AuditEntry>, usize)> {
    let mut previous = path.as_os_str().to_owned();
    previous.push(".1");
    let mut entries = Vec::new();
    let mut skipped = 0;
    for file in [PathBuf::from(previous), path.to_path_buf()] {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound && file != path => continue,
            Err(error) => return Err(error),
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str(line) {
                Ok(entry) => entries.push(entry),
                Err(_) => skipped += 1,
            }
        }
    }
    Ok((entries, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(action: &str) -> AuditEntry {
        AuditEntry {
            time: "2026-01-01T00:00:00.000Z".into(),
            principal: "session-1".into(),
            tool: "invoke_action".into(),
            action: action.into(),
            targets: vec!["group:1".into()],
            outcome: "success".into(),
            kind: None,
            retcode: Some(0),
            traceparent: "00-0-0-01".into(),
            params_sha256: params_sha256(&Map::new()),
            params: None,
        }
    }

    #[test]
    fn appends_private_lines_and_rotates_keeping_one_previous_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(path.clone(), 600, false);
        for i in 0..6 {
            log.open()
                .unwrap()
                .append(&entry(&format!("send_{i}")))
                .unwrap();
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(std::fs::metadata(&path).unwrap().len() <= 600);
        let (entries, skipped) = read_entries(&path).unwrap();
        assert_eq!(skipped, 0);
        // Entries are about 250 bytes: two fit per file, and only one previous file is kept.
        let names: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(names, ["send_2", "send_3", "send_4", "send_5"]);
        assert!(!dir.path().join("audit.jsonl.2").exists());
    }

    #[test]
    fn an_unwritable_log_fails_to_open() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be cannot be opened for appending.
        let log = AuditLog::new(dir.path().to_path_buf(), 1 << 20, false);
        assert!(log.open().is_err());
    }
}
