//! Search over the bundled catalog.
//!
//! Substring mode (the default) keeps SnowLuma's original behaviour: a case-insensitive
//! substring of the name, an alias or the summary, in catalog order.
//!
//! Keyword mode splits the query on white space and drops filler words. Run-together Chinese
//! (`禁言群成员`) is split into the catalog's known words. Every remaining term must match (AND):
//! through the generated token index, where synonyms are already expanded, or as a substring
//! of an action's Chinese text. Terms are weighted by how rare they are (IDF), so `群` or
//! `group` count less than `禁言`; an action whose name words the query covers ranks higher;
//! an exact name or alias ranks first. Terms the catalog has never seen are reported as
//! ignored. If no action matches every term, the actions matching the most terms are returned
//! and the result says it was relaxed.

use std::collections::{BTreeMap, BTreeSet};

use super::generated::search_index::{
    CJK_TEXT, NAME_WORDS, STOPWORDS, SUBSTRING_TEXT, SYNONYMS, TOKENS,
};
use super::{ACTIONS, resolve};

/// Action indices whose name, aliases or summary contain `query`, in catalog order.
pub fn substring(query: &str) -> Vec<usize> {
    let needle = query.trim().to_lowercase();
    (0..ACTIONS.len())
        .filter(|&i| SUBSTRING_TEXT[i].contains(&needle))
        .collect()
}

#[derive(Debug, Default)]
pub struct KeywordHits {
    /// (action index, score), best first; ties keep catalog order.
    pub hits: Vec<(usize, u32)>,
    /// The terms that were matched (after splitting run-together Chinese).
    pub terms: Vec<String>,
    /// Terms dropped because nothing in the catalog knows them.
    pub ignored: Vec<String>,
    /// True when no action matched every term and the best partial matches are returned.
    pub relaxed: bool,
}

/// Score given to an action whose name or alias is the whole query.
const EXACT: f64 = 10_000.0;
/// Weight of a Chinese term found inside an action's summary or keywords.
const CJK_SUBSTRING: u32 = 4;
/// Bonus for an action whose name words are all covered by the query.
const NAME_COVERAGE: f64 = 12.0;
/// Longest known Chinese word tried when splitting run-together text.
const LONGEST_WORD: usize = 6;

pub fn keywords(query: &str) -> KeywordHits {
    let mut result = KeywordHits::default();
    for raw in query.split_whitespace() {
        let term = raw.to_lowercase();
        if STOPWORDS.binary_search(&term.as_str()).is_ok() {
            continue;
        }
        if term.chars().any(is_cjk) && token(&term).is_none() {
            let pieces = segment(&term);
            if pieces.is_empty() {
                result.ignored.push(term);
            }
            result.terms.extend(pieces);
        } else if term_hits(&term).is_empty() {
            result.ignored.push(term);
        } else {
            result.terms.push(term);
        }
    }
    let per_term: Vec<BTreeMap<usize, u32>> = result.terms.iter().map(|t| term_hits(t)).collect();
    let total = ACTIONS.len() as f64;
    let idf: Vec<f64> = per_term
        .iter()
        .map(|hits| (1.0 + total / hits.len().max(1) as f64).ln())
        .collect();

    let mut matched: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
    for (hits, idf) in per_term.iter().zip(&idf) {
        for (action, weight) in hits {
            let entry = matched.entry(*action).or_insert((0, 0.0));
            entry.0 += 1;
            entry.1 += f64::from(*weight) * idf;
        }
    }
    let wanted = per_term.len();
    let mut best_count = matched.values().map(|(count, _)| *count).max().unwrap_or(0);
    if best_count < wanted && best_count > 0 {
        result.relaxed = true;
    }
    if wanted == 0 {
        best_count = usize::MAX;
    }
    let equivalents = query_words(&result.terms);
    let mut scored: Vec<(usize, f64)> = matched
        .into_iter()
        .filter(|(_, (count, _))| *count == best_count)
        .map(|(action, (_, score))| {
            (
                action,
                score + NAME_COVERAGE * name_coverage(action, &equivalents),
            )
        })
        .collect();
    if let Some(exact) = resolve(query.trim()) {
        match scored.iter_mut().find(|(action, _)| *action == exact.index) {
            Some(entry) => entry.1 += EXACT,
            None => scored.push((exact.index, EXACT)),
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    result.hits = scored
        .into_iter()
        .map(|(action, score)| (action, score.round() as u32))
        .collect();
    result
}

fn token(term: &str) -> Option<&'static [(u16, u8)]> {
    TOKENS
        .binary_search_by(|(t, _)| (*t).cmp(term))
        .ok()
        .map(|i| TOKENS[i].1)
}

fn synonyms(term: &str) -> &'static [&'static str] {
    SYNONYMS
        .binary_search_by(|(w, _)| (*w).cmp(term))
        .map(|i| SYNONYMS[i].1)
        .unwrap_or(&[])
}

/// `members` -> `member`, for terms whose singular is known.
fn singular(term: &str) -> Option<&str> {
    term.strip_suffix('s')
        .filter(|stem| stem.len() > 2 && token(stem).is_some())
}

/// Every action one term matches, with its weight.
fn term_hits(term: &str) -> BTreeMap<usize, u32> {
    let mut hits = BTreeMap::new();
    let found = token(term).or_else(|| singular(term).and_then(token));
    for &(action, weight) in found.unwrap_or(&[]) {
        hits.insert(action as usize, u32::from(weight));
    }
    if term.chars().any(is_cjk) {
        for (i, text) in CJK_TEXT.iter().enumerate() {
            if text.contains(term) {
                *hits.entry(i).or_insert(0) += CJK_SUBSTRING;
            }
        }
    }
    hits
}

/// Splits run-together Chinese into the longest known words, left to right. Text between
/// known words is kept when it still occurs in some action's text, and dropped otherwise
/// (particles such as 给 or 把).
fn segment(term: &str) -> Vec<String> {
    let chars: Vec<char> = term.chars().collect();
    let mut pieces = Vec::new();
    let mut leftover = String::new();
    let flush = |leftover: &mut String, pieces: &mut Vec<String>| {
        if leftover.chars().count() >= 2 && !term_hits(leftover).is_empty() {
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
            words.extend(synonyms(form).iter().map(|s| s.to_string()));
        }
    }
    words
}

/// The share of the action's name words that the query names (0.0 to 1.0).
fn name_coverage(action: usize, words: &BTreeSet<String>) -> f64 {
    let parts = NAME_WORDS[action];
    if parts.is_empty() {
        return 0.0;
    }
    parts.iter().filter(|p| words.contains(**p)).count() as f64 / parts.len() as f64
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}
