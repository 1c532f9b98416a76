//! Turning a [`ToolReply`] into the MCP result every tool returns: `structuredContent
//! {result, diagnostics}` plus the same JSON as text, and `_meta.traceparent` naming the call.
//! (The output schemas that describe that shape are `tools::schemas`.)

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};

use crate::outcome::{ToolReply, reply_text};
use crate::trace::TraceContext;

/// How `structuredContent` reaches the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuredCopy {
    /// The stdio transport writes it from the text block (`super::encode`): the result holds
    /// an empty object as a placeholder ([`placeholder`]) and no value tree is built.
    FromText,
    /// Whoever sends or stores the result serializes it generically (rmcp's HTTP transport,
    /// task records), so it holds the value.
    Value,
}

/// What a result rendered with [`StructuredCopy::FromText`] holds as `structuredContent`: an
/// empty object (no allocation), which no rendered result has (they all have `result` and
/// `diagnostics`). An object, because rmcp moves any other value into a text block for legacy
/// clients before the transport sees the result.
pub fn placeholder() -> Value {
    Value::Object(Map::new())
}

/// Whether `structured` is the [`placeholder`].
pub fn is_placeholder(structured: &Value) -> bool {
    structured.as_object().is_some_and(Map::is_empty)
}

/// The final result; `meta` carries anything else the result's `_meta` needs (server info
/// for modern clients).
///
/// The text is written straight from the reply (a result serialized ahead of time is copied
/// in). With [`StructuredCopy::FromText`] that text is the only serialization of the reply;
/// otherwise the value tree is built (or moved in) as well.
pub fn into_result(
    mut reply: ToolReply,
    trace: &TraceContext,
    mut meta: MetaObject,
    copy: StructuredCopy,
) -> CallToolResult {
    if let Some(warning) = trace.warning {
        reply
            .diagnostics
            .extra
            .insert("trace".into(), json!(warning));
    }
    let text = reply_text(&reply);
    let summary = reply.diagnostics.summary.take();
    // The stdio encoder writes structuredContent from a lone text block; a page has two.
    let copy = if summary.is_some() {
        StructuredCopy::Value
    } else {
        copy
    };
    let structured = match copy {
        StructuredCopy::FromText => placeholder(),
        StructuredCopy::Value => {
            // Moved in, not `json!`: the macro would copy the whole result through `to_value`.
            let mut structured = Map::with_capacity(2);
            structured.insert("result".into(), reply.take_result());
            structured.insert(
                "diagnostics".into(),
                serde_json::to_value(&reply.diagnostics).unwrap_or(Value::Null),
            );
            Value::Object(structured)
        }
    };
    // A page's summary line is a block of its own, so the JSON block stays parsable.
    let content = match summary {
        Some(line) => vec![ContentBlock::text(line), ContentBlock::text(text)],
        None => vec![ContentBlock::text(text)],
    };
    let mut result = if reply.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(structured);
    meta.set_traceparent(trace.traceparent.clone());
    if let Some(state) = &trace.tracestate {
        meta.set_tracestate(state.clone());
    }
    result.with_meta(Some(meta))
}

/// A reply as the JSON of the result it renders to, for keeping (a background task's
/// result, which `tasks/get` returns later exactly as the call would have answered).
pub fn stored_result(reply: ToolReply, trace: &TraceContext) -> Value {
    let result = into_result(reply, trace, MetaObject::new(), StructuredCopy::Value);
    serde_json::to_value(&result).unwrap_or_else(
        |err| json!({ "isError": true, "content": [{ "type": "text", "text": err.to_string() }] }),
    )
}
