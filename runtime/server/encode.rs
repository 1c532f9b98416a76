//! Encoding outgoing messages for the stdio transport, serializing each tool result once.
//!
//! Every tool result this server renders ([`super::render::into_result`]) carries one text
//! block whose text IS the JSON of `structuredContent`. The generic encoding would walk the
//! `structuredContent` value tree a second time to produce bytes the text already holds, so a
//! tool-result response is written here with those bytes copied in place of the second walk;
//! results rendered for stdio (`StructuredCopy::FromText`) hold a placeholder instead of
//! the tree, and this is where their `structuredContent` is written.
//!
//! `tools/list` over stdio is the other such case: its definitions hold placeholders for the
//! schemas that the committed tool schemas (`tool_schemas`) commits as text (`tool_schemas::Schemas::placeholder`),
//! and the list is written here with that text in their place, so no schema tree is built.
//!
//! Everything else, and any tool result that does not have that shape, takes the generic
//! path. The output is byte-for-byte what `serde_json::to_vec` of the message gives (tests
//! below compare the two, with the trees the placeholders stand for).

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonRpcMessage, ListToolsResult, ServerResult, Tool};
use rmcp::service::TxJsonRpcMessage;
use serde_json::{Map, Value};

use super::tool_schemas;

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
            ServerResult::ListToolsResult(list)
                if list.tools.iter().any(tool_schemas::holds_placeholder) =>
            {
                let mut bytes = Vec::with_capacity(64 * 1024);
                bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                serde_json::to_writer(&mut bytes, &response.id)?;
                bytes.extend_from_slice(br#","result":"#);
                write_tool_list(&mut bytes, list)?;
                bytes.push(b'}');
                bytes
            }
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

/// A `tools/list` result with each placeholder written as its committed text. Everything
/// else goes through serde as a (small) value tree whose maps keep serde's field order, so
/// the fields come out where rmcp's own serialization puts them.
fn write_tool_list(bytes: &mut Vec<u8>, list: &ListToolsResult) -> serde_json::Result<()> {
    let Value::Object(fields) = serde_json::to_value(list)? else {
        return Err(serde::ser::Error::custom(
            "a tools/list result is an object",
        ));
    };
    write_object(bytes, &fields, |bytes, key, value| match (key, value) {
        ("tools", Value::Array(trees)) => {
            bytes.push(b'[');
            for (i, (tree, tool)) in trees.iter().zip(&list.tools).enumerate() {
                if i > 0 {
                    bytes.push(b',');
                }
                write_tool(bytes, tree, tool)?;
            }
            bytes.push(b']');
            Ok(true)
        }
        _ => Ok(false),
    })
}

/// One definition, its schemas taken from the committed text when it holds placeholders.
fn write_tool(bytes: &mut Vec<u8>, tree: &Value, tool: &Tool) -> serde_json::Result<()> {
    let (Value::Object(fields), true) = (tree, tool_schemas::holds_placeholder(tool)) else {
        return serde_json::to_writer(bytes, tree);
    };
    // Placeholders are only put where this text exists (`ToolSpec::definition`).
    let text = tool_schemas::committed_text(&tool.name).ok_or_else(|| {
        serde::ser::Error::custom(format!("{} has no committed schemas", tool.name))
    })?;
    write_object(bytes, fields, |bytes, key, _| {
        let raw = match key {
            "inputSchema" => text.input,
            "outputSchema" => text.output,
            _ => return Ok(false),
        };
        bytes.extend_from_slice(raw.as_bytes());
        Ok(true)
    })
}

/// Writes `fields` as an object; `special` writes a field's value itself (answering true) or
/// leaves it to serde (false).
fn write_object(
    bytes: &mut Vec<u8>,
    fields: &Map<String, Value>,
    mut special: impl FnMut(&mut Vec<u8>, &str, &Value) -> serde_json::Result<bool>,
) -> serde_json::Result<()> {
    bytes.push(b'{');
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        serde_json::to_writer(&mut *bytes, key)?;
        bytes.push(b':');
        if !special(bytes, key, value)? {
            serde_json::to_writer(&mut *bytes, value)?;
        }
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

    /// A stdio tools/list (placeholders) is written byte for byte as serde writes the list
    /// with the trees, in every mode and capability set, with the modern result fields and
    /// `_meta`, after rmcp's legacy output-schema filter, and with a tree-carrying definition
    /// (as a typed action tool is) among the placeholders.
    #[test]
    fn a_tool_list_with_placeholders_is_written_like_the_trees() {
        use super::super::tool_list::{SchemaCopy, registry_tool};
        use crate::config::Mode;
        use crate::exec::ClientCapabilities;
        use crate::tools::registry::TOOLS;
        use rmcp::model::CacheScope;

        let list = |mode, caps: &ClientCapabilities, copy| -> Vec<Tool> {
            TOOLS
                .iter()
                .map(|t| registry_tool(t, mode, caps, copy))
                .collect()
        };
        let mut meta = MetaObject::new();
        meta.insert(
            "io.modelcontextprotocol/serverInfo".into(),
            json!({ "name": "s" }),
        );
        for mode in [Mode::Docs, Mode::Read, Mode::Write] {
            for bits in 0..8 {
                let caps = ClientCapabilities {
                    form_elicitation: bits & 1 != 0,
                    apps_ui: bits & 2 != 0,
                    tasks: bits & 4 != 0,
                };
                let trees = list(mode, &caps, SchemaCopy::Tree);
                let mut copies = list(mode, &caps, SchemaCopy::Committed);
                assert!(copies.iter().all(tool_schemas::holds_placeholder));
                copies[1] = trees[1].clone();
                for modern in [false, true] {
                    let wrap = |tools: Vec<Tool>| {
                        let mut result = ListToolsResult::with_all_items(tools);
                        if modern {
                            result.meta = Some(meta.clone());
                            result = result
                                .with_ttl_ms(300_000)
                                .with_cache_scope(CacheScope::Private);
                        }
                        let mut result = ServerResult::ListToolsResult(result);
                        if !modern {
                            result.strip_non_object_output_for_legacy_peer();
                        }
                        JsonRpcMessage::Response(JsonRpcResponse {
                            jsonrpc: JsonRpcVersion2_0,
                            id: NumberOrString::Number(5),
                            result,
                        })
                    };
                    let mut generic = serde_json::to_vec(&wrap(trees.clone())).unwrap();
                    generic.push(b'\n');
                    let line = message_line(&wrap(copies.clone())).unwrap();
                    assert_eq!(
                        String::from_utf8(line).unwrap(),
                        String::from_utf8(generic).unwrap(),
                        "{mode:?} {bits} modern={modern}"
                    );
                }
            }
        }
    }

    /// Every field rmcp's `CallToolResult` serializes, read from its own `Serialize` impl:
    /// serde's derive reports each field to the serializer, written or skipped, in order.
    fn call_tool_result_fields() -> Vec<&'static str> {
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = None;
        result.is_error = None;
        result.result_type = None;
        serde::Serialize::serialize(&result, field_names::Recorder).expect("a struct")
    }

    /// The fast path writes every field rmcp defines, in rmcp's order: when rmcp adds a field
    /// to `CallToolResult`, this fails until `write_tool_result` writes it too.
    #[test]
    fn the_fast_path_writes_every_field_rmcp_serializes() {
        let reflected = call_tool_result_fields();
        assert!(reflected.contains(&"content"), "{reflected:?}");
        let mut full = rendered(json!({ "n": 1 }), true);
        full.result_type = Some(ResultType::COMPLETE);
        full.meta = Some(MetaObject::new());
        let line = message_line(&response(NumberOrString::Number(1), full)).unwrap();
        let written: Value = serde_json::from_slice(&line).unwrap();
        let written: Vec<&str> = written["result"]
            .as_object()
            .expect("a result object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            written, reflected,
            "the stdio fast path (write_tool_result) and rmcp's CallToolResult differ"
        );
    }

    /// A serializer that only records a struct's field names, the skipped ones included.
    mod field_names {
        use serde::ser::{self, Impossible, Serialize, SerializeStruct};

        #[derive(Debug)]
        pub struct NotAStruct(String);

        impl std::fmt::Display for NotAStruct {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::error::Error for NotAStruct {}

        impl ser::Error for NotAStruct {
            fn custom<T: std::fmt::Display>(message: T) -> Self {
                NotAStruct(message.to_string())
            }
        }

        pub struct Recorder;

        pub struct Fields(Vec<&'static str>);

        impl SerializeStruct for Fields {
            type Ok = Vec<&'static str>;
            type Error = NotAStruct;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                _: &T,
            ) -> Result<(), NotAStruct> {
                self.0.push(key);
                Ok(())
            }

            fn skip_field(&mut self, key: &'static str) -> Result<(), NotAStruct> {
                self.0.push(key);
                Ok(())
            }

            fn end(self) -> Result<Vec<&'static str>, NotAStruct> {
                Ok(self.0)
            }
        }

        /// Every serializer method but `serialize_struct` refuses.
        macro_rules! refuse {
            ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {
                $(fn $method(self, $(_: $arg),*) -> Result<$ok, NotAStruct> {
                    Err(ser::Error::custom(stringify!($method)))
                })*
            };
        }

        type Refused = Impossible<Vec<&'static str>, NotAStruct>;

        impl ser::Serializer for Recorder {
            type Ok = Vec<&'static str>;
            type Error = NotAStruct;
            type SerializeSeq = Refused;
            type SerializeTuple = Refused;
            type SerializeTupleStruct = Refused;
            type SerializeTupleVariant = Refused;
            type SerializeMap = Refused;
            type SerializeStruct = Fields;
            type SerializeStructVariant = Refused;

            fn serialize_struct(self, _: &'static str, len: usize) -> Result<Fields, NotAStruct> {
                Ok(Fields(Vec::with_capacity(len)))
            }

            fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Self::Ok, NotAStruct> {
                Err(ser::Error::custom("serialize_some"))
            }

            fn serialize_newtype_struct<T: Serialize + ?Sized>(
                self,
                _: &'static str,
                _: &T,
            ) -> Result<Self::Ok, NotAStruct> {
                Err(ser::Error::custom("serialize_newtype_struct"))
            }

            fn serialize_newtype_variant<T: Serialize + ?Sized>(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: &T,
            ) -> Result<Self::Ok, NotAStruct> {
                Err(ser::Error::custom("serialize_newtype_variant"))
            }

            refuse! {
                serialize_bool(bool) -> Self::Ok;
                serialize_i8(i8) -> Self::Ok;
                serialize_i16(i16) -> Self::Ok;
                serialize_i32(i32) -> Self::Ok;
                serialize_i64(i64) -> Self::Ok;
                serialize_u8(u8) -> Self::Ok;
                serialize_u16(u16) -> Self::Ok;
                serialize_u32(u32) -> Self::Ok;
                serialize_u64(u64) -> Self::Ok;
                serialize_f32(f32) -> Self::Ok;
                serialize_f64(f64) -> Self::Ok;
                serialize_char(char) -> Self::Ok;
                serialize_str(&str) -> Self::Ok;
                serialize_bytes(&[u8]) -> Self::Ok;
                serialize_none() -> Self::Ok;
                serialize_unit() -> Self::Ok;
                serialize_unit_struct(&'static str) -> Self::Ok;
                serialize_unit_variant(&'static str, u32, &'static str) -> Self::Ok;
                serialize_seq(Option<usize>) -> Refused;
                serialize_tuple(usize) -> Refused;
                serialize_tuple_struct(&'static str, usize) -> Refused;
                serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Refused;
                serialize_map(Option<usize>) -> Refused;
                serialize_struct_variant(&'static str, u32, &'static str, usize) -> Refused;
            }
        }
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
