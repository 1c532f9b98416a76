//! Phase 2: events from the WebSocket fake through 16 event resources.
//!
//! Sixteen `subscribe_events` resources with different filters (one keeps everything, the
//! others a category, a group, a user or a combination); half of them are also watched with
//! `resources/subscribe`, so change notifications flow. The fake pushes the events in batches
//! of at most 250, fewer than the 256 a resource keeps: after each batch the driver reads the
//! keep-everything resource with `read_events` until the batch's last event is there (the hub
//! buffers an event in every matching resource under one lock, so then every resource has it),
//! then reads the other fifteen once each, pipelined, alternately with `resources/read
//! ?after=` and `read_events wait_ms: 0`. Each resource must return exactly the events its
//! filter accepts, in order, with no gap: the driver's own copy of the filter rule is the
//! oracle. Evictions of events already read are normal (reads do not consume) and reported as
//! the buffers' `dropped_events`. At the end every resource is released (four of the watched
//! ones with `resources/unsubscribe`, the rest with `unsubscribe_events`) and the shared socket
//! must close.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_snowluma_ws::{
    FakeEventSocket, friend_request, group_message, group_poke, private_message,
    private_message_sent,
};
use crate::{Client, PhaseReport};

const SELF: i64 = 10001;
const GROUPS: [i64; 4] = [20001, 20002, 20003, 20004];
const USERS: [i64; 4] = [30001, 30002, 30003, 30004];
/// Events per push; below the 256 a resource keeps, so a reader that catches up after every
/// batch never falls behind the buffer.
const BATCH: usize = 250;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Notice,
    Request,
}

/// What the filters look at in one generated event.
struct Shape {
    kind: Kind,
    group: Option<i64>,
    user: Option<i64>,
}

/// Event `seq` of the run: its frame text and shape. Ten kinds in turn: five group messages,
/// two private messages, the bot's own message, a group poke and a friend request.
fn event(seq: usize) -> (String, Shape) {
    let group = GROUPS[seq % 4];
    let user = USERS[(seq / 4) % 4];
    let text = format!("soak {seq}");
    let (mut value, shape) = match seq % 10 {
        0..=4 => (
            group_message(SELF, group, user, &text),
            Shape {
                kind: Kind::Message,
                group: Some(group),
                user: Some(user),
            },
        ),
        5 | 6 => (
            private_message(SELF, user, &text),
            Shape {
                kind: Kind::Message,
                group: None,
                user: Some(user),
            },
        ),
        7 => (
            private_message_sent(SELF, &text),
            Shape {
                kind: Kind::Message,
                group: None,
                user: Some(SELF),
            },
        ),
        8 => (
            group_poke(SELF, group, user),
            Shape {
                kind: Kind::Notice,
                group: Some(group),
                user: Some(user),
            },
        ),
        _ => (
            friend_request(SELF, user),
            Shape {
                kind: Kind::Request,
                group: None,
                user: Some(user),
            },
        ),
    };
    value["soak_seq"] = json!(seq);
    (value.to_string(), shape)
}

/// A subscription's filter, as sent and as the oracle applies it.
struct Filter {
    kinds: Option<Vec<Kind>>,
    groups: Option<Vec<i64>>,
    users: Option<Vec<i64>>,
}

impl Filter {
    fn arguments(&self) -> Value {
        let mut args = json!({ "self_id": SELF });
        if let Some(kinds) = &self.kinds {
            let names: Vec<&str> = kinds
                .iter()
                .map(|k| match k {
                    Kind::Message => "message",
                    Kind::Notice => "notice",
                    Kind::Request => "request",
                })
                .collect();
            args["types"] = json!(names);
        }
        if let Some(groups) = &self.groups {
            args["group_ids"] = json!(groups);
        }
        if let Some(users) = &self.users {
            args["user_ids"] = json!(users);
        }
        args
    }

    /// The contract: the category is one of `types`, and each id list, when given, contains
    /// the event's id (an event without that id is not kept).
    fn accepts(&self, shape: &Shape) -> bool {
        let id_ok = |wanted: &Option<Vec<i64>>, actual: Option<i64>| match wanted {
            None => true,
            Some(ids) => actual.is_some_and(|id| ids.contains(&id)),
        };
        self.kinds.as_ref().is_none_or(|k| k.contains(&shape.kind))
            && id_ok(&self.groups, shape.group)
            && id_ok(&self.users, shape.user)
    }
}

fn filters() -> Vec<Filter> {
    let f = |kinds: Option<Vec<Kind>>, groups: Option<Vec<i64>>, users: Option<Vec<i64>>| Filter {
        kinds,
        groups,
        users,
    };
    let mut list = vec![
        f(None, None, None), // keeps everything: the pacer
        f(Some(vec![Kind::Message]), None, None),
        f(Some(vec![Kind::Notice]), None, None),
        f(Some(vec![Kind::Request]), None, None),
    ];
    list.extend(GROUPS.iter().map(|g| f(None, Some(vec![*g]), None)));
    list.extend(USERS.iter().map(|u| f(None, None, Some(vec![*u]))));
    list.push(f(
        None,
        Some(vec![GROUPS[0], GROUPS[1]]),
        Some(vec![USERS[0]]),
    ));
    list.push(f(Some(vec![Kind::Message]), Some(vec![GROUPS[2]]), None));
    list.push(f(Some(vec![Kind::Notice, Kind::Request]), None, None));
    list.push(f(Some(vec![Kind::Message]), None, Some(vec![SELF])));
    list
}

/// One resource as the driver follows it.
struct Followed {
    uri: String,
    filter: Filter,
    /// The `next_cursor` of the last read; `None` before the first.
    cursor: Option<String>,
    /// The sequence numbers still due from this resource, oldest first.
    due: std::collections::VecDeque<usize>,
    delivered: u64,
    expected: u64,
    dropped: u64,
    gaps: u64,
}

/// The page inside a reply to `read_events` or `resources/read`.
fn page_of(reply: &Value) -> Result<Value, String> {
    if let Some(error) = reply.get("error") {
        return Err(format!("protocol error {error}"));
    }
    let result = &reply["result"];
    if let Some(text) = result["contents"][0]["text"].as_str() {
        return serde_json::from_str(text).map_err(|e| format!("resource text is not JSON: {e}"));
    }
    if result["isError"].as_bool() == Some(false) {
        return Ok(result["structuredContent"]["result"].clone());
    }
    Err(format!("unexpected reply {reply}"))
}

/// Takes a page's entries off the resource's due list; the error names the first mismatch.
fn consume(res: &mut Followed, page: &Value) -> Result<usize, String> {
    let entries = page["entries"].as_array().ok_or("a page without entries")?;
    if page["gap"] == json!(true) {
        res.gaps += 1;
    }
    res.dropped = page["dropped_events"].as_u64().unwrap_or(res.dropped);
    for entry in entries {
        let seq = entry["event"]["soak_seq"].as_u64().map(|s| s as usize);
        match (seq, res.due.pop_front()) {
            (Some(got), Some(want)) if got == want => {}
            (got, want) => {
                return Err(format!("{}: event {got:?} where {want:?} was due", res.uri));
            }
        }
    }
    res.delivered += entries.len() as u64;
    if let Some(next) = page["next_cursor"].as_str() {
        res.cursor = Some(next.to_string());
    }
    Ok(entries.len())
}

fn read_events_args(res: &Followed, wait_ms: u64) -> Value {
    let mut args = json!({ "uri": res.uri, "wait_ms": wait_ms, "limit": 256 });
    if let Some(cursor) = &res.cursor {
        args["after"] = json!(cursor);
    }
    json!({ "name": "read_events", "arguments": args })
}

fn resource_read_params(res: &Followed) -> Value {
    let uri = match &res.cursor {
        Some(cursor) => format!("{}?after={cursor}", res.uri),
        None => res.uri.clone(),
    };
    json!({ "uri": uri })
}

pub fn run(client: &mut Client, ws: &FakeEventSocket, total: usize, report: &mut PhaseReport) {
    let pid = client.peer.pid();
    report.curve.mark("start", pid);
    let began = Instant::now();
    let mut resources: Vec<Followed> = Vec::new();
    for (i, filter) in filters().into_iter().enumerate() {
        let reply = client.call(
            "tools/call",
            &json!({ "name": "subscribe_events", "arguments": filter.arguments() }),
        );
        let Some(uri) = reply["result"]["structuredContent"]["result"]["uri"].as_str() else {
            report.problem(format!("subscribe_events failed: {reply}"));
            return;
        };
        let uri = uri.to_string();
        if i % 2 == 1 {
            let watched = client.call("resources/subscribe", &json!({ "uri": uri }));
            if watched.get("error").is_some() {
                report.problem(format!("resources/subscribe failed: {watched}"));
            }
        }
        report.count("subscribe_events");
        resources.push(Followed {
            uri,
            filter,
            cursor: None,
            due: Default::default(),
            delivered: 0,
            expected: 0,
            dropped: 0,
            gaps: 0,
        });
    }

    let mut pushed = 0;
    let mut batches = 0usize;
    while pushed < total {
        let end = (pushed + BATCH).min(total);
        let mut frames = Vec::with_capacity(end - pushed);
        for seq in pushed..end {
            let (text, shape) = event(seq);
            for res in resources.iter_mut() {
                if res.filter.accepts(&shape) {
                    res.due.push_back(seq);
                    res.expected += 1;
                }
            }
            frames.push(text);
        }
        ws.push_batch(Arc::new(frames));
        pushed = end;
        batches += 1;

        // The pacer: wait on the keep-everything resource until the batch has arrived.
        let wait_began = Instant::now();
        while !resources[0].due.is_empty() {
            if wait_began.elapsed() > Duration::from_secs(30) {
                report.problem(format!(
                    "events {}.. did not arrive within 30 s",
                    resources[0].due[0]
                ));
                return;
            }
            let reply = client.call("tools/call", &read_events_args(&resources[0], 5_000));
            match page_of(&reply).and_then(|p| consume(&mut resources[0], &p)) {
                Ok(_) => report.count("read_events (pacer)"),
                Err(problem) => {
                    report.problem(problem);
                    return;
                }
            }
        }

        // Everyone else, once each, pipelined.
        let mut pending: HashMap<u64, usize> = HashMap::new();
        for (i, res) in resources.iter().enumerate().skip(1) {
            let id = if (i + batches).is_multiple_of(2) {
                client
                    .peer
                    .send("resources/read", &resource_read_params(res))
            } else {
                client.peer.send("tools/call", &read_events_args(res, 0))
            };
            pending.insert(id, i);
        }
        client.peer.flush();
        while !pending.is_empty() {
            let (id, reply) = client.reply();
            let Some(i) = pending.remove(&id) else {
                report.problem(format!("a reply with id {id}, which is not in flight"));
                continue;
            };
            let label = if reply["result"].get("contents").is_some() {
                "resources/read"
            } else {
                "read_events"
            };
            match page_of(&reply).and_then(|p| consume(&mut resources[i], &p)) {
                Ok(_) => report.count(label),
                Err(problem) => report.problem(problem),
            }
        }
        report.curve.progress(pushed, total, pid);
    }
    report.done = pushed;

    let released_began = Instant::now();
    for (i, res) in resources.iter().enumerate() {
        let reply = if i % 4 == 1 {
            client.call("resources/unsubscribe", &json!({ "uri": res.uri }))
        } else {
            client.call(
                "tools/call",
                &json!({ "name": "unsubscribe_events", "arguments": { "uri": res.uri } }),
            )
        };
        let failed = reply.get("error").is_some() || reply["result"]["isError"] == json!(true);
        if failed {
            report.problem(format!("releasing {} failed: {reply}", res.uri));
        } else {
            report.count(if i % 4 == 1 {
                "resources/unsubscribe"
            } else {
                "unsubscribe_events"
            });
        }
    }
    // The last release closes the shared socket with a close frame.
    while ws.open_connections() > 0 && released_began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    report.elapsed = began.elapsed();
    report.curve.mark("end", pid);
    if ws.open_connections() != 0 {
        report.problem("the event socket stayed open after every resource was released".into());
    }

    let expected: u64 = resources.iter().map(|r| r.expected).sum();
    let delivered: u64 = resources.iter().map(|r| r.delivered).sum();
    let missing: u64 = resources.iter().map(|r| r.due.len() as u64).sum();
    let gaps: u64 = resources.iter().map(|r| r.gaps).sum();
    let dropped: u64 = resources.iter().map(|r| r.dropped).sum();
    let mut per: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for (i, r) in resources.iter().enumerate() {
        per.insert(i, (r.delivered, r.expected));
    }
    report.note(format!(
        "{total} events pushed in {batches} batches; {delivered} deliveries of {expected} \
         expected across {} resources; missing {missing}; reads with a gap {gaps}",
        resources.len()
    ));
    report.note(format!(
        "evicted after being read (buffer bound 256, reads do not consume): {dropped}; \
         per resource delivered: {}",
        per.values()
            .map(|(d, _)| d.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    report.note(format!(
        "WebSocket handshakes {}, client close frames {}",
        ws.handshakes(),
        ws.client_closes()
    ));
    report.note(format!(
        "{:.0} deliveries/s",
        delivered as f64 / report.elapsed.as_secs_f64()
    ));
    if missing > 0 || gaps > 0 || delivered != expected {
        report.problem(format!(
            "events lost: {delivered} of {expected} delivered, {gaps} gaps"
        ));
    }
}
