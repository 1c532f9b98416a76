//! Encoding outgoing messages for the stdio transport, serializing each tool result once.
//!
//! Every tool result this server renders ([`super::render::into_result`]) carries one text
//! block whose text IS the JSON of `structuredContent`. The generic encoding would walk the
//! `structuredContent` value tree a second time to produce bytes the text already holds, so a
//! tool-result response is written here with those bytes copied in place of the second walk;
//! results rendered for stdio (`StructuredCopy::FromText`) hold a placeholder instead of
//! the tree, and this is where their `structuredContent` is written.
//! Everything else, and any tool result that does not have that shape, takes the generic
//! path. The output is byte-for-byte what `serde_json::to_vec` of the message gives (tests
//! below compare the two).

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonRpcMessage, ServerResult};
use rmcp::service::TxJsonRpcMessage;

/// The message as one JSON line (with its newline).
pub fn message_line(item: &TxJsonRpcMessage<RoleServer>) -> serde_json::Result<Vec<u8>> {
    let mut bytes = match item {
        JsonRpcMessage::Response(response) => match &response.result {
            ServerResult::CallToolResult(result) => match text_of(result) {
                Some(text) => {
                    let mut bytes = Vec::with_capacity(text.len() * 2 + 256);
                    bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                    serde_json::to_writer(&mut bytes, &response.id)?;
                    bytes.extend_from_slice(br#","result":"#);
                    write_tool_result(&mut bytes, result, text)?;
                    bytes.push(b'}');
                    bytes
                }
                None => serde_json::to_vec(item)?,
            },
            _ => serde_json::to_vec(item)?,
        },
        _ => serde_json::to_vec(item)?,
    };
    bytes.push(b'\n');
    Ok(bytes)
}

/// The text that is the JSON of `structuredContent`, when the result has this server's shape:
/// exactly one plain text block and structured content.
fn text_of(result: &CallToolResult) -> Option<&str> {
    let structured = result.structured_content.as_ref()?;
    let [block] = result.content.as_slice() else {
        return None;
    };
    let text = block.as_text()?;
    if text.meta.is_some() || text.annotations.is_some() {
        return None;
    }
    // `render`'s placeholder stands for "written from the text" (StructuredCopy::FromText).
    // Otherwise debug builds (every test) prove the invariant this path relies on.
    debug_assert!(
        super::render::is_placeholder(structured)
            || serde_json::to_string(structured).ok().as_deref() == Some(text.text.as_str()),
        "a tool result's text must be the JSON of its structuredContent"
    );
    Some(&text.text)
}

/// `CallToolResult` in its serde field order, `structuredContent` written from `text`.
fn write_tool_result(
    bytes: &mut Vec<u8>,
    result: &CallToolResult,
    text: &str,
) -> serde_json::Result<()> {
    bytes.push(b'{');
    if let Some(result_type) = &result.result_type {
        bytes.extend_from_slice(br#""resultType":"#);
        serde_json::to_writer(&mut *bytes, result_type)?;
        bytes.push(b',');
    }
    bytes.extend_from_slice(br#""content":"#);
    serde_json::to_writer(&mut *bytes, &result.content)?;
    bytes.extend_from_slice(br#","structuredContent":"#);
    bytes.extend_from_slice(text.as_bytes());
    if let Some(is_error) = result.is_error {
        bytes.extend_from_slice(if is_error {
            br#","isError":true"#
        } else {
            br#","isError":false"#
        });
    }
    if let Some(meta) = &result.meta {
        bytes.extend_from_slice(br#","_meta":"#);
        serde_json::to_writer(&mut *bytes, meta)?;
    }
    bytes.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        ContentBlock, JsonRpcResponse, JsonRpcVersion2_0, MetaObject, NumberOrString, ResultType,
    };
    use serde_json::json;

    fn response(id: NumberOrString, result: CallToolResult) -> TxJsonRpcMessage<RoleServer> {
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id,
            result: ServerResult::CallToolResult(result),
        })
    }

    fn rendered(structured: serde_json::Value, error: bool) -> CallToolResult {
        let text = structured.to_string();
        let mut result = if error {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(structured);
        result
    }

    fn same_as_generic(item: &TxJsonRpcMessage<RoleServer>) {
        let mut generic = serde_json::to_vec(item).unwrap();
        generic.push(b'\n');
        assert_eq!(
            String::from_utf8(message_line(item).unwrap()).unwrap(),
            String::from_utf8(generic).unwrap()
        );
    }

    #[test]
    fn tool_results_encode_exactly_like_serde() {
        let structured = json!({
            "result": { "actions": [{ "name": "send_group_msg", "summary": "发送群消息 \"quoted\"\n" }], "count": 1 },
            "diagnostics": { "outcome": "success", "x": 1.5, "y": [null, true] }
        });
        let mut meta = MetaObject::new();
        meta.set_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        meta.insert(
            "io.modelcontextprotocol/serverInfo".into(),
            json!({ "name": "s" }),
        );
        for error in [false, true] {
            let plain = rendered(structured.clone(), error);
            same_as_generic(&response(NumberOrString::Number(7), plain.clone()));
            let with_meta = plain.clone().with_meta(Some(meta.clone()));
            same_as_generic(&response(NumberOrString::String("a\"b".into()), with_meta));
            let mut legacy = plain.clone();
            legacy.result_type = None;
            legacy.is_error = None;
            same_as_generic(&response(NumberOrString::Number(-1), legacy));
            let mut typed = plain;
            typed.result_type = Some(ResultType::COMPLETE);
            same_as_generic(&response(NumberOrString::Number(1), typed));
        }
    }

    /// A result rendered for stdio holds a placeholder: its structuredContent is the text.
    #[test]
    fn a_placeholder_is_written_from_the_text() {
        let structured =
            json!({ "result": { "n": [1, "二"] }, "diagnostics": { "outcome": "success" } });
        let mut placeholder = rendered(structured.clone(), false);
        placeholder.structured_content = Some(super::super::render::placeholder());
        let with_tree = rendered(structured, false);
        let line = message_line(&response(NumberOrString::Number(3), placeholder)).unwrap();
        let mut generic =
            serde_json::to_vec(&response(NumberOrString::Number(3), with_tree)).unwrap();
        generic.push(b'\n');
        assert_eq!(
            String::from_utf8(line).unwrap(),
            String::from_utf8(generic).unwrap()
        );
    }

    #[test]
    fn other_shapes_take_the_generic_path() {
        let mut two_blocks =
            CallToolResult::success(vec![ContentBlock::text("{}"), ContentBlock::text("{}")]);
        two_blocks.structured_content = Some(json!({}));
        same_as_generic(&response(NumberOrString::Number(1), two_blocks));
        let unstructured = CallToolResult::success(vec![ContentBlock::text("plain")]);
        same_as_generic(&response(NumberOrString::Number(2), unstructured));
    }
}
