//! Recovery of missed group messages for the events module, through the one pipeline: each
//! get_group_msg_history call is resolved, gated (read-only, so read or write mode, and the
//! allow and deny lists apply), checked and classified like any query_action call.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{ActionArgs, Entry, Executor};
use crate::events::MessageHistory;
use crate::guard::Caller;
use crate::outcome::Outcome;
use crate::streams::Progress;
use crate::trace::TraceContext;

/// [`MessageHistory`] over an [`Executor`].
pub struct PipelineHistory(pub Arc<Executor>);

impl MessageHistory for PipelineHistory {
    fn group_history(
        &self,
        group_id: i64,
        count: u32,
    ) -> BoxFuture<'static, Result<Vec<Value>, String>> {
        let executor = self.0.clone();
        async move {
            let trace = TraceContext::start(None, None).map_err(|e| e.to_string())?;
            let call = ActionArgs {
                action: "get_group_msg_history".into(),
                params: Some(json!({ "group_id": group_id, "count": count })),
                execution: None,
            };
            // A read-only call: the guards let it through without asking or recording.
            let caller = Caller::internal("events_recovery");
            let reply = executor
                .run(
                    &caller,
                    Entry::Query,
                    call,
                    &trace,
                    &CancellationToken::new(),
                    &mut Progress::silent(),
                )
                .await;
            if reply.outcome() != Outcome::Success {
                let diagnostics = serde_json::to_value(&reply.diagnostics).unwrap_or_default();
                return Err(format!(
                    "get_group_msg_history did not succeed ({}: {})",
                    diagnostics["kind"].as_str().unwrap_or("unknown"),
                    diagnostics["message"].as_str().unwrap_or_default()
                ));
            }
            let mut reply = reply;
            match reply.take_result()["data"]["messages"].take() {
                Value::Array(messages) => Ok(messages),
                _ => Err("get_group_msg_history answered without data.messages".into()),
            }
        }
        .boxed()
    }
}
