//! Configuration from environment variables and the matching command-line flags (a flag wins
//! over its variable). A bad value stops the process with a message naming the variable, the
//! value's problem and what to do instead.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::{Parser, ValueEnum};

mod actions;
mod events_reconnect;
mod events_url;
mod flag_errors;
mod guard;
pub mod http;
pub mod principals;
mod results;
mod secret;
mod tls;
pub use actions::ActionSelection;
pub use events_reconnect::EventsReconnect;
pub use events_url::EventsUrl;
pub use flag_errors::server_help;
pub use guard::{ConfirmSetting, GuardConfig};
pub use http::HttpConfig;
pub use results::{HTTP_DEFAULT_BUDGET, MIN_BUDGET, ResultSettings};
use secret::{SecretSource, read_secret};
pub use tls::{Tls, TlsFailure};

/// What the server may do. Decided once at start-up; every call is checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The bundled catalog only; no connection is ever opened.
    Docs,
    /// Docs plus read-only actions through `query_action`.
    Read,
    /// Everything, including writes and streams through `invoke_action`.
    Write,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Docs => "docs",
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }

    pub fn executes(self) -> bool {
        self != Mode::Docs
    }

    pub fn writes(self) -> bool {
        self == Mode::Write
    }
}

/// The terminal subcommands and how a client starts the server, below the flags in `--help`.
const SUBCOMMANDS_HELP: &str = "Commands:\n  \
    catalog   browse the bundled catalog: catalog list | search QUERY… | show NAME [--json]\n  \
    check     test this configuration and the connection to SnowLuma, then exit\n  \
    help      this help (`help catalog`, `help check` for theirs)\n\n\
    Client configuration (Claude Desktop, stdio): \
    {\"mcpServers\": {\"snowluma\": {\"command\": \"snowluma-mcp\"}}}";

#[derive(Parser, Debug)]
#[command(
    name = "snowluma-mcp",
    version,
    about = "MCP server for SnowLuma's OneBot 11 action catalog (stdio, or Streamable HTTP with --transport http)",
    long_about = "MCP server for SnowLuma's OneBot 11 action catalog. It speaks MCP on stdio by \
        default (an MCP client starts it), or on Streamable HTTP with --transport http.\n\n\
        Without an endpoint it serves the bundled catalog offline (docs mode). With \
        SNOWLUMA_MCP_ENDPOINT it can run read-only actions (read mode, the default then) or \
        every action (write mode). Every flag can also be set by the SNOWLUMA_MCP_… variable \
        shown beside it; the tokens only by variable or file. Logs go to stderr; stdout \
        carries MCP only.",
    after_help = SUBCOMMANDS_HELP,
    after_long_help = SUBCOMMANDS_HELP
)]
struct Flags {
    /// docs | read | write [default: read with an endpoint, else docs]
    #[arg(long, env = "SNOWLUMA_MCP_MODE", value_parser = parse_mode_setting)]
    mode: Option<ModeSetting>,

    /// SnowLuma's OneBot HTTP address, e.g. http://127.0.0.1:3000/
    #[arg(long, env = "SNOWLUMA_MCP_ENDPOINT")]
    endpoint: Option<String>,

    /// File holding SnowLuma's access token (the whole file, one trailing newline trimmed).
    /// The token itself is read from SNOWLUMA_MCP_TOKEN; there is no flag for it, because
    /// command lines are visible to every local user
    #[arg(long, env = "SNOWLUMA_MCP_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,

    /// SnowLuma's OneBot WebSocket address for live events, e.g. ws://127.0.0.1:3001/;
    /// unset disables event resources
    #[arg(long, env = "SNOWLUMA_MCP_EVENTS_URL")]
    events_url: Option<String>,

    /// PEM file of extra CA certificates to trust for https:// and wss:// (e.g. a private
    /// TLS proxy in front of SnowLuma); the system's roots are always trusted
    #[arg(long, env = "SNOWLUMA_MCP_CA_FILE")]
    ca_file: Option<PathBuf>,

    /// Request timeout in milliseconds for ordinary calls
    #[arg(long, env = "SNOWLUMA_MCP_TIMEOUT_MS", default_value_t = 30_000)]
    timeout_ms: u64,

    /// Directory on the MCP host where stream downloads are saved (absolute)
    /// [default: $XDG_CACHE_HOME/snowluma-mcp/downloads, else ~/.cache/snowluma-mcp/downloads;
    /// must be a directory private to this user]
    #[arg(long, env = "SNOWLUMA_MCP_DOWNLOAD_DIR", value_parser = empty_is_unset_path())]
    download_dir: Option<PathBuf>,

    /// Directory on the MCP host whose files `execution.input_file` may upload (absolute);
    /// unset disables automatic upload
    #[arg(long, env = "SNOWLUMA_MCP_UPLOAD_ROOT", value_parser = empty_is_unset_path())]
    upload_root: Option<PathBuf>,

    /// Private directory on the MCP host for durable background tasks (absolute, write mode
    /// only); unset disables invoke_action_background and list_tasks
    #[arg(long, env = "SNOWLUMA_MCP_TASK_DIR", value_parser = empty_is_unset_path())]
    task_dir: Option<PathBuf>,

    /// How long a finished background task's record is kept, in seconds from its final
    /// update (0 keeps records forever)
    #[arg(
        long,
        env = "SNOWLUMA_MCP_TASK_RETENTION_SECS",
        default_value_t = 604_800
    )]
    task_retention_secs: u64,

    /// Largest file one download or upload may move, in bytes
    #[arg(long, env = "SNOWLUMA_MCP_MAX_FILE_BYTES", default_value_t = 1 << 30)]
    max_file_bytes: u64,

    /// Most bytes the download directory may hold, in bytes
    #[arg(long, env = "SNOWLUMA_MCP_DIR_QUOTA_BYTES", default_value_t = 4 << 30)]
    dir_quota_bytes: u64,

    /// Longest wait for the next bytes of a stream, in milliseconds
    #[arg(long, env = "SNOWLUMA_MCP_STREAM_IDLE_MS", default_value_t = 30_000)]
    stream_idle_ms: u64,

    /// Most stream actions running at once
    #[arg(long, env = "SNOWLUMA_MCP_MAX_STREAMS", default_value_t = 2)]
    max_streams: usize,

    /// Largest answer of an ordinary call, in bytes
    #[arg(long, env = "SNOWLUMA_MCP_MAX_RESPONSE_BYTES", default_value_t = 16 << 20)]
    max_response_bytes: usize,

    /// Most ordinary calls waiting for SnowLuma at once
    #[arg(long, env = "SNOWLUMA_MCP_MAX_CALLS", default_value_t = 32)]
    max_calls: usize,

    /// Comma-separated actions, aliases or `category:<id>` that may run; unset allows every
    /// action the mode allows
    #[arg(long, env = "SNOWLUMA_MCP_ALLOW_ACTIONS")]
    allow_actions: Option<String>,

    /// Comma-separated actions, aliases or `category:<id>` that never run (wins over the allow
    /// list), e.g. bot_exit,send_packet
    #[arg(long, env = "SNOWLUMA_MCP_DENY_ACTIONS")]
    deny_actions: Option<String>,

    /// Comma-separated categories (or `all`) whose actions are also listed as one typed tool
    /// each, e.g. message,group_info
    #[arg(long, env = "SNOWLUMA_MCP_TOOLSETS")]
    toolsets: Option<String>,

    /// Log filter for stderr (tracing syntax), e.g. `info` or `debug,rmcp=warn`
    #[arg(long, env = "SNOWLUMA_MCP_LOG", default_value = "info,rmcp=warn")]
    log: String,

    #[command(flatten)]
    http: http::HttpFlags,

    #[command(flatten)]
    events_reconnect: events_reconnect::ReconnectFlags,

    #[command(flatten)]
    guard: guard::GuardFlags,

    #[command(flatten)]
    results: results::ResultFlags,
}

/// Longest SNOWLUMA_MCP_TASK_RETENTION_SECS: ten years, far below where a time stamp plus the
/// retention could overflow.
const MAX_TASK_RETENTION_SECS: u64 = 10 * 366 * 24 * 3600;

/// Limits and places of stream actions (files move on the MCP host).
#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub download_dir: PathBuf,
    pub upload_root: Option<PathBuf>,
    pub max_file_bytes: u64,
    pub dir_quota_bytes: u64,
    pub idle: Duration,
    pub max_streams: usize,
    /// Fired by main on SIGTERM/SIGINT; stream calls stop and clean up.
    pub shutdown: Shutdown,
}

/// Process shutdown shared by main, which fires it on SIGTERM/SIGINT and then waits (bounded)
/// until every running stream call and background task has cleaned up, and that work, which
/// holds a tracker token while it runs and stops when the token (or a child of it) fires.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    pub token: tokio_util::sync::CancellationToken,
    running: tokio_util::task::TaskTracker,
}

impl Shutdown {
    /// Held by running work; [`Shutdown::drained`] waits for every one to go. `None` once
    /// shutdown has begun: work that has not started by then must not start. Taking one never
    /// waits, so a token taken inside another (a background task's stream call) cannot queue
    /// behind main's wait, which the outer one holds up.
    pub async fn enter(&self) -> Option<tokio_util::task::task_tracker::TaskTrackerToken> {
        let running = self.running.token();
        // Checked after counting in: either main's wait sees this token, or the token was
        // cancelled before the wait began and this work never starts.
        (!self.token.is_cancelled()).then_some(running)
    }

    /// Resolves once no work holds a token. Fire the token first.
    pub async fn drained(&self) {
        self.running.close();
        self.running.wait().await;
    }
}

/// The validated configuration.
#[derive(Clone)]
pub struct Config {
    pub mode: Mode,
    pub endpoint: Option<String>,
    pub token: Option<String>,
    /// Where live events come from; `None` disables event resources.
    pub events_url: Option<EventsUrl>,
    /// How the event socket reconnects, and whether missed group messages are recovered.
    pub events_reconnect: EventsReconnect,
    /// TLS for https endpoints and wss event sockets (system roots plus SNOWLUMA_MCP_CA_FILE).
    pub tls: Tls,
    pub timeout: Duration,
    pub max_response_bytes: usize,
    pub max_calls: usize,
    pub streams: StreamConfig,
    /// Where durable background tasks live; `None` disables them. Write mode only.
    pub task_dir: Option<PathBuf>,
    /// How long finished task records are kept after their final update; `None` keeps them
    /// forever (SNOWLUMA_MCP_TASK_RETENTION_SECS=0).
    pub task_retention: Option<Duration>,
    /// Allow and deny lists and typed toolsets, resolved against the catalog by exec.
    pub actions: ActionSelection,
    pub log: String,
    /// The Streamable HTTP transport's settings; `None` serves stdio.
    pub http: Option<HttpConfig>,
    /// Send limits, confirmation and the audit log (write safety).
    pub guard: GuardConfig,
    /// Result budgets, continuations and the tool-count cap.
    pub results: ResultSettings,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token never appears in logs, even in debug output.
        f.debug_struct("Config")
            .field("mode", &self.mode)
            .field("endpoint_set", &self.endpoint.is_some())
            .field("token_set", &self.token.is_some())
            .field("events_url", &self.events_url)
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Debug)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads flags and environment; `--help`/`--version` and flag syntax errors exit here
    /// through clap, with its usual exit codes.
    pub fn from_args() -> Result<Config, ConfigError> {
        let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
        match Flags::try_parse_from(&argv) {
            Ok(flags) => Self::from_flags(flags),
            Err(error) => match flag_errors::from_environment(&error, &argv) {
                Some(message) => Err(ConfigError(message)),
                None => error.exit(),
            },
        }
    }

    /// For tests: the same rules over an explicit argument list.
    pub fn try_from_args<I, T>(args: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let argv: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        let flags = Flags::try_parse_from(&argv).map_err(|e| {
            ConfigError(flag_errors::from_environment(&e, &argv).unwrap_or_else(|| e.to_string()))
        })?;
        Self::from_flags(flags)
    }

    fn from_flags(flags: Flags) -> Result<Config, ConfigError> {
        let endpoint = flags.endpoint.filter(|e| !e.trim().is_empty());
        let token = read_token(flags.token_file.as_deref())?;
        let mode = flags
            .mode
            .and_then(|m| m.0)
            .unwrap_or(if endpoint.is_some() {
                Mode::Read
            } else {
                Mode::Docs
            });
        if let Some(endpoint) = &endpoint {
            check_endpoint(endpoint)?;
        }
        if mode.executes() && endpoint.is_none() {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_MODE={} needs SNOWLUMA_MCP_ENDPOINT (SnowLuma's HTTP address, e.g. \
                 http://127.0.0.1:3000/); set it, or use SNOWLUMA_MCP_MODE=docs for the offline catalog",
                mode.as_str()
            )));
        }
        if !(1..=600_000).contains(&flags.timeout_ms) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_TIMEOUT_MS must be between 1 and 600000 milliseconds (got {})",
                flags.timeout_ms
            )));
        }
        let download_dir = match absolute("SNOWLUMA_MCP_DOWNLOAD_DIR", flags.download_dir)? {
            Some(dir) => dir,
            None => utf8_default_download_dir()?,
        };
        let upload_root = absolute("SNOWLUMA_MCP_UPLOAD_ROOT", flags.upload_root)?;
        let task_dir = absolute("SNOWLUMA_MCP_TASK_DIR", flags.task_dir)?;
        if task_dir.is_some() && !mode.writes() {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_TASK_DIR enables background transfers, which need \
                 SNOWLUMA_MCP_MODE=write; this server would run in {} mode: set the mode to \
                 write or unset SNOWLUMA_MCP_TASK_DIR",
                mode.as_str()
            )));
        }
        if flags.task_retention_secs > MAX_TASK_RETENTION_SECS {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_TASK_RETENTION_SECS must be at most {MAX_TASK_RETENTION_SECS} \
                 (ten years; got {}); use 0 to keep finished task records forever",
                flags.task_retention_secs
            )));
        }
        positive("SNOWLUMA_MCP_MAX_FILE_BYTES", flags.max_file_bytes)?;
        positive("SNOWLUMA_MCP_DIR_QUOTA_BYTES", flags.dir_quota_bytes)?;
        if !(100..=3_600_000).contains(&flags.stream_idle_ms) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_STREAM_IDLE_MS must be between 100 and 3600000 milliseconds (got {})",
                flags.stream_idle_ms
            )));
        }
        if !(1..=64).contains(&flags.max_streams) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_MAX_STREAMS must be between 1 and 64 (got {}); SnowLuma itself allows 64 uploads",
                flags.max_streams
            )));
        }
        if !(1024..=1 << 30).contains(&flags.max_response_bytes) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_MAX_RESPONSE_BYTES must be between 1024 and 1073741824 (got {})",
                flags.max_response_bytes
            )));
        }
        if !(1..=1024).contains(&flags.max_calls) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_MAX_CALLS must be between 1 and 1024 (got {})",
                flags.max_calls
            )));
        }
        let events_url = flags
            .events_url
            .filter(|u| !u.trim().is_empty())
            .map(|u| EventsUrl::parse(&u))
            .transpose()?;
        let actions = ActionSelection::parse(
            flags.allow_actions.as_deref(),
            flags.deny_actions.as_deref(),
            flags.toolsets.as_deref(),
        )?;
        // The system CA store is read only when a connection will use TLS: loading and
        // parsing it is most of a plain-http or docs-mode start-up otherwise.
        let uses_tls = endpoint
            .as_deref()
            .is_some_and(|e| e.trim_start().to_ascii_lowercase().starts_with("https:"))
            || events_url.as_ref().is_some_and(EventsUrl::is_tls);
        let tls = Tls::load(flags.ca_file.as_deref(), uses_tls)?;
        let http = flags.http.into_config()?;
        let events_reconnect = flags.events_reconnect.into_settings()?;
        let guard = flags.guard.into_config()?;
        let results = flags.results.into_settings()?;
        Ok(Config {
            mode,
            endpoint,
            token,
            events_url,
            events_reconnect,
            tls,
            timeout: Duration::from_millis(flags.timeout_ms),
            max_response_bytes: flags.max_response_bytes,
            max_calls: flags.max_calls,
            streams: StreamConfig {
                download_dir,
                upload_root,
                max_file_bytes: flags.max_file_bytes,
                dir_quota_bytes: flags.dir_quota_bytes,
                idle: Duration::from_millis(flags.stream_idle_ms),
                max_streams: flags.max_streams,
                shutdown: Shutdown::default(),
            },
            task_dir,
            task_retention: (flags.task_retention_secs > 0)
                .then(|| Duration::from_secs(flags.task_retention_secs)),
            actions,
            log: flags.log,
            http,
            guard,
            results,
        })
    }
}

/// `SNOWLUMA_MCP_MODE` as given; an empty or blank value means unset. MCP hosts that fill
/// every variable from a settings form (an MCP Bundle's `user_config`) pass an empty string for
/// a field the user left blank, and that must start the server with the default rather than
/// stop it.
#[derive(Debug, Clone)]
struct ModeSetting(Option<Mode>);

fn parse_mode_setting(value: &str) -> Result<ModeSetting, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(ModeSetting(None));
    }
    Mode::from_str(value, false)
        .map(|mode| ModeSetting(Some(mode)))
        .map_err(|_| format!("`{value}` is not a mode; use docs, read or write"))
}

/// A directory setting whose empty value reaches [`absolute`] (which reads it as unset, for
/// the same reason as [`ModeSetting`]) instead of being refused by clap's path parser.
fn empty_is_unset_path() -> impl TypedValueParser<Value = PathBuf> {
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// A per-user default, so no other local user can pre-create it: the XDG cache directory
/// (`$XDG_CACHE_HOME`, else `~/.cache`; `%LOCALAPPDATA%` on Windows), else a temp directory
/// named after the user id. Start-up still checks whatever is there is private.
fn default_download_dir() -> PathBuf {
    let absolute_var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let cache = absolute_var("XDG_CACHE_HOME")
        .or_else(|| absolute_var("HOME").map(|home| home.join(".cache")))
        .or_else(|| absolute_var("LOCALAPPDATA"));
    match cache {
        Some(cache) => cache.join("snowluma-mcp").join("downloads"),
        None => {
            #[cfg(unix)]
            let user = rustix::process::geteuid().as_raw().to_string();
            #[cfg(not(unix))]
            let user = "user".to_string();
            std::env::temp_dir().join(format!("snowluma-mcp-downloads-{user}"))
        }
    }
}

/// Paths are on the MCP host and must be absolute, so their meaning does not depend on the
/// directory the MCP client starts the server in. They must also be UTF-8: results report
/// them as JSON text, and a lossy copy would name a file that does not exist. Empty or blank
/// means unset.
fn absolute(variable: &str, dir: Option<PathBuf>) -> Result<Option<PathBuf>, ConfigError> {
    let Some(path) = dir else { return Ok(None) };
    let Some(text) = path.to_str() else {
        return Err(ConfigError(format!(
            "{variable} is not valid UTF-8 ({}); results report this path as JSON text, so \
             choose a directory whose path is UTF-8",
            path.display()
        )));
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    if path.is_absolute() {
        Ok(Some(path))
    } else {
        Err(ConfigError(format!(
            "{variable} must be an absolute path on the MCP host (got a relative path)"
        )))
    }
}

/// The default download directory comes from XDG_CACHE_HOME, HOME or TMPDIR, any of which
/// may be non-UTF-8; say which setting fixes it rather than report a lossy path later.
fn utf8_default_download_dir() -> Result<PathBuf, ConfigError> {
    let dir = default_download_dir();
    if dir.to_str().is_none() {
        return Err(ConfigError(format!(
            "the default download directory {} is not valid UTF-8 (it comes from \
             XDG_CACHE_HOME, HOME or TMPDIR); set SNOWLUMA_MCP_DOWNLOAD_DIR to an absolute UTF-8 path",
            dir.display()
        )));
    }
    Ok(dir)
}

fn positive(variable: &str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError(format!(
            "{variable} must be a positive number of bytes (got 0)"
        )));
    }
    Ok(())
}

/// SnowLuma's access token: `SNOWLUMA_MCP_TOKEN`, or the whole of `--token-file` with one
/// trailing newline trimmed; both at once is ambiguous. The token must be usable as an HTTP
/// header value, which is checked here so a bad one stops the server at start-up.
fn read_token(file: Option<&std::path::Path>) -> Result<Option<String>, ConfigError> {
    let token = read_secret(
        &SecretSource {
            env: "SNOWLUMA_MCP_TOKEN",
            file_setting: "SNOWLUMA_MCP_TOKEN_FILE",
            what: "SnowLuma's access token",
        },
        file,
    )?;
    if let Some(token) = &token
        && token.bytes().any(|b| b < 0x20 || b == 0x7f)
    {
        return Err(ConfigError(
            "the access token contains a control character (a newline?) and cannot be sent in an HTTP header;              remove it from SNOWLUMA_MCP_TOKEN or SNOWLUMA_MCP_TOKEN_FILE"
                .into(),
        ));
    }
    Ok(token)
}

/// An endpoint is an http(s) URL with a host and nothing the token or the action name could
/// be confused with: no credentials (the token travels in a header), query or fragment.
fn check_endpoint(endpoint: &str) -> Result<(), ConfigError> {
    // `localhost:3000` parses as a URL of scheme `localhost`; what was meant is plain.
    if !endpoint.contains("://") {
        return Err(ConfigError(format!(
            "SNOWLUMA_MCP_ENDPOINT `{}` has no scheme: add http:// (e.g. http://{}/)",
            endpoint.trim(),
            endpoint.trim().trim_end_matches('/')
        )));
    }
    let url = url::Url::parse(endpoint.trim()).map_err(|e| {
        ConfigError(format!(
            "SNOWLUMA_MCP_ENDPOINT is not a valid URL ({e}); use e.g. http://127.0.0.1:3000/"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError(format!(
            "SNOWLUMA_MCP_ENDPOINT must use http or https, not `{}`; SnowLuma's OneBot HTTP \
             server listens on http://<host>:3000/ by default",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConfigError(
            "SNOWLUMA_MCP_ENDPOINT must not embed credentials (user:password@); put the access \
             token in SNOWLUMA_MCP_TOKEN instead"
                .into(),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ConfigError(
            "SNOWLUMA_MCP_ENDPOINT has no host, e.g. http://127.0.0.1:3000/".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ConfigError(
            "SNOWLUMA_MCP_ENDPOINT must not have a query (?…) or fragment (#…); SnowLuma reads the action from the path"
                .into(),
        ));
    }
    Ok(())
}
