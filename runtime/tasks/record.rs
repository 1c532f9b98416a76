//! The versioned JSON record kept per task, and the checks applied whenever one is read.

use crate::config::principals::DEFAULT_PRINCIPAL;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bumped whenever the record layout changes; a record of another version is refused rather
/// than half-read.
pub const RECORD_VERSION: u32 = 1;

/// JSON-RPC "internal error": the code carried by a failed task's error object.
pub const INTERNAL_ERROR_CODE: i64 = -32603;

/// Why a task that was working when the server stopped is now failed. It is never replayed.
pub const UNKNOWN_OUTCOME_MESSAGE: &str = "remote outcome unknown: snowluma-mcp stopped while \
     this task was running, so whether SnowLuma carried out the transfer is not known; the task \
     was not replayed. Check the remote side before starting it again";

/// Lifecycle state, spelled as the MCP tasks extension spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl TaskState {
    pub fn is_terminal(self) -> bool {
        self != TaskState::Working
    }
}

/// The last progress the work reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskProgressValue {
    pub value: f64,
    pub total: Option<f64>,
}

/// Everything about a task except its result or error body: what `list` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSummary {
    pub id: String,
    /// Position in creation order; `list` pages by it.
    pub seq: u64,
    pub action: String,
    /// RFC 3339, UTC, milliseconds.
    pub created_at: String,
    pub updated_at: String,
    pub state: TaskState,
    pub status_message: Option<String>,
    pub progress: Option<TaskProgressValue>,
    /// The principal that started the task; absent for `default` (and in records written
    /// before principals existed). Only its owner sees or cancels it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// One task as stored in `tasks/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRecord {
    pub version: u32,
    /// Metadata, nested rather than flattened so unknown fields are still refused.
    pub summary: TaskSummary,
    /// The final tool result (completed, and cancelled when the work left one). Absent when
    /// there is none, so a `null` result stays distinguishable from no result.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub result: Option<Value>,
    /// Whether `result` is a tool error (`isError: true`). A completed task may hold one.
    #[serde(default)]
    pub result_is_error: bool,
    /// A JSON-RPC error object `{code, message}` (failed only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub error: Option<Value>,
}

/// A field that is present is `Some`, even when it holds `null`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl TaskSummary {
    /// Reads just the summary from the start of a stored record, without parsing (or even
    /// reading) its result body: records are written with `version` first and `summary`
    /// second, so the summary is the first value after a fixed prefix. `None` when the head
    /// does not have that shape or the summary is cut off or invalid; the caller then parses
    /// the whole record, which also yields the precise error.
    pub fn from_record_head(head: &[u8], expected_id: &str) -> Option<TaskSummary> {
        let prefix = format!("{{\"version\":{RECORD_VERSION},\"summary\":");
        let rest = head.strip_prefix(prefix.as_bytes())?;
        let summary = serde_json::Deserializer::from_slice(rest)
            .into_iter::<TaskSummary>()
            .next()?
            .ok()?;
        summary.validate(expected_id).ok()?;
        Some(summary)
    }

    fn validate(&self, expected_id: &str) -> Result<(), String> {
        if self.id != expected_id {
            return Err(format!("it names task {:?}, not {expected_id:?}", self.id));
        }
        if self.action.is_empty() {
            return Err("its action is empty".into());
        }
        for (field, stamp) in [
            ("created_at", &self.created_at),
            ("updated_at", &self.updated_at),
        ] {
            if chrono::DateTime::parse_from_rfc3339(stamp).is_err() {
                return Err(format!("{field} {stamp:?} is not an RFC 3339 time"));
            }
        }
        Ok(())
    }

    /// Whether `principal` owns this task.
    pub fn owned_by(&self, principal: &str) -> bool {
        self.owner.as_deref().unwrap_or(DEFAULT_PRINCIPAL) == principal
    }

    /// When the task last changed, if its stamp reads (stored stamps were checked on load).
    pub fn updated(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        chrono::DateTime::parse_from_rfc3339(&self.updated_at)
            .ok()
            .map(|stamp| stamp.to_utc())
    }
}

impl TaskRecord {
    /// The record of a task that is still working: its summary and nothing else.
    pub fn working(summary: &TaskSummary) -> TaskRecord {
        TaskRecord {
            version: RECORD_VERSION,
            summary: summary.clone(),
            result: None,
            result_is_error: false,
            error: None,
        }
    }

    /// Parses and validates a stored record whose file name said `expected_id`. The error text
    /// says what is wrong; the caller adds the path.
    pub fn parse(bytes: &[u8], expected_id: &str) -> Result<TaskRecord, String> {
        let record: TaskRecord =
            serde_json::from_slice(bytes).map_err(|err| format!("not a task record: {err}"))?;
        record.validate(expected_id)?;
        Ok(record)
    }

    fn validate(&self, expected_id: &str) -> Result<(), String> {
        if self.version != RECORD_VERSION {
            return Err(format!(
                "record version {} is not the supported version {RECORD_VERSION}",
                self.version
            ));
        }
        let s = &self.summary;
        s.validate(expected_id)?;
        let (has_result, has_error) = (self.result.is_some(), self.error.is_some());
        let consistent = match s.state {
            TaskState::Working => !has_result && !has_error,
            TaskState::Completed => has_result && !has_error,
            TaskState::Failed => !has_result && has_error,
            TaskState::Cancelled => !has_error,
        };
        if !consistent {
            return Err(format!(
                "state {:?} does not match its fields (result present: {has_result}, error \
                 present: {has_error})",
                s.state
            ));
        }
        Ok(())
    }

    /// The failed form of this record, keeping its identity and progress.
    pub fn into_failed(mut self, message: &str, now: String) -> TaskRecord {
        self.summary.state = TaskState::Failed;
        self.summary.status_message = Some(message.to_owned());
        self.summary.updated_at = now;
        self.result = None;
        self.result_is_error = false;
        self.error = Some(serde_json::json!({ "code": INTERNAL_ERROR_CODE, "message": message }));
        self
    }
}

/// Task ids are 32 lower-case hex digits; anything else is never a file name we wrote.
pub fn is_task_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Now, as the records write it.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    fn working() -> TaskRecord {
        TaskRecord {
            version: RECORD_VERSION,
            summary: TaskSummary {
                id: ID.into(),
                seq: 1,
                action: "upload_file_stream".into(),
                created_at: now(),
                updated_at: now(),
                state: TaskState::Working,
                status_message: None,
                progress: Some(TaskProgressValue {
                    value: 1.0,
                    total: Some(4.0),
                }),
                owner: None,
            },
            result: None,
            result_is_error: false,
            error: None,
        }
    }

    #[test]
    fn a_record_round_trips() {
        let record = working();
        let bytes = serde_json::to_vec(&record).unwrap();
        assert_eq!(TaskRecord::parse(&bytes, ID).unwrap(), record);
    }

    #[test]
    fn wrong_version_id_state_or_fields_are_refused() {
        let mut other = working();
        other.version = 2;
        let err = TaskRecord::parse(&serde_json::to_vec(&other).unwrap(), ID).unwrap_err();
        assert!(err.contains("version 2"), "{err}");

        let bytes = serde_json::to_vec(&working()).unwrap();
        let err = TaskRecord::parse(&bytes, &"f".repeat(32)).unwrap_err();
        assert!(err.contains("names task"), "{err}");

        let mut done_without_result = working();
        done_without_result.summary.state = TaskState::Completed;
        let bytes = serde_json::to_vec(&done_without_result).unwrap();
        assert!(TaskRecord::parse(&bytes, ID).unwrap_err().contains("state"));

        let mut value = serde_json::to_value(working()).unwrap();
        value["summary"]["surprise"] = 1.into();
        let err = TaskRecord::parse(&serde_json::to_vec(&value).unwrap(), ID).unwrap_err();
        assert!(err.contains("surprise"), "{err}");
    }

    #[test]
    fn a_null_result_is_still_a_result() {
        let mut done = working();
        done.summary.state = TaskState::Completed;
        done.result = Some(Value::Null);
        let bytes = serde_json::to_vec(&done).unwrap();
        assert_eq!(
            TaskRecord::parse(&bytes, ID).unwrap().result,
            Some(Value::Null)
        );
    }

    #[test]
    fn into_failed_carries_a_json_rpc_error() {
        let failed = working().into_failed(UNKNOWN_OUTCOME_MESSAGE, now());
        assert_eq!(failed.summary.state, TaskState::Failed);
        assert_eq!(failed.error.as_ref().unwrap()["code"], INTERNAL_ERROR_CODE);
        let bytes = serde_json::to_vec(&failed).unwrap();
        assert!(TaskRecord::parse(&bytes, ID).is_ok());
    }

    #[test]
    fn the_summary_is_read_from_the_head_of_a_record_alone() {
        let mut done = working();
        done.summary.state = TaskState::Completed;
        done.result = Some(serde_json::json!({ "data": "x".repeat(100_000) }));
        let bytes = serde_json::to_vec(&done).unwrap();
        // The head is enough even though the result is cut off.
        let head = &bytes[..bytes.len().min(4096)];
        assert_eq!(
            TaskSummary::from_record_head(head, ID),
            Some(done.summary.clone())
        );
        assert!(TaskRecord::parse(head, ID).is_err());
        // Another shape, a cut-off summary or another id: not read from the head.
        assert_eq!(
            TaskSummary::from_record_head(b"{ \"version\": 1 }", ID),
            None
        );
        assert_eq!(TaskSummary::from_record_head(&bytes[..40], ID), None);
        assert_eq!(TaskSummary::from_record_head(head, &"f".repeat(32)), None);
    }

    #[test]
    fn ids_are_32_lower_hex_digits() {
        assert!(is_task_id(ID));
        assert!(!is_task_id("../etc/passwd"));
        assert!(!is_task_id(&ID.to_uppercase()));
        assert!(!is_task_id(&ID[1..]));
    }
}
