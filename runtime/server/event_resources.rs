//! Event resources on the resource side of MCP: `resources/list` entries for the session's
//! resources and `resources/read` of `snowluma://onebot/events/<id>[?after=<cursor>]`.

use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents};
use serde_json::json;

use super::event_routes::SessionEvents;
use super::session::Session;
use crate::events::{EventsError, URI_PREFIX};

const JSON: &str = "application/json";

/// The session's held resources, for `resources/list`. Never connects.
pub fn list(events: &SessionEvents) -> Vec<Resource> {
    events
        .hub
        .list(&events.owner)
        .into_iter()
        .map(|summary| {
            let id = summary.uri.trim_start_matches(URI_PREFIX).to_string();
            let description = format!(
                "Live OneBot events of account {} ({} buffered); read with ?after=<next_cursor> for newer ones",
                summary.filter.self_id, summary.buffered_events
            );
            Resource::new(summary.uri, format!("onebot-events-{id}"))
                .with_title("Live OneBot events")
                .with_description(description)
                .with_mime_type(JSON)
        })
        .collect()
}

/// The session's events when `uri` is an event URI; other URIs are the catalog's business.
pub fn for_uri<'a>(session: &'a Session, uri: &str) -> Option<&'a SessionEvents> {
    uri.starts_with(URI_PREFIX)
        .then_some(session.events.as_ref())
        .flatten()
}

/// The session's events when it holds `uri`, else resource-not-found.
pub fn owned<'a>(session: &'a Session, uri: &str) -> Result<&'a SessionEvents, ErrorData> {
    match session.events.as_ref() {
        Some(events) if events.owns(uri) => Ok(events),
        _ => Err(protocol_error(
            &EventsError::UnknownResource {
                uri: uri.split('?').next().unwrap_or_default().to_string(),
            },
            uri,
        )),
    }
}

/// One page as JSON text; the events inside are SnowLuma's JSON, copied, not re-encoded.
pub fn read(events: &SessionEvents, uri: &str) -> Result<ResourceContents, ErrorData> {
    events.renew(uri).map_err(|e| protocol_error(&e, uri))?;
    let page = events
        .hub
        .read(&events.owner, uri)
        .map_err(|e| protocol_error(&e, uri))?;
    let text = serde_json::to_string(&page)
        .map_err(|e| ErrorData::internal_error(format!("encoding the page failed: {e}"), None))?;
    Ok(ResourceContents::text(text, uri).with_mime_type(JSON))
}

/// A JSON-RPC error for a failed resource operation: unknown resources are "not found" (each
/// generation's code applied by rmcp), a bad cursor is an invalid parameter.
pub fn protocol_error(error: &EventsError, uri: &str) -> ErrorData {
    let data = Some(
        json!({ "uri": uri.split('?').next().unwrap_or_default(), "kind": error.kind().as_str() }),
    );
    match error {
        EventsError::UnknownResource { .. }
        | EventsError::Released { .. }
        | EventsError::LeaseExpired { .. } => {
            ErrorData::resource_not_found(error.to_string(), data)
        }
        _ => ErrorData::invalid_params(error.to_string(), data),
    }
}
