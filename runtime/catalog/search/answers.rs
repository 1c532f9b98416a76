//! What a query says of the answer it wants, matched against what each action's result
//! holds or does: a count, a detail, people, an undoing, either chat scope, a keyword phrase
//! that is the whole request. Each gives the ranking a bonus in `keywords`.

use super::super::ACTIONS;
use super::super::generated::search_index::{
    LONGEST_PHRASE, NAME_WORDS, TOKEN_COUNTS, TOKEN_FIELDS,
};
use super::super::packed::Lists;
use super::ACTION_COUNT;
use super::names;
use super::query::{self, Query, Term};

/// An action about several things: a list, or a plural in its name (get_ai_characters,
/// set_group_kick_members).
pub fn returns_many(action: usize) -> bool {
    NAME_WORDS.get(action).any(|part| part == "list") || names::named_in_plural(action)
}

/// Words a request may put around a keyword phrase without changing what it names.
const PHRASE_FILLER: [&str; 12] = [
    "the", "a", "an", "this", "that", "my", "our", "its", "to", "for", "of", "please",
];

/// The actions with a keyword phrase of two or more words that is the whole query: as
/// written (stop words included: `user online status` is not `online status`), or as its
/// English content words when all it leaves out is filler and values (`rename the group`,
/// `rename group 123 to "raid"`).
pub fn whole_phrase(text: &str, query: &Query, ignored: &[String]) -> &'static [(u16, u8)] {
    // One buffer for both keys: this runs for every query.
    let mut key = String::new();
    let words = text.split_whitespace().count();
    // Chinese phrases are written as one word: a Chinese query with spaces is several terms.
    if text.is_ascii() && (2..=LONGEST_PHRASE).contains(&words) {
        key.reserve(text.len());
        join_into(&mut key, text.split_whitespace());
        // Phrases are lower-case English or Chinese, which has no case.
        key.make_ascii_lowercase();
        if let Some(actions) = query::token(&key) {
            return actions;
        }
    }
    let ignored = &ignored[query.values.min(ignored.len())..];
    let filler = |word: &String| {
        PHRASE_FILLER.contains(&word.as_str()) || word.bytes().all(|b| b.is_ascii_digit())
    };
    let english = |term: &Term| term.text.bytes().all(|b| b.is_ascii_lowercase());
    if !(2..=LONGEST_PHRASE).contains(&query.terms.len())
        || !query.terms.iter().all(english)
        || !ignored.iter().all(filler)
    {
        return &[];
    }
    key.clear();
    join_into(&mut key, query.terms.iter().map(|term| term.text.as_str()));
    query::token(&key).unwrap_or_default()
}

/// Writes `words` into `key`, one space between each two: how the index writes a phrase.
fn join_into<'a>(key: &mut String, words: impl Iterator<Item = &'a str>) {
    for word in words {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(word);
    }
}

/// Name parts for people.
const PEOPLE_PARTS: [&str; 4] = ["member", "friend", "user", "stranger"];

/// Whether the action's name says it is about people (get_group_member_list), not about
/// some of them (get_group_shut_list).
pub fn names_people(action: usize) -> bool {
    NAME_WORDS
        .get(action)
        .any(|part| PEOPLE_PARTS.contains(&part))
}

/// Words for a group chat and for a private one.
const GROUP_SCOPE: [&str; 4] = ["group", "groups", "群", "群聊"];
const PRIVATE_SCOPE: [&str; 6] = ["private", "friend", "friends", "私聊", "好友", "dm"];

/// Whether the query names both a group chat and a private one: it does not know which, so
/// an action that serves either (the spec gives routers the keyword `either`) fits.
pub fn names_both_scopes(terms: &[Term]) -> bool {
    let names = |scope: &[&str]| terms.iter().any(|t| scope.contains(&t.text.as_str()));
    names(&GROUP_SCOPE) && names(&PRIVATE_SCOPE)
}

/// Verbs that open the name of an action undoing what another did.
const UNDOING_VERBS: [&str; 5] = ["cancel", "delete", "del", "unlike", "unset"];

/// Whether the action undoes what another did (cancel_group_album_media_like, unlike_qzone,
/// delete_essence_msg).
pub fn undoes(action: usize) -> bool {
    let verb = ACTIONS[action]
        .name
        .split(['_', '.'])
        .find(|p| !p.is_empty());
    verb.is_some_and(|verb| UNDOING_VERBS.contains(&verb))
}

/// Per action: whether its result counts what the query asks the number of (`how many
/// members`: get_group_info, for its `member_count`).
pub fn counting(query: &Query, ignored: &[String]) -> [bool; ACTION_COUNT] {
    let mut counted = answering(query, query.asks.count, &TOKEN_COUNTS);
    if query.asks.count && ignored.iter().any(|w| w == "people") {
        // `how many people`: people is too vague a word to search for, but what a group
        // counts of them is its members.
        for &action in query::token_index("member").map_or(&[][..], |i| TOKEN_COUNTS.get(i)) {
            counted[usize::from(action)] = true;
        }
    }
    counted
}

/// Per action: whether its result holds what a question asks about (`他的群名片是什么`:
/// get_group_member_info, for its `card`).
pub fn telling(query: &Query) -> [bool; ACTION_COUNT] {
    answering(query, query.asks.reads, &TOKEN_FIELDS)
}

/// Per action: whether it answers the query's terms through `table` (what its result counts
/// or tells), when `asked`; all false otherwise.
fn answering(query: &Query, asked: bool, table: &Lists<u16>) -> [bool; ACTION_COUNT] {
    let mut found = [false; ACTION_COUNT];
    if !asked {
        return found;
    }
    for (t, term) in query.terms.iter().enumerate() {
        if let (Some(i), false) = (term.token, query.is_context(t)) {
            for &action in table.get(i) {
                found[usize::from(action)] = true;
            }
        }
    }
    found
}
