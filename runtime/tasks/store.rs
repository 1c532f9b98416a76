//! The task directory: lease, scope record and task records.
//!
//! Layout: `lease` (held with an exclusive advisory lock for the store's lifetime),
//! `scope.json` (salt and digest of mode, endpoint and token) and `tasks/<id>.json`.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::MAX_RECORD_BYTES;
use super::error::TaskStoreError;
use super::private_fs::{
    TEMP_PREFIX, check_private, ensure_private_dir, open_private_file, read_private,
    read_private_head, write_atomic,
};
use super::record::{TaskRecord, TaskState, TaskSummary, UNKNOWN_OUTCOME_MESSAGE, is_task_id, now};
use crate::ids;

const SCOPE_FILE: &str = "scope.json";
const LEASE_FILE: &str = "lease";
const TASKS_DIR: &str = "tasks";
const SCOPE_VERSION: u32 = 1;
const SCOPE_LIMIT: usize = 4096;

/// The configuration a task directory is bound to. Only a salted digest of it is stored.
pub struct ScopeInputs<'a> {
    /// Effective mode, e.g. `"write"`.
    pub mode: &'a str,
    pub endpoint: &'a str,
    pub token: Option<&'a str>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeRecord {
    version: u32,
    /// 16 random bytes, hex, chosen when the directory was first used: the digest is then
    /// useless for guessing a token across directories.
    salt: String,
    digest: String,
}

fn scope_digest(salt: &str, scope: &ScopeInputs<'_>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"snowluma-mcp task scope v1\0");
    hasher.update(salt.as_bytes());
    // Length prefixes keep ("ab","c") and ("a","bc") apart.
    let token = scope.token.unwrap_or("");
    for (present, part) in [
        (true, scope.mode),
        (true, scope.endpoint),
        (scope.token.is_some(), token),
    ] {
        hasher.update([u8::from(present)]);
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    ids::hex(&hasher.finalize())
}

/// An open task directory. Holding it holds the lease; dropping it releases the lease.
#[derive(Debug)]
pub struct TaskStore {
    dir: PathBuf,
    tasks_dir: PathBuf,
    /// The locked lease file; closing it releases the lock.
    _lease: File,
    recovered: Vec<String>,
    /// Summaries read at open, until the manager takes them.
    loaded: Vec<TaskSummary>,
}

impl TaskStore {
    /// Opens (creating when absent) the task directory `dir` for this configuration: checks it
    /// is absolute and private, takes the lease, checks or writes the scope record, and marks
    /// every task that was still working as failed with the unknown-outcome message.
    pub fn open(dir: &Path, scope: ScopeInputs<'_>) -> Result<TaskStore, TaskStoreError> {
        if !dir.is_absolute() {
            return Err(TaskStoreError::NotAbsolute {
                dir: dir.to_path_buf(),
            });
        }
        ensure_private_dir(dir)?;
        let lease_path = dir.join(LEASE_FILE);
        let lease = open_private_file(&lease_path)?;
        match lease.try_lock_exclusive() {
            Ok(true) => {}
            Ok(false) => {
                return Err(TaskStoreError::Locked {
                    dir: dir.to_path_buf(),
                });
            }
            Err(source) => {
                return Err(TaskStoreError::Io {
                    doing: "lock",
                    path: lease_path,
                    source,
                });
            }
        }
        let tasks_dir = dir.join(TASKS_DIR);
        let had_tasks = fs::symlink_metadata(&tasks_dir).is_ok();
        bind_scope(dir, &scope, had_tasks)?;
        ensure_private_dir(&tasks_dir)?;
        let mut store = TaskStore {
            dir: dir.to_path_buf(),
            tasks_dir,
            _lease: lease,
            recovered: Vec::new(),
            loaded: Vec::new(),
        };
        store.recover()?;
        Ok(store)
    }

    /// The directory this store owns.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Ids of tasks that were working when the store was opened and are now failed.
    pub fn recovered(&self) -> &[String] {
        &self.recovered
    }

    pub(crate) fn record_path(&self, id: &str) -> PathBuf {
        self.tasks_dir.join(format!("{id}.json"))
    }

    /// Reads and validates one record; `Ok(None)` when no task has this id.
    pub fn read(&self, id: &str) -> Result<Option<TaskRecord>, TaskStoreError> {
        if !is_task_id(id) {
            return Ok(None);
        }
        let path = self.record_path(id);
        if fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        let bytes = read_private(&path, MAX_RECORD_BYTES)?;
        TaskRecord::parse(&bytes, id)
            .map(Some)
            .map_err(|reason| TaskStoreError::Corrupt { path, reason })
    }

    /// Writes one record atomically. A record over the size limit is refused and the stored
    /// one is left as it was.
    pub fn write(&self, record: &TaskRecord) -> Result<(), TaskStoreError> {
        let id = &record.summary.id;
        let bytes = serde_json::to_vec(record).map_err(|err| TaskStoreError::Corrupt {
            path: self.record_path(id),
            reason: format!("it could not be serialized: {err}"),
        })?;
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(TaskStoreError::TooLarge {
                task_id: id.clone(),
                bytes: bytes.len(),
            });
        }
        #[cfg(feature = "test-knobs")]
        super::test_knobs::hold_record_write();
        write_atomic(&self.tasks_dir, &format!("{id}.json"), &bytes)
    }

    /// Removes a record (an expired one); a record already gone is not an error.
    pub fn remove(&self, id: &str) -> Result<(), TaskStoreError> {
        match fs::remove_file(self.record_path(id)) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                Err(TaskStoreError::Io {
                    doing: "remove expired record",
                    path: self.record_path(id),
                    source,
                })
            }
            _ => Ok(()),
        }
    }

    /// The summaries read when the store was opened (each record once), for the manager's
    /// index; empty after the first call.
    pub(crate) fn take_loaded(&mut self) -> Vec<TaskSummary> {
        std::mem::take(&mut self.loaded)
    }

    /// Every record's summary, validated, in no particular order: one pass that removes
    /// leftovers of interrupted writes and reports the first unreadable record. Only the head
    /// of each file is read unless it does not yield the summary.
    fn scan(&self) -> Result<Vec<TaskSummary>, TaskStoreError> {
        let io_err = |source| TaskStoreError::Io {
            doing: "list",
            path: self.tasks_dir.clone(),
            source,
        };
        let mut summaries = Vec::new();
        for entry in fs::read_dir(&self.tasks_dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(TEMP_PREFIX) {
                // An interrupted write: the record it was replacing is still intact.
                fs::remove_file(&path).map_err(|source| TaskStoreError::Io {
                    doing: "remove leftover temporary file",
                    path: path.clone(),
                    source,
                })?;
                continue;
            }
            let Some(id) = name.strip_suffix(".json").filter(|id| is_task_id(id)) else {
                return Err(TaskStoreError::Corrupt {
                    path,
                    reason: "it is not a task record file name (expected <32 hex digits>.json)"
                        .into(),
                });
            };
            summaries.push(read_summary(&path, id)?);
        }
        Ok(summaries)
    }

    /// Marks every task that was still working as failed (its outcome is unknown), in the
    /// summaries just scanned and on disk.
    fn recover(&mut self) -> Result<(), TaskStoreError> {
        let mut loaded = self.scan()?;
        for summary in &mut loaded {
            if summary.state == TaskState::Working {
                let failed =
                    TaskRecord::working(summary).into_failed(UNKNOWN_OUTCOME_MESSAGE, now());
                self.write(&failed)?;
                self.recovered.push(failed.summary.id.clone());
                *summary = failed.summary;
            }
        }
        self.loaded = loaded;
        Ok(())
    }
}

/// How much of a record start-up reads to find its summary; summaries are far smaller.
const SUMMARY_HEAD_BYTES: usize = 16 * 1024;

/// One record's summary from the head of its file, else from the whole record (which names
/// what is wrong when it is corrupt).
fn read_summary(path: &Path, id: &str) -> Result<TaskSummary, TaskStoreError> {
    let head = read_private_head(path, SUMMARY_HEAD_BYTES, MAX_RECORD_BYTES)?;
    if let Some(summary) = TaskSummary::from_record_head(&head, id) {
        return Ok(summary);
    }
    let bytes = read_private(path, MAX_RECORD_BYTES)?;
    TaskRecord::parse(&bytes, id)
        .map(|record| record.summary)
        .map_err(|reason| TaskStoreError::Corrupt {
            path: path.to_path_buf(),
            reason,
        })
}

/// Checks the directory's scope record against `scope`, writing one for a fresh directory.
fn bind_scope(dir: &Path, scope: &ScopeInputs<'_>, had_tasks: bool) -> Result<(), TaskStoreError> {
    let path = dir.join(SCOPE_FILE);
    if fs::symlink_metadata(&path).is_err() {
        if had_tasks {
            return Err(TaskStoreError::Corrupt {
                path,
                reason: "it is missing although the directory holds tasks".into(),
            });
        }
        let salt = ids::random_hex::<16>().map_err(|error| TaskStoreError::Io {
            doing: "make a random salt for",
            path: path.clone(),
            source: error.into(),
        })?;
        let record = ScopeRecord {
            version: SCOPE_VERSION,
            digest: scope_digest(&salt, scope),
            salt,
        };
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        return write_atomic(dir, SCOPE_FILE, &bytes);
    }
    check_private(&path, false)?;
    let bytes = read_private(&path, SCOPE_LIMIT)?;
    let corrupt = |reason: String| TaskStoreError::Corrupt {
        path: path.clone(),
        reason,
    };
    let record: ScopeRecord = serde_json::from_slice(&bytes)
        .map_err(|err| corrupt(format!("not a scope record: {err}")))?;
    if record.version != SCOPE_VERSION || record.salt.len() != 32 || record.digest.len() != 64 {
        return Err(corrupt(
            "unsupported version or malformed salt/digest".into(),
        ));
    }
    if scope_digest(&record.salt, scope) != record.digest {
        return Err(TaskStoreError::ScopeChanged {
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(token: Option<&str>) -> ScopeInputs<'_> {
        ScopeInputs {
            mode: "write",
            endpoint: "http://127.0.0.1:3000",
            token,
        }
    }

    #[test]
    fn digest_depends_on_salt_and_every_input() {
        let base = scope_digest("aa", &scope(Some("t")));
        assert_ne!(base, scope_digest("bb", &scope(Some("t"))));
        assert_ne!(base, scope_digest("aa", &scope(Some("u"))));
        assert_ne!(base, scope_digest("aa", &scope(None)));
        assert_ne!(
            scope_digest("aa", &scope(None)),
            scope_digest("aa", &scope(Some("")))
        );
        assert_eq!(base, scope_digest("aa", &scope(Some("t"))));
    }

    #[test]
    fn scope_file_never_holds_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tasks-home");
        let token = "very-secret-token-123";
        drop(TaskStore::open(&root, scope(Some(token))).unwrap());
        let text = fs::read_to_string(root.join(SCOPE_FILE)).unwrap();
        assert!(!text.contains(token));
        // An unsalted hash of the token must not appear either.
        assert!(!text.contains(&ids::hex(&Sha256::digest(token.as_bytes()))));
    }
}
