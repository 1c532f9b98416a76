//! What the Streamable HTTP transport tests share: a tools/list body and rmcp's own
//! Streamable HTTP client transport with the bearer token.
#![allow(dead_code)] // each includer uses a different part

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::http_server;

pub fn tools_list(id: i64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" })
}

pub fn rmcp_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    http_server::install_tls_provider();
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string())
            .auth_header(token.to_string()),
    )
}
