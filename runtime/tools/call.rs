//! What a tool handler gets for one call and what it answers: the types the registry and
//! every tool module share, in a file that imports neither, so the two never import each
//! other. The protocol side of a call (the client's capabilities, its answers to prompts, a
//! way to ask it something) arrives as plain values and traits; `server/` fills them from
//! the MCP request and turns an [`Answer`] into the MCP result.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::services::Services;
use crate::events::{EventHub, EventNotifier, EventsError, Leases, OwnerId};
use crate::exec::ClientCapabilities;
use crate::input::InputForm;
use crate::outcome::ToolReply;
use crate::streams::Progress;
use crate::tasks::TaskHandle;
use crate::trace::TraceContext;

/// Everything a handler gets for one call.
pub struct Call<'a> {
    /// An `Arc` so work that outlives the call (a background task) can keep it.
    pub shared: &'a Arc<Services>,
    /// Who is calling, as the guards (send limits, audit log) record it: see
    /// `guard::principal`.
    pub principal: String,
    /// Who owns what this call leaves behind (paged results): the session for stdio and
    /// legacy HTTP sessions, the principal for stateless 2026-07-28 HTTP requests.
    pub owner: String,
    /// This connection's event resources, when events are configured.
    pub events: Option<ConnectionEvents<'a>>,
    pub args: Option<Map<String, Value>>,
    pub trace: &'a TraceContext,
    pub cancel: &'a CancellationToken,
    pub progress: Progress,
    /// The protocol side of the request, for tools that ask the user for input.
    pub input: InputRound<'a>,
    /// How a reply is kept for later (a background task's result): as the JSON of the result
    /// the protocol would have sent for it.
    pub stored_result: fn(ToolReply, &TraceContext) -> Value,
    /// Most characters of the result's text (`None`: unlimited); see `read_more`.
    pub budget: Option<usize>,
}

/// What the input completion tools need from the request beyond its arguments.
pub struct InputRound<'a> {
    /// The capabilities declared for this request (per request or at initialize).
    pub caps: ClientCapabilities,
    /// Whether this request speaks 2026-07-28 (MRTR) rather than a legacy session.
    pub modern: bool,
    /// A modern retry's echoed `requestState` and its `inputResponses`.
    pub request_state: Option<String>,
    pub input_responses: Option<BTreeMap<String, Value>>,
    /// The client, for a legacy session's prompt.
    pub client: &'a dyn Elicitor,
}

/// Asks the client a question on the same connection (legacy `elicitation/create`).
pub trait Elicitor: Send + Sync {
    /// The client's answer as its JSON (`{action, content?}`), or why there is none.
    fn elicit(
        &self,
        form: InputForm,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Value, ElicitError>>;
}

/// Why a prompt got no answer.
pub enum ElicitError {
    /// Nothing came back within the prompt's lifetime.
    Timeout,
    /// The client refused or the connection failed; the text says how.
    Failed(String),
}

/// One connection's share of the event hub, as the event tools see it.
pub struct ConnectionEvents<'a> {
    pub hub: &'a EventHub,
    pub owner: &'a OwnerId,
    pub routes: Arc<dyn EventRoutes>,
    /// The leases of a 2026-07-28 HTTP principal's resources (`None`: they live with their
    /// connection).
    pub leases: Option<&'a Leases>,
}

impl ConnectionEvents<'_> {
    /// A read of `uri`: renews its lease, or says that the lease ran out.
    pub fn renew(&self, uri: &str) -> Result<(), EventsError> {
        self.leases.map_or(Ok(()), |leases| leases.renew(uri))
    }
}

/// Where "resource changed" goes for one connection, and how a released resource stops
/// being routed there.
pub trait EventRoutes: EventNotifier {
    /// The resource was released by a tool: forget any legacy subscription to it.
    fn forget(&self, uri: &str);
}

/// What a handler answers.
pub enum Answer {
    /// A completed result.
    Reply(ToolReply),
    /// A 2026-07-28 request that needs the user (missing params, or a confirmation): the
    /// server answers `input_required` with this form under `key` and the signed state the
    /// client echoes back.
    InputRequired {
        key: &'static str,
        form: InputForm,
        state: String,
    },
    /// A background task started; the server answers with its handle.
    TaskStarted(TaskHandle),
}

pub type Handler = for<'a> fn(Call<'a>) -> BoxFuture<'a, Answer>;
