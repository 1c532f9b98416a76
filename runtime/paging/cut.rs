//! Cutting one result into pages: which array is paged, how many of its elements fit, and
//! what an element that alone exceeds the budget becomes.

use serde_json::{Map, Value, json};

use crate::outcome::{Diagnostics, ToolReply, json_kind, reply_text};

/// The key of `diagnostics` that describes a page.
pub const PAGE_KEY: &str = "page";

/// The characters of a reply's text content: its summary line (paged replies only) and the
/// JSON of `{result, diagnostics}`.
pub fn text_chars(reply: &ToolReply) -> usize {
    let summary = reply
        .diagnostics
        .summary
        .as_deref()
        .map_or(0, |s| s.chars().count());
    summary + reply_text(reply).chars().count()
}

/// Whether the reply's text fits `budget` characters.
pub fn fits(reply: &ToolReply, budget: usize) -> bool {
    text_chars(reply) <= budget
}

/// A result split for paging: the result with its paged array emptied (the skeleton), where
/// that array sits, and its elements. Held once per paged call; every page is built from it.
#[derive(Debug)]
pub struct Held {
    skeleton: Value,
    /// Object keys from the result to the paged array; `None` when the result has no
    /// non-empty array and is itself the one element.
    path: Option<Vec<String>>,
    items: Vec<Value>,
    /// Characters of each element's JSON, so a page is sized without serializing it twice.
    item_chars: Vec<usize>,
    diagnostics: Diagnostics,
    is_error: bool,
}

impl Held {
    /// Splits a reply's result at its largest array (by JSON length; the result itself when
    /// it is an array): `{status, retcode, data: [...]}` pages `data`, `{data: {list: [...]}}`
    /// pages the list.
    pub fn split(mut reply: ToolReply) -> Held {
        let mut skeleton = reply.take_result();
        let path = largest_array(&skeleton, &mut Vec::new()).map(|(path, _)| path);
        let items = match &path {
            Some(path) => match array_at(&mut skeleton, path) {
                Some(array) => std::mem::take(array),
                None => Vec::new(),
            },
            None => vec![std::mem::take(&mut skeleton)],
        };
        let item_chars = items.iter().map(chars_of).collect();
        Held {
            skeleton,
            path,
            items,
            item_chars,
            diagnostics: *reply.diagnostics,
            is_error: reply.is_error,
        }
    }

    /// How many elements the paged array holds.
    pub fn total(&self) -> usize {
        self.items.len()
    }

    /// Roughly what holding this result costs, for the store's memory bound.
    pub fn bytes(&self) -> usize {
        self.item_chars.iter().sum::<usize>() + chars_of(&self.skeleton) + self.items.len() * 16
    }

    /// Where the paged array sits, as clients see it (`result.data.list`).
    fn place(&self) -> String {
        match &self.path {
            Some(path) => std::iter::once("result")
                .chain(path.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("."),
            None => "result".into(),
        }
    }

    /// The page starting at element `from` that fits `budget` characters. `continuation`
    /// makes the handle for the element after the page (`None`: the rest cannot be held).
    pub fn page(
        &self,
        from: usize,
        budget: usize,
        continuation: &mut dyn FnMut(usize) -> Option<String>,
    ) -> ToolReply {
        let from = from.min(self.total());
        let left = self.total() - from;
        // The page without elements, with the widest numbers and a handle of full length, is
        // the most any page costs besides its elements.
        // (Marked truncated: that summary is the longest.)
        let widest = Page {
            from,
            returned: self.total(),
            truncated: true,
            continuation: (left > 0).then(|| "x".repeat(super::handle::TOKEN_CHARS)),
        };
        let overhead = text_chars(&self.build(from, 0, None, &widest));
        let room = budget.saturating_sub(overhead);
        let mut count = 0;
        let mut used = 0;
        while count < left {
            let next = self.item_chars[from + count] + usize::from(count > 0);
            if used + next > room {
                break;
            }
            used += next;
            count += 1;
        }
        let truncated = (count == 0 && left > 0).then(|| truncate(&self.items[from], room));
        let returned = if truncated.is_some() { 1 } else { count };
        let next = from + returned;
        let page = Page {
            from,
            returned,
            truncated: truncated.is_some(),
            continuation: if next < self.total() {
                continuation(next)
            } else {
                None
            },
        };
        let reply = self.build(from, count, truncated, &page);
        if page.continuation.is_none() && next < self.total() {
            return reply.with_detail("rest_unavailable", json!(true));
        }
        reply
    }

    /// The reply holding elements `from..from + count` (or the one truncated element).
    fn build(&self, from: usize, count: usize, truncated: Option<Value>, page: &Page) -> ToolReply {
        let elements = match truncated {
            Some(element) => vec![element],
            None => self.items[from..from + count].to_vec(),
        };
        let mut result = self.skeleton.clone();
        match &self.path {
            Some(path) => {
                if let Some(array) = array_at(&mut result, path) {
                    *array = elements;
                }
            }
            None => result = elements.into_iter().next().unwrap_or(Value::Null),
        }
        let mut reply = ToolReply::ok(result);
        reply.is_error = self.is_error;
        reply.diagnostics = Box::new(self.diagnostics.clone());
        reply.diagnostics.extra.insert(
            PAGE_KEY.into(),
            json!({
                "returned": page.returned,
                "total": self.total(),
                "from": page.from,
                "path": self.place(),
                "truncated": page.truncated,
                "continuation": page.continuation,
            }),
        );
        reply.diagnostics.summary = Some(page.summary(&self.place(), self.total()));
        reply
    }
}

/// What one page holds.
struct Page {
    from: usize,
    returned: usize,
    truncated: bool,
    continuation: Option<String>,
}

impl Page {
    /// The line the page's text starts with: what it holds, out of how many, and how to get
    /// the rest.
    fn summary(&self, place: &str, total: usize) -> String {
        let first = self.from + 1;
        let last = self.from + self.returned;
        let cut = if self.truncated {
            " (that element alone exceeds the budget: it is cut short and marked truncated: true)"
        } else {
            ""
        };
        let rest = if self.continuation.is_some() {
            "for the rest call read_more with diagnostics.page.continuation (or ask for less: narrower params or a larger budget)"
        } else if last < total {
            "the rest is not kept (too large to hold): call the tool again with narrower params"
        } else {
            "this is the last page"
        };
        format!("Page: elements {first}-{last} of {total} in {place}{cut}; {rest}.\n")
    }
}

/// The path to the largest non-empty array reachable through objects, with its JSON length.
fn largest_array(value: &Value, path: &mut Vec<String>) -> Option<(Vec<String>, usize)> {
    match value {
        Value::Array(items) if !items.is_empty() => Some((path.clone(), chars_of(value))),
        Value::Object(map) => {
            let mut best: Option<(Vec<String>, usize)> = None;
            for (key, member) in map {
                path.push(key.clone());
                if let Some(found) = largest_array(member, path)
                    && best.as_ref().is_none_or(|(_, size)| found.1 > *size)
                {
                    best = Some(found);
                }
                path.pop();
            }
            best
        }
        _ => None,
    }
}

/// The array at `path` (object keys from `value`).
fn array_at<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Vec<Value>> {
    let mut at = value;
    for key in path {
        at = at.as_object_mut()?.get_mut(key)?;
    }
    at.as_array_mut()
}

fn chars_of(value: &Value) -> usize {
    serde_json::to_string(value).map_or(0, |text| text.chars().count())
}

/// An element that alone exceeds `room` characters, cut to fit without cutting inside a
/// string or a number: an object keeps every key, its largest members become null until it
/// fits, and it is marked `truncated: true`; anything else becomes a note of what it was.
fn truncate(element: &Value, room: usize) -> Value {
    let Value::Object(map) = element else {
        return json!({ "truncated": true, "was": json_kind(element), "chars": chars_of(element) });
    };
    let mut out: Map<String, Value> = map.clone();
    out.insert("truncated".into(), Value::Bool(true));
    let mut members: Vec<(String, usize)> = map
        .iter()
        .map(|(key, member)| (key.clone(), chars_of(member)))
        .collect();
    members.sort_by_key(|member| std::cmp::Reverse(member.1));
    for (key, _) in members {
        if chars_of(&Value::Object(out.clone())) <= room {
            break;
        }
        out.insert(key, Value::Null);
    }
    let out = Value::Object(out);
    if chars_of(&out) <= room {
        out
    } else {
        json!({ "truncated": true, "was": "an object", "keys": map.len(), "chars": chars_of(element) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Value {
        let list: Vec<Value> = (0..n)
            .map(|i| json!({ "user_id": 10_000 + i, "nickname": format!("成员{i}"), "role": "member" }))
            .collect();
        json!({ "status": "ok", "retcode": 0, "data": list })
    }

    fn pages(result: Value, budget: usize) -> Vec<ToolReply> {
        let held = Held::split(ToolReply::ok(result));
        let mut out = Vec::new();
        let mut from = Some(0);
        while let Some(at) = from {
            let reply = held.page(at, budget, &mut |next| {
                Some(format!(
                    "{next:0>width$}",
                    width = crate::paging::TOKEN_CHARS
                ))
            });
            let page = &reply.diagnostics.extra[PAGE_KEY];
            from = page["continuation"]
                .as_str()
                .map(|c| c.trim_start_matches('0').parse().unwrap_or(0));
            out.push(reply);
        }
        out
    }

    #[test]
    fn pages_concatenate_to_the_array_and_fit() {
        let full = members(3000);
        for budget in [2000, 8000] {
            let replies = pages(full.clone(), budget);
            assert!(replies.len() > 1);
            let mut joined = Vec::new();
            for reply in &replies {
                assert!(
                    text_chars(reply) <= budget,
                    "{} > {budget}",
                    text_chars(reply)
                );
                assert_eq!(reply.result["status"], "ok");
                assert_eq!(reply.result["retcode"], 0);
                joined.extend(reply.result["data"].as_array().unwrap().iter().cloned());
            }
            assert_eq!(Value::Array(joined), full["data"]);
            let last = &replies.last().unwrap().diagnostics.extra[PAGE_KEY];
            assert!(last["continuation"].is_null());
        }
    }

    #[test]
    fn a_nested_list_is_paged_and_siblings_kept() {
        let list: Vec<Value> = (0..500)
            .map(|i| json!({ "message_id": i, "raw_message": "x".repeat(40) }))
            .collect();
        let full =
            json!({ "status": "ok", "retcode": 0, "data": { "messages": list, "extra": 1 } });
        let replies = pages(full.clone(), 2000);
        let first = &replies[0];
        assert_eq!(
            first.diagnostics.extra[PAGE_KEY]["path"],
            "result.data.messages"
        );
        assert_eq!(first.result["data"]["extra"], 1);
        assert!(
            first
                .diagnostics
                .summary
                .as_deref()
                .unwrap()
                .starts_with("Page: elements 1-")
        );
    }

    #[test]
    fn an_oversize_element_is_truncated_and_marked() {
        let big = json!({ "status": "ok", "retcode": 0, "data": [ { "id": 1, "text": "长".repeat(5000) }, { "id": 2 } ] });
        let replies = pages(big, 2000);
        let first = &replies[0];
        assert!(text_chars(first) <= 2000);
        assert_eq!(first.result["data"][0]["truncated"], true);
        assert_eq!(first.result["data"][0]["id"], 1);
        assert!(first.result["data"][0]["text"].is_null());
        assert_eq!(first.diagnostics.extra[PAGE_KEY]["truncated"], true);
        assert_eq!(replies[1].result["data"][0]["id"], 2);
    }
}
