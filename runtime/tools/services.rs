//! What every session of this process shares for running tools: the configuration, the
//! executor, open input prompts, the event hub and the task manager. Built once at start-up;
//! the server adds its protocol caches around it.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::docs::StaticAnswer;
use crate::config::Config;
use crate::events::{EventHub, MessageHistory};
use crate::exec::{Executor, PipelineHistory, Setup};
use crate::input::{Continuations, STATE_LIFETIME, SystemClock};
use crate::paging::{ContinuationStore, StoreLimits};
use crate::tasks::{ScopeInputs, TaskManager, TaskSettings, TaskStore, TaskStoreError};

/// Test-only: how long prompts for missing params live (and how long a legacy
/// `elicitation/create` is awaited), in milliseconds. Read only in builds with the
/// `test-knobs` feature (the test suite's); the binary users get always uses ten minutes.
const INPUT_TTL_ENV: &str = "SNOWLUMA_MCP_INPUT_STATE_TTL_MS";

/// The process-wide services of the tools.
pub struct Services {
    pub config: Config,
    pub executor: Arc<Executor>,
    /// Open prompts for missing params, process-wide so the 256 limit and single use hold
    /// across sessions; its key dies with the process.
    pub continuations: Continuations,
    /// How long a prompt may stay unanswered.
    pub input_lifetime: Duration,
    /// Live events, when `SNOWLUMA_MCP_EVENTS_URL` is set and the mode executes. Creating the
    /// hub never connects; the first subscription does.
    pub events: Option<EventHub>,
    /// Durable background tasks; present when SNOWLUMA_MCP_TASK_DIR is set (write mode).
    pub tasks: Option<Arc<TaskManager>>,
    /// `get_runtime_info`'s answer without the connection check: fixed for the process's
    /// configuration, serialized at the first call.
    pub runtime_info: OnceLock<StaticAnswer>,
    /// Paged results waiting for `read_more`.
    pub pages: ContinuationStore,
}

impl Services {
    /// Fails (a start-up error) when the task directory cannot be used: not private, leased
    /// by another process, made for another configuration, or holding a corrupt record.
    pub fn new(config: Config) -> Result<Arc<Services>, String> {
        let executor = Arc::new(Executor::new(&config)?);
        let input_lifetime = input_lifetime()?;
        let continuations = Continuations::with_clock(Box::new(SystemClock::new()), input_lifetime)
            .map_err(|error| format!("input prompts: {error}"))?;
        let events = config
            .events_url
            .clone()
            .filter(|_| config.mode.executes())
            .map(|url| {
                // Recovery runs get_group_msg_history through the one pipeline and gate.
                let history: Arc<dyn MessageHistory> = Arc::new(PipelineHistory(executor.clone()));
                EventHub::with_reconnect(
                    url,
                    config.token.clone(),
                    Some(config.tls.client_config()),
                    config.events_reconnect,
                    config.events_reconnect.recover.map(|_| history),
                )
            });
        let pages = ContinuationStore::new(
            Box::new(SystemClock::new()),
            continuation_lifetime(config.results.continuation_ttl)?,
            StoreLimits::default(),
        )
        .map_err(|error| format!("paged results: {error}"))?;
        let tasks = match &config.task_dir {
            Some(dir) => Some(open_tasks(dir, &config).map_err(|e| e.to_string())?),
            None => None,
        };
        // With two or more principals, each holds at most its share of every process-wide
        // limit, so one cannot exhaust it for the others.
        if let Some(percent) = config.http.as_ref().and_then(|h| h.principal_share) {
            let share = crate::config::principals::Share { percent };
            executor.set_principal_share(share);
            continuations.set_principal_share(share);
            if let Some(hub) = &events {
                hub.set_principal_share(share);
            }
            if let Some(tasks) = &tasks {
                tasks.set_principal_share(share);
            }
        }
        Ok(Arc::new(Services {
            config,
            executor,
            continuations,
            input_lifetime,
            events,
            tasks,
            runtime_info: OnceLock::new(),
            pages,
        }))
    }

    /// What the gate needs to know about this server.
    pub fn setup(&self) -> Setup {
        Setup {
            mode: self.config.mode,
            events: self.events.is_some(),
        }
    }
}

/// [`STATE_LIFETIME`], unless a test shortens it through [`INPUT_TTL_ENV`].
fn input_lifetime() -> Result<Duration, String> {
    if !cfg!(feature = "test-knobs") {
        return Ok(STATE_LIFETIME);
    }
    match std::env::var(INPUT_TTL_ENV) {
        Err(_) => Ok(STATE_LIFETIME),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(ms) if (1..=3_600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
            _ => Err(format!(
                "{INPUT_TTL_ENV} must be a whole number of milliseconds from 1 to 3600000"
            )),
        },
    }
}

fn open_tasks(dir: &Path, config: &Config) -> Result<Arc<TaskManager>, TaskStoreError> {
    let store = TaskStore::open(
        dir,
        ScopeInputs {
            mode: config.mode.as_str(),
            endpoint: config.endpoint.as_deref().unwrap_or(""),
            token: config.token.as_deref(),
        },
    )?;
    for id in store.recovered() {
        tracing::warn!(
            task = id.as_str(),
            "task was running when the server stopped; marked failed (remote outcome unknown)"
        );
    }
    TaskManager::new(
        store,
        TaskSettings {
            retention: config.task_retention,
            shutdown: config.streams.shutdown.clone(),
        },
    )
}

/// Test-only: the continuation lifetime in milliseconds (0 = already expired when issued),
/// read only in builds with the `test-knobs` feature so tests need not wait for expiry.
const CONTINUATION_TTL_ENV: &str = "SNOWLUMA_MCP_TEST_CONTINUATION_TTL_MS";

/// `configured`, unless a test overrides it through [`CONTINUATION_TTL_ENV`].
fn continuation_lifetime(configured: Duration) -> Result<Duration, String> {
    if !cfg!(feature = "test-knobs") {
        return Ok(configured);
    }
    match std::env::var(CONTINUATION_TTL_ENV) {
        Err(_) => Ok(configured),
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| format!("{CONTINUATION_TTL_ENV} must be a whole number of milliseconds")),
    }
}
