//! What the task manager answers: a task's state, cancel and input requests, and the
//! newest-first listing with its opaque cursors. Another principal's task is answered
//! exactly like an unknown one.

use base64_simd::URL_SAFE_NO_PAD;

use super::expiry::expired;
use super::{CancelAck, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, TaskManager, TaskPage};
use crate::config::principals::DEFAULT_PRINCIPAL;
use crate::tasks::error::{TaskError, TaskStoreError};
use crate::tasks::record::{TaskRecord, TaskState, TaskSummary};

const CURSOR_PREFIX: &str = "tasks-v1:";

impl TaskManager {
    /// A known, unexpired task's summary (memory only, no file is read).
    pub fn summary(&self, id: &str) -> Option<TaskSummary> {
        let index = self.lock();
        index
            .summary(id)
            .filter(|summary| !expired(self.settings.retention, summary, chrono::Utc::now()))
            .cloned()
    }

    /// Whether `owner` may see task `id`. Another principal's task is reported exactly like
    /// a task that does not exist, so ids cannot be probed.
    fn visible_to(&self, id: &str, owner: &str) -> Result<(), TaskError> {
        match self.summary(id) {
            Some(summary) if !summary.owned_by(owner) => {
                Err(TaskError::UnknownTask { id: id.to_owned() })
            }
            _ => Ok(()),
        }
    }

    /// [`Self::get`] as `owner`.
    pub async fn get_as(&self, owner: &str, id: &str) -> Result<TaskRecord, TaskError> {
        self.visible_to(id, owner)?;
        self.get(id).await
    }

    /// [`Self::cancel`] as `owner`.
    pub fn cancel_as(&self, owner: &str, id: &str) -> Result<CancelAck, TaskError> {
        self.visible_to(id, owner)?;
        self.cancel(id)
    }

    /// [`Self::update`] as `owner`.
    pub fn update_as(&self, owner: &str, id: &str) -> Result<(), TaskError> {
        self.visible_to(id, owner)?;
        self.update(id)
    }

    /// The task's current state; finished tasks include their saved result or error, read on
    /// the blocking pool.
    pub async fn get(&self, id: &str) -> Result<TaskRecord, TaskError> {
        let summary = self
            .summary(id)
            .ok_or_else(|| TaskError::UnknownTask { id: id.to_owned() })?;
        if !summary.state.is_terminal() {
            return Ok(TaskRecord::working(&summary));
        }
        let owned = id.to_owned();
        match self.on_disk(move |store| store.read(&owned)).await? {
            Some(record) if record.summary.state.is_terminal() => Ok(record),
            // The final write failed: memory holds that failure, the disk an older state.
            Some(_) => Ok(TaskRecord::working(&summary).into_failed(
                summary
                    .status_message
                    .as_deref()
                    .unwrap_or("the final state was not saved"),
                summary.updated_at.clone(),
            )),
            // Removed by the expiry sweep since the summary was read.
            None if self.summary(id).is_none() => Err(TaskError::UnknownTask { id: id.to_owned() }),
            None => Err(TaskStoreError::Corrupt {
                path: self.store.record_path(id),
                reason: "the record of this finished task has disappeared from disk".into(),
            }
            .into()),
        }
    }

    /// Asks the work to stop. Cooperative: poll `get` for the final state, which is
    /// `cancelled` only if the work honoured the request.
    pub fn cancel(&self, id: &str) -> Result<CancelAck, TaskError> {
        let mut index = self.lock();
        if let Some(run) = index.running.get(id) {
            run.cancel.cancel();
            if let Some(summary) = index.summary_mut(id) {
                summary.status_message = Some("cancellation requested".into());
            }
            return Ok(CancelAck::Requested);
        }
        let now = chrono::Utc::now();
        match index
            .summary(id)
            .filter(|summary| !expired(self.settings.retention, summary, now))
        {
            // The work has returned and its outcome is being saved: the completion won the
            // race, which the caller learns by polling, as with any cancel.
            Some(summary) if summary.state == TaskState::Working => Ok(CancelAck::Requested),
            Some(summary) => Ok(CancelAck::AlreadyFinished(summary.state)),
            None => Err(TaskError::UnknownTask { id: id.to_owned() }),
        }
    }

    /// Answers input requests. Background transfers never ask for input, so a known task
    /// gets [`TaskError::NoInputRequested`] and an unknown one [`TaskError::UnknownTask`].
    pub fn update(&self, id: &str) -> Result<(), TaskError> {
        if self.summary(id).is_some() {
            Err(TaskError::NoInputRequested { id: id.to_owned() })
        } else {
            Err(TaskError::UnknownTask { id: id.to_owned() })
        }
    }

    /// Task metadata, newest first, `limit` (1..=100, default 50) at a time.
    pub fn list(&self, cursor: Option<&str>, limit: Option<u32>) -> Result<TaskPage, TaskError> {
        self.list_as(DEFAULT_PRINCIPAL, cursor, limit)
    }

    /// [`Self::list`] of `owner`'s tasks only.
    pub fn list_as(
        &self,
        owner: &str,
        cursor: Option<&str>,
        limit: Option<u32>,
    ) -> Result<TaskPage, TaskError> {
        let limit = limit.unwrap_or(DEFAULT_PAGE_LIMIT);
        if !(1..=MAX_PAGE_LIMIT).contains(&limit) {
            return Err(TaskError::BadLimit { limit });
        }
        let before = cursor.map(decode_cursor).transpose()?;
        let now = chrono::Utc::now();
        let index = self.lock();
        let mut newer_first = index
            .by_seq
            .range(..before.unwrap_or(u64::MAX))
            .rev()
            .map(|(_, summary)| summary)
            .filter(|summary| summary.owned_by(owner))
            .filter(|summary| !expired(self.settings.retention, summary, now));
        let tasks: Vec<TaskSummary> = newer_first.by_ref().take(limit as usize).cloned().collect();
        let next_cursor = match (newer_first.next(), tasks.last()) {
            (Some(_), Some(last)) => Some(encode_cursor(last.seq)),
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Tasks currently working.
    pub fn running_count(&self) -> usize {
        self.lock().running.len()
    }
}

fn encode_cursor(seq: u64) -> String {
    URL_SAFE_NO_PAD.encode_to_string(format!("{CURSOR_PREFIX}{seq}"))
}

fn decode_cursor(cursor: &str) -> Result<u64, TaskError> {
    URL_SAFE_NO_PAD
        .decode_to_vec(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix(CURSOR_PREFIX)?.parse().ok())
        .ok_or(TaskError::BadCursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(decode_cursor(&encode_cursor(41)).unwrap(), 41);
        assert!(matches!(decode_cursor("41"), Err(TaskError::BadCursor)));
        assert!(matches!(decode_cursor("!!"), Err(TaskError::BadCursor)));
        let wrong_prefix = URL_SAFE_NO_PAD.encode_to_string("other:3");
        assert!(matches!(
            decode_cursor(&wrong_prefix),
            Err(TaskError::BadCursor)
        ));
    }
}
