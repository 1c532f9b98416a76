//! The MCP side of progress: a [`ProgressSink`] that sends `notifications/progress` with the
//! caller's token. Throttling and ordering are the stream's business (`streams::Progress`).

use futures::future::BoxFuture;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

use crate::streams::{Progress, ProgressSink};

struct McpProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

impl ProgressSink for McpProgress {
    fn deliver(&self, value: f64, total: Option<f64>) -> BoxFuture<'_, Result<(), String>> {
        let mut param = ProgressNotificationParam::new(self.token.clone(), value);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        Box::pin(async move {
            self.peer
                .notify_progress(param)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// Progress for one call: notifications when the caller sent a token, nothing otherwise.
pub fn for_request(peer: &Peer<RoleServer>, token: Option<ProgressToken>) -> Progress {
    Progress::new(token.map(|token| {
        Box::new(McpProgress {
            peer: peer.clone(),
            token,
        }) as Box<dyn ProgressSink>
    }))
}
