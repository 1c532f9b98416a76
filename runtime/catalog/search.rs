//! Search over the bundled catalog.
//!
//! Substring mode (the default) keeps SnowLuma's original behaviour: a case-insensitive
//! substring of the name, an alias or the summary, in catalog order.
//!
//! Keyword mode splits the query on white space and drops filler words (the catalog's stop
//! words). Run-together Chinese (`禁言群成员`) is split into the catalog's known words; the
//! particles between them (给, 把 …) are dropped like stop words. Every remaining term must
//! match (AND): through the generated token index, where synonyms are already expanded, or as
//! a substring of an action's Chinese text. Terms are weighted by how rare they are (IDF), so
//! `群` or `group` count less than `禁言`; an action whose name words the query covers ranks
//! higher; an exact name or alias ranks first.
//!
//! A term no action knows still takes part in the AND, so it empties the results instead of
//! being dropped; it is reported in `unmatched_terms`. When no action matches every term the
//! results are empty and the actions matching the most terms come back separately, as
//! suggestions marked partial, never mixed into the results.

use std::collections::BTreeSet;

use super::generated::search_index::{
    CJK_TEXT, IDF, NAME_WORDS, STOPWORDS, SUBSTRING_TEXT, SYNONYM_GROUPS, SYNONYM_WORDS,
    TOKEN_HITS, TOKENS,
};
use super::{ACTIONS, CompactEntry, Filter, resolve};
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
    /// The terms searched for (after splitting run-together Chinese and dropping stop words).
    pub terms: Vec<String>,
    /// Terms that match no action at all; any of them makes `results` empty.
    pub unmatched_terms: Vec<String>,
}

/// One action a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub action: usize,
    pub score: u32,
    /// The query terms this action matches (all of them for a result).
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
/// Weight of a Chinese term found inside an action's summary or keywords.
const CJK_SUBSTRING: u32 = 4;
/// Bonus for an action whose name words are all covered by the query.
const NAME_COVERAGE: f64 = 12.0;
/// Longest known Chinese word tried when splitting run-together text.
const LONGEST_WORD: usize = 6;
/// Most suggestions returned when nothing matches every term.
const MAX_SUGGESTIONS: usize = 5;

pub fn keywords(query: &str) -> KeywordSearch {
    let mut result = KeywordSearch::default();
    for raw in query.split_whitespace() {
        let term = raw.to_lowercase();
        if STOPWORDS.position(&term).is_some() {
            continue;
        }
        if term.chars().any(is_cjk) && token(&term).is_none() {
            let pieces = segment(&term);
            if pieces.is_empty() {
                result.unmatched_terms.push(term.clone());
                result.terms.push(term);
            } else {
                result.terms.extend(pieces);
            }
        } else {
            if !hits_anything(&term) {
                result.unmatched_terms.push(term.clone());
            }
            result.terms.push(term);
        }
    }
    // Dense per-term weights (one slot per action, 0 = no hit): a few hundred bytes a term
    // instead of a tree node per hit.
    let per_term: Vec<Vec<u32>> = result.terms.iter().map(|t| term_hits(t)).collect();
    let idf: Vec<f64> = per_term
        .iter()
        .map(|hits| IDF[hits.iter().filter(|w| **w > 0).count()])
        .collect();

    // Per action: how many terms it matches and their summed weight (terms added in query
    // order, so the sum is the same on every run). No allocation per action: only the
    // actions kept below get their list of matched terms.
    let wanted = per_term.len();
    let mut counts = vec![0usize; ACTIONS.len()];
    let mut scores = vec![0.0f64; ACTIONS.len()];
    for (hits, idf) in per_term.iter().zip(&idf) {
        for (action, weight) in hits.iter().enumerate() {
            if *weight > 0 {
                counts[action] += 1;
                scores[action] += f64::from(*weight) * idf;
            }
        }
    }
    let best_count = counts.iter().copied().max().unwrap_or(0);
    let equivalents = query_words(&result.terms);
    let keep = if wanted > 0 && best_count == wanted {
        wanted
    } else {
        // Nothing matches every term: the best partial matches become suggestions.
        best_count.max(1)
    };
    let mut scored: Vec<(usize, f64, Vec<usize>)> = (0..ACTIONS.len())
        .filter(|&action| wanted > 0 && counts[action] == keep)
        .map(|action| {
            let bonus = NAME_COVERAGE * name_coverage(action, &equivalents);
            let terms = (0..wanted).filter(|&t| per_term[t][action] > 0).collect();
            (action, scores[action] + bonus, terms)
        })
        .collect();
    let complete = wanted > 0 && best_count == wanted;
    if !complete {
        result.suggestions = ranked(scored, &result.terms);
        scored = Vec::new();
    }
    if let Some(exact) = resolve(query.trim()) {
        match scored
            .iter_mut()
            .find(|(action, ..)| *action == exact.index)
        {
            Some(entry) => entry.1 += EXACT,
            None => scored.push((exact.index, EXACT, (0..wanted).collect())),
        }
        result.suggestions.clear();
    }
    result.results = ranked(scored, &result.terms);
    result
}

fn ranked(mut scored: Vec<(usize, f64, Vec<usize>)>, terms: &[String]) -> Vec<Scored> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .map(|(action, score, matched)| Scored {
            action,
            score: score.round() as u32,
            matched_terms: matched.into_iter().map(|t| terms[t].clone()).collect(),
        })
        .collect()
}

fn token(term: &str) -> Option<&'static [(u16, u8)]> {
    TOKENS.position(term).map(|i| TOKEN_HITS.get(i))
}

/// The other words of the term's synonym groups (none when it has no group).
fn synonyms(term: &str) -> impl Iterator<Item = &'static str> {
    let group = SYNONYM_WORDS.position(term);
    group.into_iter().flat_map(|i| SYNONYM_GROUPS.get(i))
}

/// `members` -> `member`, for terms whose singular is known.
fn singular(term: &str) -> Option<&str> {
    term.strip_suffix('s')
        .filter(|stem| stem.len() > 2 && token(stem).is_some())
}

/// Every action's weight for one term (0 where the term does not match), by action index.
fn term_hits(term: &str) -> Vec<u32> {
    let mut hits = vec![0; ACTIONS.len()];
    for &(action, weight) in known_hits(term) {
        hits[usize::from(action)] = u32::from(weight);
    }
    if term.chars().any(is_cjk) {
        for (hit, text) in hits.iter_mut().zip(CJK_TEXT.iter()) {
            if text.contains(term) {
                *hit += CJK_SUBSTRING;
            }
        }
    }
    hits
}

/// The token index's entry for a term or its singular.
fn known_hits(term: &str) -> &'static [(u16, u8)] {
    token(term)
        .or_else(|| singular(term).and_then(token))
        .unwrap_or(&[])
}

/// Whether any action matches the term ([`term_hits`] without building the weights).
fn hits_anything(term: &str) -> bool {
    !known_hits(term).is_empty()
        || (term.chars().any(is_cjk) && CJK_TEXT.iter().any(|text| text.contains(term)))
}

/// Splits run-together Chinese into the longest known words, left to right. Text between
/// known words is kept when it still occurs in some action's text, and dropped otherwise
/// (particles such as 给 or 把).
fn segment(term: &str) -> Vec<String> {
    let chars: Vec<char> = term.chars().collect();
    let mut pieces = Vec::new();
    let mut leftover = String::new();
    let flush = |leftover: &mut String, pieces: &mut Vec<String>| {
        if leftover.chars().count() >= 2 && hits_anything(leftover) {
            pieces.push(leftover.clone());
        }
        leftover.clear();
    };
    let mut start = 0;
    while start < chars.len() {
        let known = (1..=LONGEST_WORD.min(chars.len() - start))
            .rev()
            .find_map(|len| {
                let word: String = chars[start..start + len].iter().collect();
                token(&word).map(|_| (word, len))
            });
        match known {
            Some((word, len)) => {
                flush(&mut leftover, &mut pieces);
                pieces.push(word);
                start += len;
            }
            None => {
                leftover.push(chars[start]);
                start += 1;
            }
        }
    }
    flush(&mut leftover, &mut pieces);
    pieces
}

/// The query's terms with their singulars and synonyms, for name coverage.
fn query_words(terms: &[String]) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for term in terms {
        let forms = std::iter::once(term.as_str()).chain(singular(term));
        for form in forms {
            words.insert(form.to_string());
            words.extend(synonyms(form).map(str::to_string));
        }
    }
    words
}

/// The share of the action's name words that the query names (0.0 to 1.0).
fn name_coverage(action: usize, words: &BTreeSet<String>) -> f64 {
    let parts = NAME_WORDS.get(action);
    if parts.len() == 0 {
        return 0.0;
    }
    let total = parts.len() as f64;
    parts.filter(|p| words.contains(*p)).count() as f64 / total
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

#[cfg(test)]
mod tests {
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
}
