//! Search over the bundled catalog.
//!
//! Substring mode (the default) keeps SnowLuma's original behaviour: a case-insensitive
//! substring of the name, an alias or the summary, in catalog order.
//!
//! Keyword mode takes the query apart ([`query`]): stop words in both languages and quoted
//! text are dropped (and reported), Chinese is cut by jieba over the catalog's vocabulary,
//! English words are reduced to their stems, `group_msg` / `groupmsg` become name fragments,
//! and a misspelled word is read as the nearest catalog word, Chinese text that sounds like
//! one ([`homophones`]) as that word (both reported). Every remaining term must match
//! (AND): through the generated token index, where synonyms are already expanded, as a
//! substring of an action's Chinese text, or, for a fragment, as a run of an action's name
//! parts. Ranking: an exact name or alias first; then actions whose name parts the terms
//! name; then the field weights of the index times how rare each term is (IDF), so `群` or
//! `group` count less than `禁言`; then what the query wants done (a read or a write, from the
//! spec's intents, questions, looks and states); read-only actions ahead of writes on a tie.
//!
//! A term no action knows still takes part in the AND, so it empties the results instead of
//! being dropped; it is reported in `unmatched_terms`. When no action matches every term the
//! results are empty and the actions matching the most terms come back separately, as
//! suggestions marked partial, never mixed into the results; when those match three terms or
//! more, actions matching one term fewer compete too, at a penalty. A query of nothing but stop
//! words falls back to the substring search.

mod answers;
mod homophones;
mod names;
mod query;
mod request;
mod spelling;

use super::generated::search_index::{
    ADJACENT_PAIR_ACTIONS, ADJACENT_PAIRS, CJK_SUBSTRING, CJK_TEXT, IDF, PEOPLE_RESULTS,
    SEQUENCE_ACTIONS, SUBSTRING_TEXT, TOKEN_HITS, TOKEN_INTENTS,
};
use super::{ACTIONS, CompactEntry, Filter, resolve};
use names::NameMatches;
use query::{Term, TermKind};
use serde::Serialize;

/// Action indices whose name, aliases or summary contain `query`, in catalog order.
pub fn substring(query: &str) -> Vec<usize> {
    let needle = query.trim().to_lowercase();
    (0..ACTIONS.len())
        .filter(|&i| SUBSTRING_TEXT.get(i).contains(&needle))
        .collect()
}

/// What a keyword search found.
#[derive(Debug, Default)]
pub struct KeywordSearch {
    /// Actions matching every term, best first, as (action index, score); ties keep catalog
    /// order.
    pub results: Vec<Scored>,
    /// Only when `results` is empty: the actions matching the most terms, best first. They
    /// miss at least one term, so they are partial matches, never results.
    pub suggestions: Vec<Scored>,
    /// The terms searched for (after segmenting Chinese, dropping stop words and correcting
    /// spelling).
    pub terms: Vec<String>,
    /// Terms that match no action at all; any of them makes `results` empty.
    pub unmatched_terms: Vec<String>,
    /// Stop words, particles, numbers and quoted text dropped before the AND.
    pub ignored_terms: Vec<String>,
    /// Misspelled words and the catalog words they were read as (`grup -> group`,
    /// `撤会 -> 撤回`).
    pub corrected_terms: Vec<String>,
    /// True when the query held only stop words and `results` come from the substring
    /// search.
    pub substring_fallback: bool,
}

/// One action a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub action: usize,
    pub score: u32,
    /// For a suggestion, the query terms it matches. Empty for a result, which matches every
    /// term (an exact name or alias stands for all of them): listing them again would cost
    /// a copy of every term for every result.
    pub matched_terms: Vec<String>,
}

impl KeywordSearch {
    /// The results that pass `filter`, as compact entries with their score.
    pub fn result_entries(&self, filter: &Filter) -> Vec<CompactEntry> {
        self.results
            .iter()
            .filter(|s| filter.matches(&ACTIONS[s.action]))
            .map(Scored::entry)
            .collect()
    }

    /// The suggestions that pass `filter`, each marked `"partial": true` with the terms it
    /// matched.
    pub fn suggestion_entries(&self, filter: &Filter) -> Vec<Suggestion> {
        self.suggestions
            .iter()
            .filter(|s| filter.matches(&ACTIONS[s.action]))
            .take(MAX_SUGGESTIONS)
            .map(|s| Suggestion {
                entry: s.entry(),
                partial: true,
                matched_terms: s.matched_terms.clone(),
            })
            .collect()
    }
}

impl Scored {
    fn entry(&self) -> CompactEntry {
        CompactEntry {
            score: Some(self.score),
            ..ACTIONS[self.action].compact()
        }
    }
}

/// A partial match offered when no action matches every term.
#[derive(Debug, Clone, Serialize)]
pub struct Suggestion {
    #[serde(flatten)]
    pub entry: CompactEntry,
    /// Always true: the action misses at least one term.
    pub partial: bool,
    pub matched_terms: Vec<String>,
}

/// Score given to an action whose name or alias is the whole query.
const EXACT: f64 = 10_000.0;
/// Bonus for an action whose name words are all covered by the query.
const NAME_COVERAGE: f64 = 40.0;
/// Bonus for an action whose name parts the query's terms name, scaled by their share.
const NAME_TERMS: f64 = 30.0;
/// Bonus per pair of neighbouring query words that are neighbouring parts of the action's
/// name or an alias.
const ADJACENT_PARTS: f64 = 30.0;
/// Bonus for an action that does what the query asks for: a read-only one for a question or
/// a read (`列表`), a write for a write word (`删除`, `kick`).
const INTENT_MATCH: f64 = 40.0;
/// Penalty of an action whose name has in the plural a word the query wrote in the singular
/// (`kick member` is set_group_kick, not set_group_kick_members).
const NUMBER_MISMATCH: f64 = 30.0;
/// Bonus of an action that returns or handles several things (see [`returns_many`]) when
/// the query asks about several.
const MANY_FOR_MANY: f64 = 20.0;
/// The share of its weight a term outside the clause that asks adds (see
/// `Query::is_context`).
const CONTEXT_SHARE: f64 = 0.5;
/// The share of its weight a word inside a file name or address adds (see `Query::hints`).
const HINT_SHARE: f64 = 0.5;
/// Bonus of an action that takes a user when the query is about another person.
const PERSON_TARGET: f64 = 30.0;
/// Bonus of an action whose result counts what a count question asks about (`how many
/// members` -> get_group_info, for its `member_count`).
const COUNT_ANSWER: f64 = 60.0;
/// Bonus of an action whose result tells what a question asks about (`他的群名片是什么` ->
/// get_group_member_info, for its `card`), over the action that sets it.
const FIELD_ANSWER: f64 = 30.0;
/// Bonus of an action with a keyword phrase that is the whole query (`rename group` for
/// set_group_name): the spec says in so many words that this is what the words mean.
const WHOLE_PHRASE: f64 = 80.0;
/// Bonus of an action that serves either scope (a router: send_msg, mark_msg_as_read) when the
/// query names both (`whether it's a group or private chat`).
const EITHER_SCOPE: f64 = 40.0;
/// Bonus of an action whose result holds people when the query asks who.
const PEOPLE_ANSWER: f64 = 40.0;
/// Bonus of an action that undoes (see [`answers::undoes`]) when the query asks to undo
/// something.
const UNDO_ANSWER: f64 = 40.0;
/// Weight of a name fragment held by one of the action's names.
const FRAGMENT: u32 = 20;
/// When no action matches every term and the best match three or more, suggestions may
/// match one term fewer than the best.
const LOOSE_SUGGESTIONS_FROM: usize = 3;
/// Penalty of a suggestion for each term it matches fewer than the best suggestion.
const MISSED_TERM: f64 = 40.0;
/// Most suggestions returned when nothing matches every term.
const MAX_SUGGESTIONS: usize = 5;

/// How many actions the catalog has: the per-action tallies of a query live on the stack.
const ACTION_COUNT: usize = ACTIONS.len();

/// One term's weight for every action, by action index (0 = no hit).
type Hits = [u32; ACTION_COUNT];

pub fn keywords(text: &str) -> KeywordSearch {
    let mut analysis = query::analyze(text);
    let mut result = KeywordSearch {
        terms: analysis.terms.iter().map(|t| t.text.clone()).collect(),
        ignored_terms: std::mem::take(&mut analysis.ignored),
        corrected_terms: std::mem::take(&mut analysis.corrected),
        ..KeywordSearch::default()
    };
    if analysis.terms.is_empty() && !result.ignored_terms.is_empty() {
        // Only stop words: there is nothing to AND, so look for the text itself.
        result.substring_fallback = true;
        result.results = substring(text)
            .into_iter()
            .map(|action| Scored {
                action,
                score: 0,
                matched_terms: Vec::new(),
            })
            .collect();
        return result;
    }
    // Dense per-term weights (one slot per action): a few hundred bytes a term instead of a
    // tree node per hit, and one allocation for the whole query.
    let per_term: Vec<Hits> = analysis.terms.iter().map(term_hits).collect();
    for (term, hits) in analysis.terms.iter().zip(&per_term) {
        if hits.iter().all(|w| *w == 0) {
            result.unmatched_terms.push(term.text.clone());
        }
    }

    // Per action: how many terms it matches and their summed weight, each term's weight
    // times its IDF (terms added in query order, so the sum is the same on every run).
    let wanted = per_term.len();
    let mut counts = [0usize; ACTION_COUNT];
    // The same, without the terms that only tell the story around the request: what picks
    // the suggestions when nothing matches every term.
    let mut asked = [0usize; ACTION_COUNT];
    let mut scores = [0.0f64; ACTION_COUNT];
    for (t, hits) in per_term.iter().enumerate() {
        let idf = idf(hits);
        let context = analysis.is_context(t);
        let share = if context { CONTEXT_SHARE } else { 1.0 };
        for (action, weight) in hits.iter().enumerate() {
            if *weight > 0 {
                counts[action] += 1;
                asked[action] += usize::from(!context);
                scores[action] += share * f64::from(*weight) * idf;
            }
        }
    }
    // A file name's or address's catalog words add to the actions that match (at a share of
    // their weight) but never decide which do.
    for hint in &analysis.hints {
        let hits = term_hits(hint);
        let idf = idf(&hits);
        for (action, weight) in hits.iter().enumerate() {
            if *weight > 0 && counts[action] > 0 {
                scores[action] += HINT_SHARE * f64::from(*weight) * idf;
            }
        }
    }
    let names = NameMatches::new(&analysis.terms, &result.ignored_terms);
    let complete = wanted > 0 && counts.contains(&wanted);
    // Nothing matches every term: the best partial matches become suggestions, counted on
    // the terms of the request itself.
    let tally = if complete { &counts } else { &asked };
    let best_count = tally.iter().copied().max().unwrap_or(0);
    let keep = if complete { wanted } else { best_count.max(1) };
    // A long query's suggestions may miss one term more than the best (at a cost): in a
    // sentence one stray word (`actually`, `either`) should not hide the action it is about.
    let fewest = if !complete && keep >= LOOSE_SUGGESTIONS_FROM {
        keep - 1
    } else {
        keep
    };
    let pairs = pairs_in_names(&analysis.terms);
    let counted = answers::counting(&analysis, &result.ignored_terms);
    let telling = answers::telling(&analysis);
    let intent = Intent::of(&analysis);
    let phrase = answers::whole_phrase(text, &analysis, &result.ignored_terms);
    // Who, or everyone to be seen (`show me everyone in the group`): the answer is people.
    let wants_people =
        analysis.asks.who || (analysis.asks.everyone && intent.read && !intent.write);
    let routers = if answers::names_both_scopes(&analysis.terms) {
        query::token("either").unwrap_or_default()
    } else {
        &[]
    };
    // Fragment terms name the parts they hold.
    let fragments: Vec<usize> = (0..wanted)
        .filter(|&t| matches!(analysis.terms[t].kind, TermKind::Fragment(_)))
        .collect();
    let mut scored: Vec<(usize, f64)> = (0..ACTION_COUNT)
        .filter(|&action| wanted > 0 && (fewest..=keep).contains(&tally[action]))
        .map(|action| {
            let named = names.named_terms(action)
                + fragments
                    .iter()
                    .filter(|&&t| per_term[t][action] > 0)
                    .count();
            let bonus = NAME_COVERAGE * names.coverage(action)
                + NAME_TERMS * named as f64 / wanted as f64
                + ADJACENT_PARTS * f64::from(pairs[action])
                + intent.bonus(ACTIONS[action].read_only)
                - if names.plural_for_singular(action) {
                    NUMBER_MISMATCH
                } else {
                    0.0
                }
                + if analysis.asks.person && ACTIONS[action].required.contains(&"user_id") {
                    PERSON_TARGET
                } else {
                    0.0
                }
                + if counted[action] { COUNT_ANSWER } else { 0.0 }
                + if telling[action] { FIELD_ANSWER } else { 0.0 }
                + if hit_by(phrase, action) {
                    WHOLE_PHRASE
                } else {
                    0.0
                }
                + if hit_by(routers, action) {
                    EITHER_SCOPE
                } else {
                    0.0
                }
                + if wants_people && PEOPLE_RESULTS[action] {
                    PEOPLE_ANSWER
                        + if answers::names_people(action) {
                            PEOPLE_ANSWER
                        } else {
                            0.0
                        }
                } else {
                    0.0
                }
                + if analysis.asks.undo && answers::undoes(action) {
                    UNDO_ANSWER
                } else {
                    0.0
                }
                + if analysis.asks.many && answers::returns_many(action) {
                    MANY_FOR_MANY
                } else {
                    0.0
                };
            let missed = (keep - tally[action]) as f64;
            (action, scores[action] + bonus - MISSED_TERM * missed)
        })
        .collect();
    let exact = resolve(text.trim()).map(|exact| exact.index);
    if !complete && exact.is_none() {
        let matched = |action: usize| -> Vec<String> {
            (0..wanted)
                .filter(|&t| per_term[t][action] > 0)
                .map(|t| result.terms[t].clone())
                .collect()
        };
        result.suggestions = ranked(scored, matched);
        return result;
    }
    if !complete {
        scored.clear();
    }
    if let Some(exact) = exact {
        match scored.iter_mut().find(|(action, _)| *action == exact) {
            Some(entry) => entry.1 += EXACT,
            None => scored.push((exact, EXACT)),
        }
    }
    result.results = ranked(scored, |_| Vec::new());
    result
}

/// Best first; on a tie, read-only actions before writes, then catalog order.
fn ranked(mut scored: Vec<(usize, f64)>, matched: impl Fn(usize) -> Vec<String>) -> Vec<Scored> {
    scored.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(ACTIONS[b.0].read_only.cmp(&ACTIONS[a.0].read_only))
            .then(a.0.cmp(&b.0))
    });
    scored
        .into_iter()
        .map(|(action, score)| Scored {
            action,
            score: score.round() as u32,
            matched_terms: matched(action),
        })
        .collect()
}

/// Whether `action` is among a token's hits.
fn hit_by(hits: &[(u16, u8)], action: usize) -> bool {
    hits.iter().any(|&(a, _)| usize::from(a) == action)
}

/// How rare a term is, from its hits: the IDF of the number of actions it matches.
fn idf(hits: &Hits) -> f64 {
    IDF[hits.iter().filter(|w| **w > 0).count()]
}

/// Per action: how many pairs of neighbouring query words (`group msg`) are neighbouring
/// parts of its name or an alias (send_group_msg).
fn pairs_in_names(terms: &[Term]) -> [u8; ACTION_COUNT] {
    let mut counts = [0u8; ACTION_COUNT];
    let mut key = String::new();
    for pair in terms.windows(2) {
        let (TermKind::Word(a), TermKind::Word(b)) = (&pair[0].kind, &pair[1].kind) else {
            continue;
        };
        key.clear();
        key.push_str(a);
        key.push(' ');
        key.push_str(b);
        if let Some(i) = ADJACENT_PAIRS.position(&key) {
            for &action in ADJACENT_PAIR_ACTIONS.get(i) {
                let count = &mut counts[usize::from(action)];
                *count = count.saturating_add(1);
            }
        }
    }
    counts
}

/// Every action's weight for one term (0 where the term does not match), by action index.
fn term_hits(term: &Term) -> Hits {
    let mut hits = [0; ACTION_COUNT];
    match &term.kind {
        TermKind::Word(key) => match term.token {
            Some(i) => {
                for &(action, weight) in TOKEN_HITS.get(i) {
                    hits[usize::from(action)] = u32::from(weight);
                }
            }
            // Chinese text no token is can still be inside an action's summary or keywords.
            None if key.chars().any(query::is_cjk) => {
                for (hit, text) in hits.iter_mut().zip(CJK_TEXT.iter()) {
                    if text.contains(key.as_str()) {
                        *hit = CJK_SUBSTRING;
                    }
                }
            }
            None => {}
        },
        TermKind::Fragment(parts) => {
            for (i, &action) in SEQUENCE_ACTIONS.iter().enumerate() {
                if query::sequence_contains(i, parts) {
                    hits[usize::from(action)] = FRAGMENT;
                }
            }
        }
    }
    hits
}

/// What the query wants done, from the intent bits of its words (a question, a look or a
/// state reads).
struct Intent {
    read: bool,
    write: bool,
}

impl Intent {
    fn of(query: &query::Query) -> Intent {
        // A question reads, whatever its words (`who is muted`, `can it send voice`).
        if query.asks.reads {
            return Intent {
                read: true,
                write: false,
            };
        }
        let mut bits = 0;
        // The story around a request (`他发了条语音，…，帮我转成文字`) does not say what to do.
        for (t, term) in query.terms.iter().enumerate() {
            if let (Some(i), false) = (term.token, query.is_context(t)) {
                bits |= TOKEN_INTENTS[i];
            }
        }
        Intent {
            // A phrase naming something (`我收藏的表情包`, `my friends`) and no deed asks to
            // see it.
            read: bits & 1 != 0 || (query.asks.names_a_thing && bits & 2 == 0),
            write: bits & 2 != 0,
        }
    }

    /// The bonus of a read-only (or writing) action: only when the query wants one thing.
    fn bonus(&self, read_only: bool) -> f64 {
        match (self.read, self.write, read_only) {
            (true, false, true) | (false, true, false) => INTENT_MATCH,
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::generated::search_index::{
        NAME_WORDS, STOPWORDS, SYNONYM_GROUPS, SYNONYM_WORDS, TOKENS,
    };
    use super::names::synonyms;
    use super::query::token;
    use super::*;

    /// The weights the codegen writes are, bit for bit, what the ranking computed at run time
    /// before it moved to build time.
    #[test]
    fn the_idf_table_is_the_formula_it_replaces() {
        assert_eq!(IDF.len(), ACTIONS.len() + 1);
        let total = ACTIONS.len() as f64;
        for (found, weight) in IDF.iter().enumerate() {
            let expected = (1.0 + total / found.max(1) as f64).ln();
            assert_eq!(
                weight.to_bits(),
                expected.to_bits(),
                "{found} matching actions"
            );
        }
    }

    /// Lookups binary-search the packed tables, so they must be sorted by bytes, unique, and
    /// line up with their per-entry lists.
    #[test]
    fn the_packed_tables_are_sorted_and_aligned() {
        for table in [&TOKENS, &SYNONYM_WORDS, &STOPWORDS] {
            let entries: Vec<&str> = table.iter().collect();
            assert!(entries.windows(2).all(|w| w[0] < w[1]), "{entries:?}");
            for (i, entry) in entries.iter().enumerate() {
                assert_eq!(table.position(entry), Some(i));
            }
        }
        assert_eq!(TOKEN_HITS.len(), TOKENS.len());
        assert_eq!(SYNONYM_GROUPS.len(), SYNONYM_WORDS.len());
        for table in [&SUBSTRING_TEXT, &CJK_TEXT] {
            assert_eq!(table.len(), ACTIONS.len());
        }
        assert_eq!(NAME_WORDS.len(), ACTIONS.len());
        let ban = ACTIONS
            .iter()
            .position(|a| a.name == "set_group_ban")
            .unwrap();
        assert_eq!(
            NAME_WORDS.get(ban).collect::<Vec<_>>(),
            ["set", "group", "ban"]
        );
        assert!(SUBSTRING_TEXT.get(ban).starts_with("set_group_ban\n"));
        let hits = token("ban").expect("`ban` is a token");
        assert!(hits.iter().any(|&(action, _)| usize::from(action) == ban));
        assert!(synonyms("ban").next().is_some(), "`ban` has synonyms");
        assert_eq!(synonyms("no such word").count(), 0);
    }

    /// A Chinese token's hits include every action whose Chinese text holds it, as the
    /// runtime scan for other Chinese words would find them.
    #[test]
    fn chinese_tokens_carry_their_substring_hits() {
        let mut checked = 0;
        for (i, token) in TOKENS.iter().enumerate() {
            if !token.chars().any(query::is_cjk) {
                continue;
            }
            let hits = TOKEN_HITS.get(i);
            for (action, text) in CJK_TEXT.iter().enumerate() {
                let weight = hits
                    .iter()
                    .find(|(a, _)| usize::from(*a) == action)
                    .map_or(0, |(_, w)| u32::from(*w));
                if text.contains(token) {
                    assert!(weight >= CJK_SUBSTRING, "{token} in action {action}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "{checked} Chinese token hits checked");
    }

    /// Equal scores put read-only actions ahead of writes, whatever their catalog order.
    #[test]
    fn read_only_actions_come_first_on_a_tie() {
        let write = ACTIONS.iter().position(|a| !a.read_only).unwrap();
        let read = ACTIONS.iter().rposition(|a| a.read_only).unwrap();
        assert!(
            read > write,
            "catalog order alone would put the write first"
        );
        let order = ranked(vec![(write, 5.0), (read, 5.0)], |_| Vec::new());
        assert_eq!(order[0].action, read);
        assert_eq!(order[1].action, write);
        let order = ranked(vec![(write, 6.0), (read, 5.0)], |_| Vec::new());
        assert_eq!(order[0].action, write, "a higher score still wins");
    }
}
