//! The one result shape every tool returns: `structuredContent {result, diagnostics}` plus the
//! same JSON as text, and `_meta.traceparent` naming the call.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde::Serialize;
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
}

impl Reply {
    pub fn ok(result: Value) -> Self {
        Reply {
            result,
            diagnostics: Box::new(Diagnostics::success()),
            is_error: false,
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
        let structured = json!({ "result": self.result, "diagnostics": self.diagnostics });
        let text = serde_json::to_string(&structured).unwrap_or_default();
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
