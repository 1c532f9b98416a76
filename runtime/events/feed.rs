//! How the reader task feeds the hub: status changes, events for the matching resources, and
//! the gap entry (with any recovered messages) after each outage. Every call names the
//! connection's generation, so a task that lost its place (all resources released, a new
//! connection opened) changes nothing.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::buffer::{Gap, Kept};
use super::filter::EventType;
use super::hub::{HubShared, Resource};
use super::status::{ConnectionStatus, Feed, Outage};

impl Feed for HubShared {
    /// A lifecycle or heartbeat event: the connection is alive.
    fn meta_event(&self, generation: u64, time: Option<i64>) {
        let state = self.lock();
        if let Some(c) = state.current(generation) {
            c.status.send_replace(ConnectionStatus::Connected {
                last_heartbeat: time,
            });
        }
    }

    /// An ordinary event: buffer it in every matching resource.
    ///
    /// `event` is the parsed frame, used only for filtering; `text` is what is kept.
    fn deliver(&self, generation: u64, kind: EventType, event: &Value, text: &str) {
        let mut state = self.lock();
        let Some(c) = state.current(generation) else {
            return;
        };
        if *c.status.borrow() == ConnectionStatus::Connecting {
            c.status.send_replace(ConnectionStatus::Connected {
                last_heartbeat: None,
            });
        }
        let message_id = message_id(kind, event);
        // Copied once, and only when some resource keeps it.
        let mut shared: Option<Arc<str>> = None;
        for resource in state.resources.values_mut() {
            if resource.filter.accepts(kind, event)
                && !message_id.is_some_and(|id| resource.recovered_ids.contains(&id))
            {
                let text = shared.get_or_insert_with(|| Arc::from(text)).clone();
                resource.buffer.push_entry(Kept::Event {
                    text,
                    message_id,
                    recovered: false,
                });
                resource.touch();
            }
        }
    }

    /// The socket is open: the first time (`outage` is `None`), or again after an outage,
    /// which every resource records as one gap entry after the recovered messages it keeps.
    fn opened(&self, generation: u64, outage: Option<Outage>) {
        let mut state = self.lock();
        let Some(c) = state.current(generation) else {
            return;
        };
        c.status.send_replace(ConnectionStatus::Connected {
            last_heartbeat: None,
        });
        let Some(outage) = outage else { return };
        for resource in state.resources.values_mut() {
            let from = outage.since.max(resource.created);
            let mut gap = Gap {
                from,
                to: outage.until,
                reason: outage.reason.clone(),
                recovered: None,
                recovery_error: None,
            };
            if let Some(recovery) = &outage.recovered {
                let mut kept = HashSet::new();
                for message in &recovery.messages {
                    let missed = (from..=outage.until).contains(&message.time)
                        && resource.filter.accepts(message.kind, &message.event)
                        && !kept.contains(&message.message_id)
                        && !resource.buffer.holds_message(message.message_id);
                    if missed {
                        kept.insert(message.message_id);
                        resource.buffer.push_entry(Kept::Event {
                            text: message.text.clone(),
                            message_id: Some(message.message_id),
                            recovered: true,
                        });
                    }
                }
                gap.recovered = Some(kept.len());
                gap.recovery_error =
                    (!recovery.errors.is_empty()).then(|| recovery.errors.join("; "));
                resource.recovered_ids = kept;
            }
            resource.buffer.push_entry(Kept::Gap(Arc::new(gap)));
            resource.touch();
        }
    }

    /// The socket was lost and is being reopened; resources keep what they hold.
    fn reconnecting(&self, generation: u64, status: ConnectionStatus) {
        let state = self.lock();
        if let Some(c) = state.current(generation) {
            c.status.send_replace(status);
        }
    }

    /// The groups whose missed messages a recovery asks for: every group a resource that
    /// keeps messages filters on.
    fn recovery_groups(&self) -> BTreeSet<i64> {
        let state = self.lock();
        state
            .resources
            .values()
            .filter(|r| r.filter.types.contains(&EventType::Message))
            .filter_map(|r| r.filter.group_ids.as_ref())
            .flatten()
            .copied()
            .collect()
    }

    fn connection_stopped(&self, generation: u64, status: ConnectionStatus) {
        let state = self.lock();
        if let Some(c) = state.current(generation) {
            c.status.send_replace(status);
            state.resources.values().for_each(Resource::touch);
        }
    }
}

/// A message event's `message_id`, which recovery deduplicates by.
fn message_id(kind: EventType, event: &Value) -> Option<i64> {
    (kind == EventType::Message)
        .then(|| event.get("message_id").and_then(Value::as_i64))
        .flatten()
}
