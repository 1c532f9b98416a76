//! Reading `tools/call` requests without rmcp's generic message decoding.
//!
//! rmcp decodes a client message by buffering it, classifying its shape, then trying each of
//! the ~18 client request types in turn (an untagged enum): a `tools/call` fails 13 attempts
//! first, each building a formatted serde error. Measured with callgrind, that was about a
//! third of the server's instructions per `query_action`. Tool calls are by far the most
//! frequent message, so they are recognised here in one pass and decoded straight into rmcp's
//! `CallToolRequest` (its own deserializer, so `_meta` and the params are read exactly as
//! rmcp reads them). Anything else, and anything unusual about a tool call (a stray `result`
//! or `error`, a repeated key, another method), returns `None` and takes the generic path, so
//! what is accepted and how errors read does not change. That includes values nobody reads:
//! the generic path buffers the whole message, so it refuses invalid UTF-8, a lone surrogate
//! escape or an out-of-range number anywhere in the line, and the fast path checks the same.

use std::fmt;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, ClientRequest, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::RxJsonRpcMessage;
use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

const TOOLS_CALL: &str = "tools/call";

/// The message when `line` is a well-formed `tools/call` request; `None` otherwise.
pub fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let parts: Parts<'_> = serde_json::from_slice(line).ok()?;
    if !parts.complete {
        return None;
    }
    let (jsonrpc, id, params) = (parts.jsonrpc?, parts.id?, parts.params?);
    // rmcp's own parse of the params below skips unknown keys without checking them.
    serde_json::from_str::<Checked>(params.get()).ok()?;
    // What rmcp's request decoder does, without its `#[serde(flatten)]` (which buffers the
    // params into an intermediate tree first): the params with their own derive, `_meta` moved
    // into the request's extensions, where rmcp keeps it and reads it from.
    let mut request = CallToolRequest::new(serde_json::from_str(params.get()).ok()?);
    if let Some(meta) = request.params.meta.take() {
        request.extensions.insert(meta);
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::CallToolRequest(request),
    }))
}

/// The top-level keys of a request, `params` kept as raw text.
#[derive(Default)]
struct Parts<'a> {
    jsonrpc: Option<JsonRpcVersion2_0>,
    id: Option<RequestId>,
    params: Option<&'a RawValue>,
    /// A `tools/call` method and nothing that makes the message something else.
    complete: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartsVisitor(std::marker::PhantomData))
    }
}

struct PartsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for PartsVisitor<'a> {
    type Value = Parts<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts<'a>, A::Error> {
        let mut parts = Parts::default();
        let mut method = false;
        let mut usable = true;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "jsonrpc" if parts.jsonrpc.is_none() => parts.jsonrpc = Some(map.next_value()?),
                "id" if parts.id.is_none() => parts.id = Some(map.next_value()?),
                "params" if parts.params.is_none() => parts.params = Some(map.next_value()?),
                "method" if !method => {
                    method = true;
                    let name = map.next_value::<std::borrow::Cow<'de, str>>()?;
                    usable &= name == TOOLS_CALL;
                }
                // A repeated key, or a key that makes this a response: the generic path
                // decides what it is.
                "jsonrpc" | "id" | "params" | "method" | "result" | "error" => {
                    usable = false;
                    map.next_value::<Checked>()?;
                }
                _ => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        parts.complete = usable && method;
        Ok(parts)
    }
}

/// Any JSON value, read as strictly as a value that is kept (valid UTF-8 and escapes, numbers
/// in range, the nesting limit) but not stored. `IgnoredAny` skips a value without those
/// checks, which would let the fast path accept a line the generic path refuses.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path must give exactly what rmcp's generic decoding gives.
    fn same_as_generic(line: &str) {
        let fast = tool_call(line.as_bytes()).expect("a tool call");
        let generic: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line).unwrap();
        assert_eq!(
            serde_json::to_value(&fast).unwrap(),
            serde_json::to_value(&generic).unwrap()
        );
        // What the handler sees: the params, and `_meta` where rmcp looks for it.
        let parts = |message: RxJsonRpcMessage<RoleServer>| match message {
            JsonRpcMessage::Request(JsonRpcRequest {
                request: ClientRequest::CallToolRequest(request),
                ..
            }) => (
                request.params.clone(),
                request
                    .extensions
                    .get::<rmcp::model::RequestMetaObject>()
                    .cloned(),
            ),
            other => panic!("not a tool call: {other:?}"),
        };
        assert_eq!(parts(fast), parts(generic));
    }

    #[test]
    fn tool_calls_decode_like_rmcp() {
        same_as_generic(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_actions","arguments":{}}}"#,
        );
        same_as_generic(
            r#"{"params":{"name":"query_action","arguments":{"action":"get_login_info","params":{"x":"群"}},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","progressToken":7}},"method":"tools/call","id":"a\"b","jsonrpc":"2.0"}"#,
        );
        same_as_generic(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}},"extra":[1,2]}"#,
        );
    }

    #[test]
    fn anything_else_takes_the_generic_path() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"[1,2]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}"#,
        ] {
            assert!(tool_call(line.as_bytes()).is_none(), "{line}");
        }
    }

    /// Found by the `jsonrpc_line` fuzz target: values in keys nobody reads were skipped
    /// unchecked, so a line rmcp's decoder refuses (answered with -32700) ran as a tool call.
    #[test]
    fn a_line_the_generic_path_refuses_is_not_a_tool_call() {
        let call = |extra: &[u8], params_extra: &[u8]| {
            let mut line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","x":"#.to_vec();
            line.extend_from_slice(extra);
            line.extend_from_slice(br#","params":{"name":"n","y":"#);
            line.extend_from_slice(params_extra);
            line.extend_from_slice(b"}}");
            line
        };
        for line in [
            call(b"\"\xff\xfe\"", b"1"),
            call(br#""\ud800""#, b"1"),
            call(b"1e400", b"1"),
            call(b"1", br#""\udc00 ""#),
            call(b"1", b"[-1e999]"),
        ] {
            let shown = String::from_utf8_lossy(&line);
            assert!(
                serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&line).is_err(),
                "{shown}"
            );
            assert!(tool_call(&line).is_none(), "{shown}");
        }
        // The same line with ordinary values is a tool call.
        assert!(tool_call(&call(b"\"\\u00e9\"", b"[1.5]")).is_some());
    }
}
