//! generated/search_index.rs: the keyword index. Tokens come from names, aliases, keywords,
//! summaries and categories; synonym groups are expanded here, at build time, so a query
//! costs one binary search per term.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::ir::Catalog;

/// How much a term matching each source counts when ranking.
const NAME: u8 = 20;
const NAME_PART: u8 = 8;
const ALIAS_PART: u8 = 6;
const KEYWORD: u8 = 10;
const KEYWORD_WORD: u8 = 6;
const SUMMARY_WORD: u8 = 4;
const CATEGORY: u8 = 2;

pub fn emit(catalog: &Catalog) -> TokenStream {
    let synonyms = synonym_table(catalog);
    // token -> action index -> weight, summed over the sources (name, aliases, keywords,
    // summary, category) that contain the token; within one source the best match counts.
    let mut index: BTreeMap<String, BTreeMap<usize, u8>> = BTreeMap::new();
    for (i, action) in catalog.actions.iter().enumerate() {
        let category = &catalog.categories[action.category];
        let mut name = vec![(action.name.clone(), NAME)];
        name.extend(words(&action.name).into_iter().map(|w| (w, NAME_PART)));
        let mut aliases = Vec::new();
        for alias in &action.aliases {
            aliases.push((alias.clone(), NAME));
            aliases.extend(words(alias).into_iter().map(|w| (w, ALIAS_PART)));
        }
        let mut keywords = Vec::new();
        for keyword in &action.keywords {
            keywords.push((keyword.clone(), KEYWORD));
            keywords.extend(words(keyword).into_iter().map(|w| (w, KEYWORD_WORD)));
        }
        let summary: Vec<(String, u8)> = words(&action.summary)
            .into_iter()
            .map(|w| (w, SUMMARY_WORD))
            .collect();
        let category_tokens = vec![
            (category.id.clone(), CATEGORY),
            (category.name.clone(), CATEGORY),
        ];
        for source in [name, aliases, keywords, summary, category_tokens] {
            let mut best: BTreeMap<String, u8> = BTreeMap::new();
            let mut offer = |token: String, weight: u8| {
                let slot = best.entry(token).or_insert(0);
                *slot = (*slot).max(weight);
            };
            for (token, weight) in source {
                let token = token.trim().to_lowercase();
                if token.is_empty() {
                    continue;
                }
                // A synonym counts for two thirds of the word the action really uses.
                for other in synonyms.get(&token).into_iter().flatten() {
                    offer(other.clone(), weight * 2 / 3);
                }
                offer(token, weight);
            }
            for (token, weight) in best {
                let slot = index.entry(token).or_default().entry(i).or_insert(0);
                *slot = slot.saturating_add(weight);
            }
        }
    }
    let token_words = strs(index.keys().cloned());
    let token_hits = lists(index.values().map(|hits| {
        hits.iter()
            .map(|(action, weight)| {
                let action = Literal::u16_unsuffixed(*action as u16);
                let weight = Literal::u8_unsuffixed(*weight);
                quote!((#action, #weight))
            })
            .collect()
    }));
    let synonym_words = strs(synonyms.keys().cloned());
    let synonym_groups = str_lists(synonyms.values().cloned());
    let mut stopwords: Vec<String> = catalog.stopwords.iter().map(|s| s.to_lowercase()).collect();
    stopwords.sort();
    stopwords.dedup();
    let stopwords = strs(stopwords);
    let substring_texts = strs(catalog.actions.iter().map(|a| {
        let mut text = vec![a.name.clone()];
        text.extend(a.aliases.iter().cloned());
        text.push(a.summary.clone());
        text.join("\n").to_lowercase()
    }));
    let cjk_texts = strs(catalog.actions.iter().map(|a| {
        let category = &catalog.categories[a.category];
        let mut parts: Vec<&str> = vec![&a.summary, &category.name];
        parts.extend(a.keywords.iter().map(String::as_str));
        parts.join("\n").to_lowercase()
    }));
    let name_words = str_lists(catalog.actions.iter().map(|a| words(&a.name)));
    let action_count = catalog.actions.len();
    let idf_slots = action_count + 1;
    // The runtime's ranking weight of a term that `hits` actions match: computed here so
    // the server needs no libm (`ln`) and loads one shared library less at start-up.
    let idf = (0..idf_slots).map(|hits| {
        let total = action_count as f64;
        Literal::f64_unsuffixed((1.0 + total / hits.max(1) as f64).ln())
    });
    quote! {
        use crate::catalog::facade::*;

        /// Lower-cased tokens, sorted by bytes.
        pub static TOKENS: Strs = #token_words;

        /// Per token (in [`TOKENS`] order): (action index, weight), by action index.
        pub static TOKEN_HITS: Lists<(u16, u8)> = #token_hits;

        /// Words that belong to a synonym group, sorted by bytes.
        pub static SYNONYM_WORDS: Strs = #synonym_words;

        /// Per word of [`SYNONYM_WORDS`]: the other words of its groups, sorted.
        pub static SYNONYM_GROUPS: StrLists = #synonym_groups;

        /// Sorted English filler words dropped from keyword queries.
        pub static STOPWORDS: Strs = #stopwords;

        /// Per action: lower-cased name, aliases and summary (substring search).
        pub static SUBSTRING_TEXT: Strs = #substring_texts;

        /// Per action: summary, category name and keywords, for Chinese terms that are not
        /// whole tokens.
        pub static CJK_TEXT: Strs = #cjk_texts;

        /// Per action: the words of its name (`set_group_ban` -> set, group, ban).
        pub static NAME_WORDS: StrLists = #name_words;

        /// By how many actions a term matches: its weight, ln(1 + actions / matches).
        pub static IDF: [f64; #idf_slots] = [#(#idf),*];
    }
}

/// A [`Strs`] table: the strings end to end, and where each one ends.
fn strs(items: impl IntoIterator<Item = String>) -> TokenStream {
    let items: Vec<String> = items.into_iter().collect();
    let ends = running_ends(items.iter().map(String::len));
    quote!(Strs::new(concat!(#(#items),*), &[#(#ends),*]))
}

/// A [`Lists`] table from each entry's items.
fn lists(entries: impl IntoIterator<Item = Vec<TokenStream>>) -> TokenStream {
    let entries: Vec<Vec<TokenStream>> = entries.into_iter().collect();
    let ends = running_ends(entries.iter().map(Vec::len));
    let items = entries.iter().flatten();
    quote!(Lists::new(&[#(#items),*], &[#(#ends),*]))
}

/// A [`StrLists`] table from each entry's words.
fn str_lists(entries: impl IntoIterator<Item = Vec<String>>) -> TokenStream {
    let entries: Vec<Vec<String>> = entries.into_iter().collect();
    let ends = running_ends(entries.iter().map(Vec::len));
    let words = strs(entries.into_iter().flatten());
    quote!(StrLists::new(#words, &[#(#ends),*]))
}

/// Where each entry ends when entries of these sizes are laid end to end.
fn running_ends(sizes: impl Iterator<Item = usize>) -> Vec<Literal> {
    sizes
        .scan(0usize, |end, size| {
            *end += size;
            let end = u32::try_from(*end).expect("a search table stays below 4 GiB");
            Some(Literal::u32_unsuffixed(end))
        })
        .collect()
}

/// word -> every other word that shares a synonym group with it (sorted, deduplicated).
fn synonym_table(catalog: &Catalog) -> BTreeMap<String, Vec<String>> {
    let mut table: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for group in &catalog.synonyms {
        let group: Vec<String> = group.iter().map(|w| w.to_lowercase()).collect();
        for word in &group {
            let others = table.entry(word.clone()).or_default();
            others.extend(group.iter().filter(|w| *w != word).cloned());
        }
    }
    for others in table.values_mut() {
        others.sort();
        others.dedup();
    }
    table
}

/// Lower-cased ASCII words of two or more characters, and whole runs of CJK text.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut current_is_cjk = false;
    let flush = |current: &mut String, out: &mut Vec<String>| {
        if current.chars().count() >= 2 {
            out.push(current.to_lowercase());
        }
        current.clear();
    };
    for c in text.chars() {
        let cjk = is_cjk(c);
        if c.is_ascii_alphanumeric() || cjk {
            if !current.is_empty() && cjk != current_is_cjk {
                flush(&mut current, &mut out);
            }
            current_is_cjk = cjk;
            current.push(c);
        } else {
            flush(&mut current, &mut out);
        }
    }
    flush(&mut current, &mut out);
    out
}

pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}
