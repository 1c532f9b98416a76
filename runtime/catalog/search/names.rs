//! How much of an action's name a query names, from bit masks the codegen wrote per token
//! ([`TOKEN_NAME_MASKS`]): one pass over a short list per term instead of comparing words
//! with name parts for every action. Words without masks (name fragments, stop words that
//! are name parts, words no token is) are compared with the parts of the kept actions only.

use std::borrow::Cow;
use std::sync::OnceLock;

use super::super::ACTIONS;
use super::super::generated::search_index::{
    GENERIC_PART_MASKS, NAME_WORDS, SYNONYM_GROUPS, SYNONYM_WORDS, TOKEN_NAME_MASKS,
};
use super::ACTION_COUNT;
use super::query::{self, Term, TermKind};
use super::request;

/// Per action: how many terms name a part of its name, and which parts the query covers.
pub struct NameMatches<'a> {
    named_terms: [u8; ACTION_COUNT],
    covered: [u16; ACTION_COUNT],
    /// Actions with a plural name part whose singular the query wrote (`kick member` against
    /// set_group_kick_members): the stem matched, but the query asks about one.
    plural_for_singular: [bool; ACTION_COUNT],
    /// Words that cover parts but have no masks (compared per kept action).
    loose_words: Vec<Cow<'a, str>>,
}

impl<'a> NameMatches<'a> {
    /// `ignored`: the query's stop words; one that is a name part still tells which action is
    /// meant (`can` in "can it send voice messages").
    pub fn new(terms: &'a [Term], ignored: &'a [String]) -> Self {
        let mut named_terms = [0u8; ACTION_COUNT];
        let mut covered = [0u16; ACTION_COUNT];
        let mut loose_words: Vec<Cow<'a, str>> = Vec::new();
        let mut plural_for_singular = [false; ACTION_COUNT];
        for term in terms {
            for (singular, actions) in plural_name_parts() {
                if *singular == term.text {
                    for &action in actions {
                        plural_for_singular[action] = true;
                    }
                }
            }
            match &term.kind {
                TermKind::Word(key) => match term.token {
                    Some(i) => {
                        for &(action, names, covers) in TOKEN_NAME_MASKS.get(i) {
                            let action = usize::from(action);
                            named_terms[action] =
                                named_terms[action].saturating_add(u8::from(names != 0));
                            covered[action] |= covers;
                        }
                    }
                    None => query::subwords(key).each(|word| {
                        for synonym in synonyms(&word) {
                            let synonym: &'a str = synonym;
                            loose_words.push(Cow::Borrowed(synonym));
                        }
                        loose_words.push(word);
                    }),
                },
                TermKind::Fragment(parts) => {
                    loose_words.extend(parts.iter().map(|p| Cow::Borrowed(p.as_str())));
                }
            }
        }
        loose_words.extend(ignored.iter().map(|w| Cow::Borrowed(w.as_str())));
        NameMatches {
            named_terms,
            covered,
            plural_for_singular,
            loose_words,
        }
    }

    /// How many word terms name a part of the action's name (a word, or a synonym of it, that
    /// is a part).
    pub fn named_terms(&self, action: usize) -> usize {
        usize::from(self.named_terms[action])
    }

    /// The query wrote in the singular what the action's name has in the plural.
    pub fn plural_for_singular(&self, action: usize) -> bool {
        self.plural_for_singular[action]
    }

    /// The share of the action's name parts that the query names (0.0 to 1.0). The generic
    /// parts (`get`, `set`, `nc`) count only when the query names them, so `群 禁言` covers
    /// all of `set_group_ban` but not all of `set_group_whole_ban`.
    pub fn coverage(&self, action: usize) -> f64 {
        let parts = NAME_WORDS.get(action);
        let count = parts.len();
        if count == 0 {
            return 0.0;
        }
        let mut covered = self.covered[action];
        if !self.loose_words.is_empty() {
            for (i, part) in parts.enumerate() {
                if self.loose_words.iter().any(|w| w == part) {
                    covered |= 1 << i;
                }
            }
        }
        let all = u16::MAX >> (16 - count);
        let counted = (all & !GENERIC_PART_MASKS[action]) | covered;
        f64::from(covered.count_ones()) / f64::from(counted.count_ones())
    }
}

/// The plural parts of action names (`members` in set_group_kick_members) by their
/// singular, with the actions named so. NAME_WORDS holds stems, which lose the plural, so
/// this is read from the names once.
fn plural_name_parts() -> &'static [(&'static str, Vec<usize>)] {
    static PARTS: OnceLock<Vec<(&'static str, Vec<usize>)>> = OnceLock::new();
    PARTS.get_or_init(|| {
        let mut parts: Vec<(&'static str, Vec<usize>)> = Vec::new();
        for (action, meta) in ACTIONS.iter().enumerate() {
            for part in meta.name.split('_').filter(|part| request::is_plural(part)) {
                let singular = &part[..part.len() - 1];
                match parts.iter_mut().find(|(known, _)| *known == singular) {
                    Some((_, actions)) => actions.push(action),
                    None => parts.push((singular, vec![action])),
                }
            }
        }
        parts
    })
}

/// Whether the action's name has a plural part (set_group_kick_members).
pub fn named_in_plural(action: usize) -> bool {
    plural_name_parts()
        .iter()
        .any(|(_, actions)| actions.contains(&action))
}

/// The other words of the term's synonym groups (none when it has no group).
pub fn synonyms(term: &str) -> impl Iterator<Item = &'static str> + use<> {
    let group = SYNONYM_WORDS.position(term);
    group.into_iter().flat_map(|i| SYNONYM_GROUPS.get(i))
}
