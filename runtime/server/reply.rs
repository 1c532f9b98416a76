//! The one result shape every tool returns: `structuredContent {result, diagnostics}` plus the
//! same JSON as text, and `_meta.traceparent` naming the call.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde::Serialize;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::trace::TraceContext;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Failed,
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnostics {
    pub outcome: Outcome,
    /// A known failure category, e.g. `invalid_arguments`, `unknown_action`, `mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// Tool-specific details (ignored search terms, trace warnings …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Diagnostics {
    pub fn success() -> Self {
        Diagnostics {
            outcome: Outcome::Success,
            kind: None,
            message: None,
            next_step: None,
            extra: Map::new(),
        }
    }
}

/// What a tool handler produces, before it becomes a `CallToolResult`.
#[derive(Debug, Clone)]
pub struct Reply {
    pub result: Value,
    /// Boxed to keep `Result<_, Reply>` small.
    pub diagnostics: Box<Diagnostics>,
    /// Tool misuse and transport errors; a OneBot business failure is not an error.
    pub is_error: bool,
    /// `result` already serialized, for static answers, so the text block is assembled
    /// instead of serialized again.
    pub result_text: Option<Arc<str>>,
}

impl Reply {
    pub fn ok(result: Value) -> Self {
        Reply {
            result,
            diagnostics: Box::new(Diagnostics::success()),
            is_error: false,
            result_text: None,
        }
    }

    /// A successful answer whose serialized form is known.
    pub fn ok_serialized(result: Value, text: Arc<str>) -> Self {
        Reply {
            result_text: Some(text),
            ..Reply::ok(result)
        }
    }

    /// A tool error: `result` is null and the diagnostics say what went wrong and what to do.
    pub fn error(
        kind: &'static str,
        message: impl Into<String>,
        next_step: impl Into<String>,
    ) -> Self {
        Reply {
            result: Value::Null,
            diagnostics: Box::new(Diagnostics {
                outcome: Outcome::Failed,
                kind: Some(kind),
                message: Some(message.into()),
                next_step: Some(next_step.into()),
                extra: Map::new(),
            }),
            is_error: true,
            result_text: None,
        }
    }

    /// The final result; `meta` carries anything else the result's `_meta` needs (server
    /// info for modern clients).
    pub fn into_result(mut self, trace: &TraceContext, mut meta: MetaObject) -> CallToolResult {
        if let Some(warning) = trace.warning {
            self.diagnostics
                .extra
                .insert("trace".into(), json!(warning));
        }
        let diagnostics = serde_json::to_string(&self.diagnostics).unwrap_or_default();
        let text = match &self.result_text {
            Some(result) => format!("{{\"result\":{result},\"diagnostics\":{diagnostics}}}"),
            None => {
                let result = serde_json::to_string(&self.result).unwrap_or_default();
                format!("{{\"result\":{result},\"diagnostics\":{diagnostics}}}")
            }
        };
        let structured = json!({ "result": self.result, "diagnostics": self.diagnostics });
        let mut result = if self.is_error {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(structured);
        meta.set_traceparent(trace.traceparent.clone());
        if let Some(state) = &trace.tracestate {
            meta.set_tracestate(state.clone());
        }
        result.with_meta(Some(meta))
    }
}

/// The JSON Schema of diagnostics, shared by every tool's outputSchema.
pub fn diagnostics_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "outcome": { "enum": ["success", "failed", "unknown"] },
            "kind": { "type": "string", "description": "known failure category" },
            "message": { "type": "string" },
            "next_step": { "type": "string", "description": "what to do about the failure" }
        },
        "required": ["outcome"],
        "additionalProperties": true
    })
}

/// `{result, diagnostics}` where result follows `result_schema`, or is null for a tool error.
pub fn output_schema(result_schema: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "result": { "anyOf": [result_schema, { "type": "null" }] },
            "diagnostics": diagnostics_schema()
        },
        "required": ["result", "diagnostics"]
    })
}
