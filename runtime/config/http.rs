//! Settings of the opt-in Streamable HTTP transport: where to listen, which path, the public
//! origin behind a TLS-terminating proxy, the bearer token clients must present, and the
//! session and request bounds. stdio stays the default; none of this applies to it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::ConfigError;
use super::principals::{Credentials, TOKENS_FILE_SETTING};
use super::secret::{SecretSource, read_secret, refuse_shared_file};

/// How MCP clients reach this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout (the client spawns the server).
    Stdio,
    /// Streamable HTTP on `--listen` + `--path` (remote clients).
    Http,
}

/// The most sessions one process serves (and the default).
pub const MAX_SESSIONS: usize = 32;

#[derive(Args, Debug)]
pub struct HttpFlags {
    /// stdio | http: how MCP clients reach this server
    #[arg(
        long,
        env = "SNOWLUMA_MCP_TRANSPORT",
        value_enum,
        default_value = "stdio"
    )]
    transport: Transport,

    /// Address the HTTP transport listens on (http only)
    #[arg(long, env = "SNOWLUMA_MCP_LISTEN", default_value = "127.0.0.1:3001")]
    listen: String,

    /// Path of the MCP endpoint (http only)
    #[arg(long, env = "SNOWLUMA_MCP_PATH", default_value = "/mcp")]
    path: String,

    /// The https origin clients reach this server at through a TLS-terminating proxy, e.g.
    /// https://mcp.example.com; required to listen on a non-loopback address (http only)
    #[arg(long, env = "SNOWLUMA_MCP_PUBLIC_ORIGIN")]
    public_origin: Option<String>,

    /// File holding the bearer token HTTP clients must send (the whole file, one trailing
    /// newline trimmed); the token itself can come from SNOWLUMA_MCP_HTTP_TOKEN, which has no
    /// flag so it never shows in a command line
    #[arg(long, env = "SNOWLUMA_MCP_HTTP_TOKEN_FILE")]
    http_token_file: Option<PathBuf>,

    /// File of named client tokens, one `name token` pair a line; each name is a principal
    /// that owns its own tasks, event resources and input prompts (mode 600; http only)
    #[arg(long, env = "SNOWLUMA_MCP_HTTP_TOKENS_FILE")]
    http_tokens_file: Option<PathBuf>,

    /// Seconds a session may stay idle before it ends and its resources are released
    #[arg(long, env = "SNOWLUMA_MCP_HTTP_IDLE_SECS", default_value_t = 1800)]
    http_idle_secs: u64,

    /// Most sessions open at once (1 to 32)
    #[arg(long, env = "SNOWLUMA_MCP_HTTP_MAX_SESSIONS", default_value_t = MAX_SESSIONS)]
    http_max_sessions: usize,

    /// Largest request body, in bytes
    #[arg(long, env = "SNOWLUMA_MCP_HTTP_MAX_BODY_BYTES", default_value_t = 4 << 20)]
    http_max_body_bytes: usize,

    /// Seconds an event resource of a 2026-07-28 (stateless) client lives without a
    /// read_events or resources/read before it is released
    #[arg(long, env = "SNOWLUMA_MCP_EVENT_LEASE_SECS", default_value_t = 600)]
    event_lease_secs: u64,

    /// Percent of each process-wide limit (tasks, input prompts) one principal may hold
    /// when the tokens file names several (rounded up)
    #[arg(
        long,
        env = "SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT",
        default_value_t = 50
    )]
    principal_share_percent: u8,

    /// Most open TCP connections from one peer address
    #[arg(
        long,
        env = "SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER",
        default_value_t = 16
    )]
    http_max_conns_per_peer: usize,

    /// Most HTTP requests in progress at once, open event streams included
    #[arg(long, env = "SNOWLUMA_MCP_HTTP_MAX_REQUESTS", default_value_t = 128)]
    http_max_requests: usize,
}

/// `https://host[:port]` as given by `--public-origin`, already validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOrigin {
    /// The exact `Origin` a browser on that site sends, e.g. `https://mcp.example.com`.
    pub origin: String,
    /// Lower-case host name (IPv6 in brackets).
    pub host: String,
    pub port: u16,
}

/// The validated HTTP settings; present in [`super::Config`] only with `--transport http`.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub listen: SocketAddr,
    pub path: String,
    pub public_origin: Option<PublicOrigin>,
    /// The tokens clients may present, each naming a principal; `None` only when listening
    /// on loopback (start-up warns, and every request is the principal `default`).
    pub credentials: Option<Credentials>,
    pub idle_timeout: Duration,
    pub max_sessions: usize,
    pub max_body_bytes: usize,
    pub max_requests: usize,
    pub max_conns_per_peer: usize,
    pub event_lease: Duration,
    /// Each principal's share of the process-wide limits, in percent; `None` with fewer than
    /// two principals (one client may then use everything).
    pub principal_share: Option<u8>,
}

impl HttpFlags {
    /// `None` for stdio; the checked settings for http.
    pub fn into_config(self) -> Result<Option<HttpConfig>, ConfigError> {
        if self.transport == Transport::Stdio {
            return Ok(None);
        }
        let listen: SocketAddr = self.listen.trim().parse().map_err(|_| {
            ConfigError(format!(
                "SNOWLUMA_MCP_LISTEN `{}` is not an IP address with a port; use e.g. 127.0.0.1:3001",
                self.listen
            ))
        })?;
        let path = check_path(&self.path)?;
        let public_origin = self
            .public_origin
            .filter(|o| !o.trim().is_empty())
            .map(|o| parse_public_origin(&o))
            .transpose()?;
        let token = read_http_token(self.http_token_file.as_deref())?;
        let credentials = read_credentials(token, self.http_tokens_file.as_deref())?;
        let loopback = listen.ip().is_loopback();
        if !loopback && public_origin.is_none() {
            return Err(ConfigError(format!(
                "listening on {listen}, which is not a loopback address, needs \
                 SNOWLUMA_MCP_PUBLIC_ORIGIN (the https://host[:port] clients use through your \
                 TLS-terminating proxy); or listen on 127.0.0.1"
            )));
        }
        if !loopback && credentials.is_none() {
            return Err(ConfigError(format!(
                "listening on {listen}, which is not a loopback address, needs a client token: set \
                 SNOWLUMA_MCP_HTTP_TOKEN, SNOWLUMA_MCP_HTTP_TOKEN_FILE or SNOWLUMA_MCP_HTTP_TOKENS_FILE"
            )));
        }
        if !(1..=86_400).contains(&self.http_idle_secs) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_HTTP_IDLE_SECS must be between 1 and 86400 seconds (got {})",
                self.http_idle_secs
            )));
        }
        if !(1..=MAX_SESSIONS).contains(&self.http_max_sessions) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_HTTP_MAX_SESSIONS must be between 1 and {MAX_SESSIONS} (got {})",
                self.http_max_sessions
            )));
        }
        if !(1024..=64 << 20).contains(&self.http_max_body_bytes) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_HTTP_MAX_BODY_BYTES must be between 1024 and 67108864 (got {})",
                self.http_max_body_bytes
            )));
        }
        if !(1..=4096).contains(&self.http_max_requests) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_HTTP_MAX_REQUESTS must be between 1 and 4096 (got {})",
                self.http_max_requests
            )));
        }
        if !(1..=4096).contains(&self.http_max_conns_per_peer) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER must be between 1 and 4096 (got {})",
                self.http_max_conns_per_peer
            )));
        }
        if !(1..=100).contains(&self.principal_share_percent) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT must be between 1 and 100 (got {})",
                self.principal_share_percent
            )));
        }
        let several = credentials.as_ref().is_some_and(|c| c.names().count() > 1);
        if !(1..=86_400).contains(&self.event_lease_secs) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_EVENT_LEASE_SECS must be between 1 and 86400 seconds (got {})",
                self.event_lease_secs
            )));
        }
        Ok(Some(HttpConfig {
            listen,
            path,
            public_origin,
            credentials,
            idle_timeout: Duration::from_secs(self.http_idle_secs),
            max_sessions: self.http_max_sessions,
            max_body_bytes: self.http_max_body_bytes,
            max_requests: self.http_max_requests,
            max_conns_per_peer: self.http_max_conns_per_peer,
            event_lease: Duration::from_secs(self.event_lease_secs),
            principal_share: several.then_some(self.principal_share_percent),
        }))
    }
}

/// An absolute path without query, fragment or characters a client would have to escape.
fn check_path(path: &str) -> Result<String, ConfigError> {
    let ok = path.starts_with('/')
        && path.len() <= 256
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._~".contains(&b));
    if ok {
        Ok(path.to_string())
    } else {
        Err(ConfigError(format!(
            "SNOWLUMA_MCP_PATH `{path}` must start with / and hold only letters, digits and \
             / - . _ ~ (no query or fragment); use e.g. /mcp"
        )))
    }
}

/// `https://host[:port]`: no credentials, path, query, fragment or wildcard.
pub fn parse_public_origin(text: &str) -> Result<PublicOrigin, ConfigError> {
    let text = text.trim();
    // A value with `@` may carry a password: it is never repeated in an error.
    let shown = if text.contains('@') {
        "(value not shown: it holds `@`)"
    } else {
        text
    };
    let bad = |why: &str| {
        ConfigError(format!(
            "SNOWLUMA_MCP_PUBLIC_ORIGIN `{shown}` {why}; give the https://host[:port] clients use, \
             e.g. https://mcp.example.com"
        ))
    };
    if text.contains('*') {
        return Err(bad("must not contain a wildcard"));
    }
    let url = url::Url::parse(text).map_err(|e| bad(&format!("is not a valid URL ({e})")))?;
    if url.scheme() != "https" {
        return Err(bad("must use https (TLS terminates at your reverse proxy)"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Never echo the text: it holds a password.
        return Err(ConfigError(
            "SNOWLUMA_MCP_PUBLIC_ORIGIN must not contain credentials (user:password@); give the \
             https://host[:port] clients use, e.g. https://mcp.example.com"
                .into(),
        ));
    }
    // The URL parser turns an empty path into `/`; anything longer is a path.
    if url.path() != "/" || text.trim_end_matches('/').len() + 1 < text.len() {
        return Err(bad("must not contain a path"));
    }
    if url.query().is_some() || text.contains('?') {
        return Err(bad("must not contain a query"));
    }
    if url.fragment().is_some() || text.contains('#') {
        return Err(bad("must not contain a fragment"));
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(bad("has no host"));
    };
    let port = url.port_or_known_default().unwrap_or(443);
    Ok(PublicOrigin {
        origin: url.origin().ascii_serialization(),
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// `SNOWLUMA_MCP_HTTP_TOKEN`, or the whole of the token file with one trailing newline
/// trimmed; both at once is ambiguous. Kept apart from SnowLuma's token on purpose: the one
/// who may use this server is not necessarily the one SnowLuma trusts.
fn read_http_token(file: Option<&Path>) -> Result<Option<String>, ConfigError> {
    let token = read_secret(
        &SecretSource {
            env: "SNOWLUMA_MCP_HTTP_TOKEN",
            file_setting: "SNOWLUMA_MCP_HTTP_TOKEN_FILE",
            what: "the token clients send",
        },
        file,
    )?;
    if let Some(token) = &token
        && !token.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ConfigError(
            "the HTTP client token must be printable ASCII without spaces (clients send it in an \
             Authorization header); fix SNOWLUMA_MCP_HTTP_TOKEN or SNOWLUMA_MCP_HTTP_TOKEN_FILE"
                .into(),
        ));
    }
    Ok(token)
}

/// The single token (principal `default`) and the tokens file's principals; `None` when
/// neither is set.
fn read_credentials(
    token: Option<String>,
    tokens_file: Option<&Path>,
) -> Result<Option<Credentials>, ConfigError> {
    let mut credentials = token
        .as_deref()
        .map(Credentials::with_default_token)
        .unwrap_or_default();
    if let Some(path) = tokens_file.filter(|p| !p.as_os_str().is_empty()) {
        refuse_shared_file(path, TOKENS_FILE_SETTING)?;
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError(format!(
                "{TOKENS_FILE_SETTING} {} cannot be read ({}); point it at a readable file of \
                 `name token` lines",
                path.display(),
                e.kind()
            ))
        })?;
        credentials.add_tokens_file(path, &text)?;
    }
    Ok(Some(credentials).filter(|c| !c.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_origin_accepts_host_and_port() {
        let o = parse_public_origin("https://MCP.example.com").unwrap();
        assert_eq!(o.origin, "https://mcp.example.com");
        assert_eq!((o.host.as_str(), o.port), ("mcp.example.com", 443));
        let o = parse_public_origin("https://mcp.example.com:8443/").unwrap();
        assert_eq!(o.origin, "https://mcp.example.com:8443");
        assert_eq!(o.port, 8443);
    }

    #[test]
    fn public_origin_refuses_everything_else() {
        for bad in [
            "http://mcp.example.com",
            "https://user:pw@mcp.example.com",
            "https://mcp.example.com/mcp",
            "https://mcp.example.com//",
            "https://mcp.example.com?x=1",
            "https://mcp.example.com/?",
            "https://mcp.example.com#top",
            "https://*.example.com",
            "mcp.example.com",
        ] {
            assert!(parse_public_origin(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn public_origin_errors_never_echo_a_password() {
        for bad in [
            "https://user:hunter2@mcp.example.com",
            "https://user:hunter2@mcp.example.com/path",
            "http://user:hunter2@mcp.example.com",
            "https://user:hunter2@*.example.com",
        ] {
            let error = parse_public_origin(bad).unwrap_err().0;
            assert!(!error.contains("hunter2"), "{error}");
        }
    }

    #[test]
    fn path_must_be_plain() {
        assert_eq!(check_path("/mcp").unwrap(), "/mcp");
        for bad in ["mcp", "/mcp?x", "/mcp#a", "/a b", ""] {
            assert!(check_path(bad).is_err(), "{bad} was accepted");
        }
    }
}
