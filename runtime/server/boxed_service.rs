//! [`BoxedRequests`]: the stdio session's rmcp `Service`, the server with each request's
//! future boxed once.
//!
//! rmcp's `Service` impl for a `ServerHandler` answers every request kind from one async
//! function, and that future is about 4 KiB (the request and its context are held twice, plus
//! the largest arm: establishing a subscription). The serve loop moves it several times before
//! it first runs: into two task-local scopes, into the instrumented block it spawns, into the
//! task cell, and tokio writes the finished stage over it afterwards. Each move is a memcpy of
//! the whole future; boxed here, those moves copy a pointer. Measured under callgrind on
//! `get_runtime_info`: memcpy went from about 12k to 10k of a call's instructions, 2% of the
//! call (what is left is mostly rmcp's loop moving its 480-byte messages). The answers are
//! the handler's own; only where the future lives changes.

use std::borrow::Cow;
use std::future::Future;

use rmcp::model::{ClientNotification, ClientRequest, ProtocolVersion, ServerConfig, ServerResult};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, Service};
use rmcp::{ErrorData, RoleServer};

use super::SnowlumaServer;

/// The server as the stdio serve loop runs it (the HTTP transport takes the `ServerHandler`
/// itself, because rmcp's session manager asks for one).
pub struct BoxedRequests(SnowlumaServer);

impl SnowlumaServer {
    /// This server as an rmcp `Service` whose request futures are boxed (see the module).
    pub fn boxed_requests(self) -> BoxedRequests {
        BoxedRequests(self)
    }
}

impl Service<RoleServer> for BoxedRequests {
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + MaybeSendFuture + '_ {
        Box::pin(Service::handle_request(&self.0, request, context))
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        Box::pin(Service::handle_notification(&self.0, notification, context))
    }

    fn get_info(&self) -> ServerConfig {
        Service::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::supported_protocol_versions(&self.0)
    }
}
