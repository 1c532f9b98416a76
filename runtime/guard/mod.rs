//! Write safety: send limits, confirmation and the audit log. Consulted by exec's pipeline
//! (never by the tools directly), so every way of running an action (query_action,
//! invoke_action, the *_with_input tools, typed tools, background tasks) passes the same
//! buckets, the same confirmation and the same log.

pub mod audit;
pub mod confirm;
pub mod limits;

use serde_json::{Map, Value};

use crate::catalog::ActionMeta;
use crate::config::{ConfirmSetting, GuardConfig};
use crate::outcome::{ErrorKind, Outcome, ToolReply};
use crate::trace::TraceContext;
use audit::{AuditEntry, AuditLog, AuditSlot, params_sha256};
use confirm::{ConfirmRequest, Verdict, needs_confirmation};
use limits::{SendLimits, send_target};

pub use confirm::{CannotAsk, Confirmer};

/// Who is calling and how to ask them: built by the server for each request.
pub struct Caller<'a> {
    /// Recorded in the audit log; see [`principal`].
    pub principal: String,
    /// The MCP tool the call came through.
    pub tool: &'a str,
    pub confirmer: &'a dyn Confirmer,
}

/// Internal calls have nobody to ask.
static SERVER_CANNOT_ASK: CannotAsk = CannotAsk("the server itself makes this call");

impl Caller<'static> {
    /// A call the server makes on its own (the connection check, message recovery): the
    /// principal is `server`, and nobody can be asked to confirm.
    pub fn internal(tool: &'static str) -> Caller<'static> {
        Caller {
            principal: "server".to_string(),
            tool,
            confirmer: &SERVER_CANNOT_ASK,
        }
    }
}

/// The principal the audit log records: over HTTP the principal the client's token names
/// (`default` for the single token), on stdio the session id.
pub fn principal(http_principal: Option<&str>, session_id: &str) -> String {
    http_principal.unwrap_or(session_id).to_string()
}

/// What the guards refuse with, or that the call waits for the user's answer.
pub enum Refusal {
    Reply(ToolReply),
    /// Confirmation went out as a protocol continuation; the caller's confirmer holds it.
    Deferred,
}

/// A write the guards let through; [`Guard::finish`] records its outcome.
pub struct Admitted {
    audit: Option<(AuditSlot, AuditEntry)>,
}

/// The guards of one process, shared by every session and task.
pub struct Guard {
    limits: SendLimits,
    confirm: ConfirmSetting,
    audit: Option<AuditLog>,
}

impl Guard {
    pub fn new(config: &GuardConfig) -> Guard {
        Guard {
            limits: SendLimits::new(config),
            confirm: config.confirm,
            audit: config
                .audit_log
                .clone()
                .map(|path| AuditLog::new(path, config.audit_max_bytes, config.audit_params)),
        }
    }

    /// The checks before a write runs, in order: the audit log can be written (else nothing
    /// runs unrecorded), the user confirms (when the setting asks), the send limits admit
    /// it. Read-only actions pass untouched. Every refusal is recorded.
    pub async fn admit(
        &self,
        caller: &Caller<'_>,
        action: &ActionMeta,
        params: &Map<String, Value>,
        trace: &TraceContext,
    ) -> Result<Admitted, Refusal> {
        if action.read_only {
            return Ok(Admitted { audit: None });
        }
        let target = send_target(params);
        // The line is built only when there is a log to write it to.
        let mut audit = match &self.audit {
            None => None,
            Some(log) => match log.open() {
                Ok(slot) => Some((
                    slot,
                    self.entry(caller, action, params, trace, target.clone()),
                )),
                Err(error) => {
                    tracing::error!(path = %log.path().display(), %error, "audit log cannot be written; call refused");
                    return Err(Refusal::Reply(ToolReply::error(
                        ErrorKind::AuditLog,
                        format!(
                            "the audit log (SNOWLUMA_MCP_AUDIT_LOG) cannot be opened for writing: {error}; `{}` was not run",
                            action.name
                        ),
                        "fix the file's directory, permissions or disk, or change SNOWLUMA_MCP_AUDIT_LOG, then call again",
                    )));
                }
            },
        };
        if needs_confirmation(self.confirm, action) {
            let request = ConfirmRequest::new(action, target.clone(), params);
            let refusal = match caller.confirmer.confirm(&request).await {
                Verdict::Approved => None,
                Verdict::Deferred => return Err(Refusal::Deferred),
                Verdict::Declined => Some(ToolReply::error(
                    ErrorKind::InputDeclined,
                    format!(
                        "the user declined to run `{}`; nothing was sent",
                        action.name
                    ),
                    "do not retry unless the user asks for it",
                )),
                Verdict::Cancelled => Some(ToolReply::error(
                    ErrorKind::InputCancelled,
                    format!(
                        "the confirmation of `{}` was cancelled or not answered; nothing was sent",
                        action.name
                    ),
                    "call again if the action is still wanted, and answer the confirmation",
                )),
                Verdict::Invalid(why) => Some(ToolReply::error(
                    ErrorKind::InputState,
                    format!(
                        "the confirmation of `{}` cannot be used: {why}; nothing was sent",
                        action.name
                    ),
                    "call again without requestState to be asked afresh",
                )),
                Verdict::Unavailable(why) => Some(ToolReply::error(
                    ErrorKind::ConfirmationUnavailable,
                    format!(
                        "SNOWLUMA_MCP_CONFIRM={} needs the user to confirm `{}`, but {why}; nothing was sent",
                        self.confirm.as_str(),
                        action.name
                    ),
                    "use an MCP client with form elicitation, or change SNOWLUMA_MCP_CONFIRM in the server's configuration",
                )),
            };
            if let Some(reply) = refusal {
                return Err(Refusal::Reply(self.refused(audit.take(), reply).await));
            }
        }
        if action.sends
            && let Err(limited) = self.limits.admit(target)
        {
            let retry_ms = limited.retry_after.as_millis() as u64;
            let reply = ToolReply::error(
                ErrorKind::RateLimited,
                format!(
                    "the {} send limit ({}) is reached{}; `{}` was not sent",
                    limited.bucket.as_str(),
                    limited.bucket.setting(),
                    limited
                        .target
                        .as_deref()
                        .filter(|_| limited.bucket == limits::Bucket::Target)
                        .map(|t| format!(" for {t}"))
                        .unwrap_or_default(),
                    action.name
                ),
                format!("wait {retry_ms} ms (retry_after_ms), then send again"),
            )
            .with_detail("retry_after_ms", Value::from(retry_ms))
            .with_detail("bucket", Value::from(limited.bucket.as_str()));
            return Err(Refusal::Reply(self.refused(audit.take(), reply).await));
        }
        Ok(Admitted { audit })
    }

    /// Records a refusal by the gate (mode, allow and deny lists) of a write.
    pub async fn gate_refused(
        &self,
        caller: &Caller<'_>,
        action: &ActionMeta,
        params: &Map<String, Value>,
        trace: &TraceContext,
        reply: ToolReply,
    ) -> ToolReply {
        if action.read_only || self.audit.is_none() {
            return reply;
        }
        // Nothing runs either way; a log that cannot be opened leaves the refusal as it is.
        let audit = self
            .audit
            .as_ref()
            .and_then(|log| log.open().ok())
            .map(|slot| {
                let entry = self.entry(caller, action, params, trace, send_target(params));
                (slot, entry)
            });
        self.refused(audit, reply).await
    }

    /// Records the outcome of an admitted write. The call has run by now, so a failing log
    /// cannot undo it: the reply then says so in `diagnostics.audit_error`.
    pub async fn finish(&self, admitted: Admitted, mut reply: ToolReply) -> ToolReply {
        let Some((slot, mut entry)) = admitted.audit else {
            return reply;
        };
        entry.outcome = reply.outcome().as_str().to_string();
        entry.kind = reply.diagnostics.kind.map(|k| k.as_str().to_string());
        entry.retcode = retcode(&reply);
        if let Err(error) = write(slot, entry).await {
            tracing::error!(%error, "audit log write failed after the call ran");
            reply = reply.with_detail(
                "audit_error",
                Value::from(format!(
                    "the call ran but its audit line could not be written: {error}"
                )),
            );
        }
        reply
    }

    /// Writes a refusal's line; a log that fails turns the refusal into `audit_log`.
    async fn refused(&self, audit: Option<(AuditSlot, AuditEntry)>, reply: ToolReply) -> ToolReply {
        let Some((slot, mut entry)) = audit else {
            return reply;
        };
        entry.outcome = "refused".to_string();
        entry.kind = reply.diagnostics.kind.map(|k| k.as_str().to_string());
        match write(slot, entry).await {
            Ok(()) => reply,
            Err(error) => ToolReply::error(
                ErrorKind::AuditLog,
                format!(
                    "the audit log (SNOWLUMA_MCP_AUDIT_LOG) cannot be written: {error}; nothing was run"
                ),
                "fix the file's directory, permissions or disk, or change SNOWLUMA_MCP_AUDIT_LOG, then call again",
            ),
        }
    }

    fn entry(
        &self,
        caller: &Caller<'_>,
        action: &ActionMeta,
        params: &Map<String, Value>,
        trace: &TraceContext,
        target: Option<String>,
    ) -> AuditEntry {
        AuditEntry {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            principal: caller.principal.clone(),
            tool: caller.tool.to_string(),
            action: action.name.to_string(),
            targets: target.into_iter().collect(),
            outcome: Outcome::Unknown.as_str().to_string(),
            kind: None,
            retcode: None,
            traceparent: trace.traceparent.clone(),
            params_sha256: params_sha256(params),
            params: self
                .audit
                .as_ref()
                .filter(|log| log.with_params)
                .map(|_| params.clone()),
        }
    }
}

/// SnowLuma's retcode, when the result is an envelope (read from the serialized copy when
/// there is one, without building the value tree).
fn retcode(reply: &ToolReply) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        retcode: Option<i64>,
    }
    match &reply.result_json {
        Some(json) => serde_json::from_str::<Envelope>(json.get())
            .ok()
            .and_then(|e| e.retcode),
        None => reply.result.get("retcode").and_then(Value::as_i64),
    }
}

async fn write(slot: AuditSlot, entry: AuditEntry) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || slot.append(&entry))
        .await
        .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())))
}
