//! `SNOWLUMA_MCP_EVENTS_URL`: where SnowLuma's WebSocket adapter listens.

use std::fmt;

use url::Url;

use super::ConfigError;

/// A validated event socket address: `ws:` or `wss:` (TLS through the shared rustls
/// configuration), a host, no user info, query or fragment. The token never lives here; it travels in the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct EventsUrl(Url);

impl EventsUrl {
    /// Parses and checks the address. SnowLuma matches the upgrade path exactly, so the path is
    /// kept as given (its default adapter listens on `/`).
    pub fn parse(raw: &str) -> Result<EventsUrl, ConfigError> {
        let invalid = |problem: &str| ConfigError(format!("SNOWLUMA_MCP_EVENTS_URL {problem}"));
        let url = Url::parse(raw.trim()).map_err(|e| {
            invalid(&format!(
                "is not a URL ({e}); use e.g. ws://127.0.0.1:3001/ (SnowLuma's WebSocket adapter)"
            ))
        })?;
        if url.scheme() != "ws" && url.scheme() != "wss" {
            return Err(invalid(&format!(
                "must use ws: or wss:, not `{}:`; SnowLuma's WebSocket adapter listens on \
                 ws://<host>:3001/ by default",
                url.scheme()
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid("has no host, e.g. ws://127.0.0.1:3001/"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "must not embed credentials (user:password@); the access token comes from \
                 SNOWLUMA_MCP_TOKEN and is sent as a header",
            ));
        }
        if url.query().is_some() {
            return Err(invalid(
                "must not have a query (?...); in particular do not put access_token in it, the \
                 token comes from SNOWLUMA_MCP_TOKEN",
            ));
        }
        if url.fragment().is_some() {
            return Err(invalid("must not have a fragment (#...)"));
        }
        Ok(EventsUrl(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Whether the socket is opened over TLS (`wss:`).
    pub fn is_tls(&self) -> bool {
        self.0.scheme() == "wss"
    }
}

impl fmt::Debug for EventsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Credentials and queries are refused at parse time, so the address is safe to print.
        f.write_str(self.0.as_str())
    }
}

impl fmt::Display for EventsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(raw: &str) -> String {
        EventsUrl::parse(raw).unwrap_err().to_string()
    }

    #[test]
    fn accepts_ws_and_wss_with_a_host() {
        assert_eq!(
            EventsUrl::parse("ws://127.0.0.1:3001/").unwrap().as_str(),
            "ws://127.0.0.1:3001/"
        );
        let wss = EventsUrl::parse("wss://bot.example/events").unwrap();
        assert!(wss.is_tls());
        assert_eq!(wss.as_str(), "wss://bot.example/events");
    }

    #[test]
    fn refuses_other_schemes_credentials_queries_and_fragments() {
        assert!(problem("http://127.0.0.1:3001/").contains("ws: or wss:"));
        assert!(problem("ws://u:p@127.0.0.1:3001/").contains("credentials"));
        assert!(problem("ws://127.0.0.1:3001/?access_token=x").contains("query"));
        assert!(problem("ws://127.0.0.1:3001/#top").contains("fragment"));
        assert!(problem("not a url").contains("not a URL"));
        assert!(problem("ws://").contains("host"));
        for message in [
            problem("ws://u:secret@h/"),
            problem("ws://h/?access_token=secret"),
        ] {
            assert!(!message.contains("secret"), "{message}");
            assert!(message.contains("SNOWLUMA_MCP_EVENTS_URL"), "{message}");
        }
    }
}
