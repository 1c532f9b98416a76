//! What an action's result holds, for questions that name the answer rather than the action.
//! `how many X` is answered by a result that counts X (`member_count` in get_group_info,
//! `file_count` in get_group_file_system_info): without this, `how many members does group 1
//! have` finds the member list, which holds the members but not their number. `who …` is
//! answered by a result that holds people (`user_id`, `nickname`).

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, quote};
use serde_json::Value;

use super::analyze::Analyzer;
use super::lists;
use crate::ir::Catalog;

/// The emitted tables: per token, the actions whose result counts it (`TOKEN_COUNTS`) and
/// those with a field it names (`TOKEN_FIELDS`); per action, whether its result holds people
/// (`PEOPLE_RESULTS`).
pub struct Tables {
    pub token_counts: TokenStream,
    pub token_fields: TokenStream,
    pub people_results: TokenStream,
}

/// The tables for `tokens` (the index's, in its order), with their synonyms.
pub fn tables(
    catalog: &Catalog,
    analyzer: &Analyzer,
    tokens: impl Iterator<Item = String> + Clone,
    synonyms: &BTreeMap<String, Vec<String>>,
) -> Tables {
    let normalized = |words: BTreeSet<String>| -> BTreeSet<String> {
        words.iter().map(|w| analyzer.normalize(w)).collect()
    };
    let counted: Vec<BTreeSet<String>> = catalog
        .actions
        .iter()
        .map(|a| normalized(counted_words(&a.returns_schema)))
        .collect();
    let told: Vec<BTreeSet<String>> = catalog
        .actions
        .iter()
        .map(|a| normalized(field_heads(&a.returns_schema)))
        .collect();
    let action_lists = |words: &[BTreeSet<String>]| {
        lists(
            token_actions(tokens.clone(), synonyms, words)
                .into_iter()
                .map(|actions| {
                    actions
                        .into_iter()
                        .map(|a| Literal::u16_unsuffixed(a as u16).into_token_stream())
                        .collect()
                }),
        )
    };
    let people = catalog
        .actions
        .iter()
        .map(|a| holds_people(&a.returns_schema));
    Tables {
        token_counts: action_lists(&counted),
        token_fields: action_lists(&told),
        people_results: quote! { [#(#people),*] },
    }
}

/// A field name part that makes the field a count (`member_count`, `pic_num`,
/// `total_chunks`).
const COUNT_PARTS: [&str; 3] = ["count", "num", "total"];
/// Parts that say which count it is, not what is counted (`max_member_count`).
const QUALIFIERS: [&str; 6] = ["max", "limit", "remain", "new", "today", "used"];

/// The words naming what a result schema counts, as written in its field names. What follows
/// `for` is whose count it is (`remain_at_all_count_for_group`), not what is counted.
pub fn counted_words(schema: &Value) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    fields(schema, &mut |field| counted_in(field, &mut words));
    words
}

fn counted_in(field: &str, words: &mut BTreeSet<String>) {
    let parts: Vec<&str> = field.split('_').take_while(|part| *part != "for").collect();
    if !parts.iter().any(|part| COUNT_PARTS.contains(part)) {
        return;
    }
    words.extend(
        parts
            .into_iter()
            .filter(|part| !part.is_empty())
            .filter(|part| !COUNT_PARTS.contains(part) && !QUALIFIERS.contains(part))
            .map(str::to_string),
    );
}

/// Field name ends that say little about what a result tells: ids (every result has some),
/// containers and flags.
const VAGUE_HEADS: [&str; 14] = [
    "id", "uin", "group", "message", "messages", "msg", "data", "list", "info", "type", "flag",
    "result", "ok", "more",
];

/// The last word of each field name in a result schema, at any depth (`card`, `title`,
/// `group_name` -> name, `lastSentTime` -> time): what the result tells, but for
/// [`VAGUE_HEADS`].
pub fn field_heads(schema: &Value) -> BTreeSet<String> {
    let mut heads = BTreeSet::new();
    fields(schema, &mut |field| {
        let head = field.rsplit('_').next().unwrap_or(field);
        // camelCase: the last capitalized word (`lastSentTime` -> time).
        let head = match head.rfind(|c: char| c.is_ascii_uppercase()) {
            Some(at) if at > 0 => &head[at..],
            _ => head,
        };
        let head = head.to_lowercase();
        if !head.is_empty() && !VAGUE_HEADS.contains(&head.as_str()) {
            heads.insert(head);
        }
    });
    heads
}

/// Calls `each` with every property name in the schema, at any depth.
fn fields(schema: &Value, each: &mut impl FnMut(&str)) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                properties.keys().for_each(|field| each(field));
            }
            map.values().for_each(|value| fields(value, each));
        }
        Value::Array(items) => items.iter().for_each(|item| fields(item, each)),
        _ => {}
    }
}

/// Field names that identify a person (a QQ user) in a result.
const PERSON_FIELDS: [&str; 5] = ["user_id", "uin", "tinyId", "nickname", "nick"];

/// Whether a result schema holds people: a field, at any depth, that identifies a user.
pub fn holds_people(schema: &Value) -> bool {
    let mut found = false;
    fields(schema, &mut |field| {
        found |= PERSON_FIELDS.contains(&field)
            || field.ends_with("_uin")
            || field.ends_with("_user_id");
    });
    found
}

/// Per token (in index order): the actions with a word in `words` (normalized like tokens)
/// that the token, or a synonym of it, is: the actions whose result counts it, or tells it.
pub fn token_actions(
    tokens: impl Iterator<Item = String>,
    synonyms: &BTreeMap<String, Vec<String>>,
    words: &[BTreeSet<String>],
) -> Vec<Vec<usize>> {
    tokens
        .map(|token| {
            let others = synonyms.get(&token).into_iter().flatten();
            let names: BTreeSet<&String> = std::iter::once(&token).chain(others).collect();
            words
                .iter()
                .enumerate()
                .filter(|(_, words)| words.iter().any(|w| names.contains(w)))
                .map(|(action, _)| action)
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn count_fields_name_what_they_count() {
        let schema = json!({
            "type": "object",
            "properties": {
                "member_count": {"type": "integer"},
                "max_member_count": {"type": "integer"},
                "remain_at_all_count_for_group": {"type": "integer"},
                "group_name": {"type": "string"},
                "files": {"type": "array", "items": {"type": "object",
                    "properties": {"pic_num": {"type": "integer"}, "total_count": {}}}}
            }
        });
        let words: Vec<String> = counted_words(&schema).into_iter().collect();
        assert_eq!(words, ["all", "at", "member", "pic"]);
    }

    #[test]
    fn field_heads_are_the_last_words_of_field_names() {
        let schema = json!({"type": "array", "items": {"type": "object", "properties": {
            "group_name": {}, "card": {}, "lastSentTime": {}, "user_id": {}}}});
        let heads: Vec<String> = field_heads(&schema).into_iter().collect();
        assert_eq!(heads, ["card", "name", "time"]);
    }

    #[test]
    fn people_are_found_at_any_depth() {
        let list = json!({"type": "array", "items": {"type": "object",
            "properties": {"sender_uin": {"type": "string"}}}});
        assert!(holds_people(&list));
        let group = json!({"type": "object", "properties": {"group_id": {}, "member_count": {}}});
        assert!(!holds_people(&group));
    }

    #[test]
    fn a_token_finds_the_actions_counting_it_or_a_synonym() {
        let counted = vec![
            BTreeSet::from(["member".to_string()]),
            BTreeSet::from(["file".to_string()]),
        ];
        let synonyms = BTreeMap::from([("成员".to_string(), vec!["member".to_string()])]);
        let tokens = ["成员", "file", "group"].map(String::from);
        assert_eq!(
            token_actions(tokens.into_iter(), &synonyms, &counted),
            [vec![0], vec![1], vec![]]
        );
    }
}
