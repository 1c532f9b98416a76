//! The signed, single-use continuation state of the modern input round: `Continuations`
//! issuing states, then redeeming genuine, tampered, forged, replayed, expired or misused
//! ones, against a model of what each call must answer.
//!
//! Input: text lines of tab-separated fields:
//! - `open <tool> <args>`: open a prompt for a call of `tool` with the JSON object `args`;
//! - `reopen <state> <tool> <args>`: swap a state for a fresh one;
//! - `resume <state> <tool> <args> <answer>`: redeem a state with an answer
//!   (`accept:<params_json>`, `decline` or `cancel`);
//! - `tick <ms>`: the clock moves on (prompts live 60 s here).
//!
//! `<state>` is `#n` (the n-th state issued so far), `#n/k/c` (that state with its k-th
//! character replaced by `c`) or a literal string, such as a state another process issued.
//!
//! Checked: a state is accepted only if this registry issued exactly that string, for that
//! tool and those arguments (keys in any order), it has not expired and was not redeemed
//! before; every other case gets its own error; an accepted answer is validated exactly as
//! `complete` validates it; the pending count and the limit of open prompts hold.

#![no_main]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use snowluma_mcp::input::{Answer, Clock, Continuations, InputError, MAX_PENDING, complete};

/// Every prompt of this run belongs to one client (ownership across clients is tested in
/// tests/http_principals.rs).
const OWNER: &str = "default";
const LIFETIME: Duration = Duration::from_secs(60);

#[derive(Clone, Default)]
struct ManualClock(Arc<AtomicU64>);

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

struct Issued {
    state: String,
    tool: String,
    /// The arguments with object keys sorted at every level, as JSON text.
    canonical: String,
    expires_ms: u64,
    used: bool,
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn canonical(args: &Map<String, Value>) -> String {
    sorted(&Value::Object(args.clone())).to_string()
}

struct Model {
    registry: Continuations,
    clock: ManualClock,
    issued: Vec<Issued>,
    /// Index into `issued` by state string.
    by_state: HashMap<String, usize>,
}

impl Model {
    fn now_ms(&self) -> u64 {
        self.clock.0.load(Ordering::SeqCst)
    }

    fn pending(&self) -> usize {
        let now = self.now_ms();
        self.issued
            .iter()
            .filter(|s| !s.used && s.expires_ms > now)
            .count()
    }

    fn open(&mut self, tool: &str, args: &Map<String, Value>) {
        let room = self.pending() < MAX_PENDING;
        match self.registry.open(OWNER, tool, args) {
            Ok(pending) => {
                assert!(room, "a prompt was opened past the limit");
                assert_eq!(pending.expires_in, LIFETIME);
                let parts: Vec<&str> = pending.state.split('.').collect();
                assert_eq!(parts.len(), 3);
                assert_eq!(parts[0], "sli1");
                assert!(
                    pending
                        .state
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                    "a state a client cannot echo as it is: {}",
                    pending.state
                );
                self.issue(pending.state, tool, args);
            }
            Err(error) => {
                assert!(!room, "open failed with room left: {error:?}");
                assert_eq!(
                    error,
                    InputError::TooManyPending {
                        limit: MAX_PENDING,
                        share: None,
                    }
                );
            }
        }
        assert_eq!(self.registry.pending(), self.pending());
    }

    fn issue(&mut self, state: String, tool: &str, args: &Map<String, Value>) {
        let index = self.issued.len();
        assert!(
            self.by_state.insert(state.clone(), index).is_none(),
            "a state issued twice"
        );
        self.issued.push(Issued {
            state,
            tool: tool.to_string(),
            canonical: canonical(args),
            expires_ms: self.now_ms() + LIFETIME.as_millis() as u64,
            used: false,
        });
    }

    /// What redeeming `state` must answer: the index of the state it uses up, or the error.
    fn expect(
        &self,
        state: &str,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<usize, InputError> {
        let Some(&index) = self.by_state.get(state) else {
            return Err(InputError::UnknownState);
        };
        let issued = &self.issued[index];
        if issued.tool != tool {
            return Err(InputError::WrongTool {
                issued_for: issued.tool.clone(),
                used_with: tool.to_string(),
            });
        }
        if issued.canonical != canonical(args) {
            return Err(InputError::WrongArguments);
        }
        if issued.expires_ms <= self.now_ms() {
            return Err(InputError::Expired {
                lifetime_secs: LIFETIME.as_secs(),
            });
        }
        if issued.used {
            return Err(InputError::Replayed);
        }
        Ok(index)
    }

    fn reopen(&mut self, state: &str, tool: &str, args: &Map<String, Value>) {
        let expected = self.expect(state, tool, args);
        match (self.registry.reopen(OWNER, tool, args, state), expected) {
            (Ok(pending), Ok(index)) => {
                self.issued[index].used = true;
                self.issue(pending.state, tool, args);
            }
            (Err(got), Err(want)) => assert_eq!(got, want, "state {state:?}"),
            (got, want) => panic!("reopen {state:?}: got {got:?}, expected {want:?}"),
        }
    }

    fn resume(&mut self, state: &str, tool: &str, args: &Map<String, Value>, answer: Answer) {
        let expected = self.expect(state, tool, args);
        let got = self
            .registry
            .resume(OWNER, tool, args, state, answer.clone());
        match expected {
            Ok(index) => {
                self.issued[index].used = true;
                // Past the state, the answer is judged exactly as `complete` judges it.
                let direct = complete(args, answer);
                assert_eq!(format!("{got:?}"), format!("{direct:?}"));
            }
            Err(want) => assert_eq!(got.unwrap_err(), want, "state {state:?}"),
        }
    }

    /// `#n`, `#n/k/c` or a literal state string.
    fn state(&self, reference: &str) -> String {
        let Some(spec) = reference.strip_prefix('#') else {
            return reference.to_string();
        };
        if self.issued.is_empty() {
            return reference.to_string();
        }
        let mut parts = spec.splitn(3, '/');
        let n: usize = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let mut state = self.issued[n % self.issued.len()].state.clone();
        if let (Some(k), Some(c)) = (parts.next(), parts.next()) {
            let k = k.parse::<usize>().unwrap_or(0) % state.len();
            let c = c.chars().next().unwrap_or('A');
            state.replace_range(k..k + 1, &c.to_string());
        }
        state
    }
}

fn args(text: Option<&str>) -> Map<String, Value> {
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Object(map))) => map,
        _ => Map::new(),
    }
}

fn answer(text: Option<&str>) -> Answer {
    match text.unwrap_or_default() {
        "decline" => Answer::Decline,
        "cancel" => Answer::Cancel,
        other => Answer::Accept(other.strip_prefix("accept:").unwrap_or(other).to_string()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let clock = ManualClock::default();
    let registry =
        Continuations::with_clock(Box::new(clock.clone()), LIFETIME).expect("a random key");
    let mut model = Model {
        registry,
        clock,
        issued: Vec::new(),
        by_state: HashMap::new(),
    };
    for line in text.lines().take(400) {
        let mut fields = line.split('\t');
        match fields.next().unwrap_or_default() {
            "open" => {
                let tool = fields.next().unwrap_or_default();
                model.open(tool, &args(fields.next()));
            }
            "reopen" => {
                let state = model.state(fields.next().unwrap_or_default());
                let tool = fields.next().unwrap_or_default();
                model.reopen(&state, tool, &args(fields.next()));
            }
            "resume" => {
                let state = model.state(fields.next().unwrap_or_default());
                let tool = fields.next().unwrap_or_default();
                let args = args(fields.next());
                model.resume(&state, tool, &args, answer(fields.next()));
            }
            "tick" => {
                let ms: u64 = fields.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
                model.clock.0.fetch_add(ms.min(1 << 40), Ordering::SeqCst);
            }
            _ => {}
        }
    }
    assert_eq!(model.registry.pending(), model.pending());
});
