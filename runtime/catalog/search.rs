//! Search over the bundled catalog.
//!
//! Substring mode (the default) keeps SnowLuma's original behaviour: a case-insensitive
//! substring of the name, an alias or the summary, in catalog order. Keyword mode splits the
//! query on white space, drops filler words, and requires every remaining term (AND). A term
//! matches through the generated token index (synonyms already expanded), through Chinese text
//! it is a substring of, or, for run-together Chinese such as `群禁言`, through the known words
//! it can be split into. Terms the catalog has never heard of are reported, not matched.

use std::collections::BTreeMap;

use super::generated::search_index::{CJK_TEXT, STOPWORDS, SUBSTRING_TEXT, SYNONYMS, TOKENS};
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
}

/// Score given to an action whose name or alias is the whole query.
const EXACT: u32 = 10_000;
/// Weight of a Chinese term found inside an action's text rather than as a token.
const CJK_SUBSTRING: u32 = 3;
const CJK_SYNONYM_SUBSTRING: u32 = 2;

pub fn keywords(query: &str) -> KeywordHits {
    let mut result = KeywordHits::default();
    let mut per_term: Vec<BTreeMap<usize, u32>> = Vec::new();
    for raw in query.split_whitespace() {
        let term = raw.to_lowercase();
        if STOPWORDS.binary_search(&term.as_str()).is_ok() {
            continue;
        }
        let hits = term_hits(&term);
        if !hits.is_empty() {
            result.terms.push(term);
            per_term.push(hits);
            continue;
        }
        let segments = if term.chars().any(is_cjk) {
            segment(&term)
        } else {
            Vec::new()
        };
        if segments.is_empty() {
            result.ignored.push(term);
        }
        for segment in segments {
            per_term.push(term_hits(&segment));
            result.terms.push(segment);
        }
    }
    let mut combined: BTreeMap<usize, u32> = BTreeMap::new();
    if let Some((first, rest)) = per_term.split_first() {
        combined = first.clone();
        for hits in rest {
            combined.retain(|action, score| match hits.get(action) {
                Some(extra) => {
                    *score += extra;
                    true
                }
                None => false,
            });
        }
    }
    if let Some(exact) = resolve(query.trim()) {
        *combined.entry(exact.index).or_insert(0) += EXACT;
    }
    let mut hits: Vec<(usize, u32)> = combined.into_iter().collect();
    hits.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    result.hits = hits;
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

/// Every action one term matches, with its weight.
fn term_hits(term: &str) -> BTreeMap<usize, u32> {
    let mut hits = BTreeMap::new();
    let mut found = token(term);
    if found.is_none() && term.len() > 3 {
        // Plural English words: "members" -> "member".
        found = term.strip_suffix('s').and_then(token);
    }
    for &(action, weight) in found.unwrap_or(&[]) {
        hits.insert(action as usize, u32::from(weight));
    }
    if term.chars().any(is_cjk) {
        let mut add = |needle: &str, weight: u32| {
            for (i, text) in CJK_TEXT.iter().enumerate() {
                if text.contains(needle) {
                    let slot = hits.entry(i).or_insert(0);
                    *slot = (*slot).max(weight);
                }
            }
        };
        add(term, CJK_SUBSTRING);
        for synonym in synonyms(term) {
            if synonym.chars().any(is_cjk) {
                add(synonym, CJK_SYNONYM_SUBSTRING);
            }
        }
    }
    hits
}

/// Splits run-together Chinese into the longest pieces that match something, left to right.
fn segment(term: &str) -> Vec<String> {
    const LONGEST: usize = 6;
    let chars: Vec<char> = term.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let mut taken = 0;
        for len in (2..=LONGEST.min(chars.len() - start)).rev() {
            let piece: String = chars[start..start + len].iter().collect();
            if !term_hits(&piece).is_empty() {
                pieces.push(piece);
                taken = len;
                break;
            }
        }
        start += taken.max(1);
    }
    pieces
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}
