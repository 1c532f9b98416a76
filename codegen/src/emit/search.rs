//! generated/search_index.rs: the keyword index. Tokens come from names, aliases, keywords,
//! summaries and categories; synonym groups are expanded here, at build time, so a query
//! costs one binary search per term.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
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
    let tokens = index.iter().map(|(token, hits)| {
        let hits = hits.iter().map(|(action, weight)| {
            let action = *action as u16;
            quote!((#action, #weight))
        });
        quote!((#token, &[#(#hits),*]))
    });
    let token_count = index.len();
    let synonym_rows = synonyms
        .iter()
        .map(|(word, group)| quote!((#word, &[#(#group),*])));
    let synonym_count = synonyms.len();
    let mut stopwords: Vec<String> = catalog.stopwords.iter().map(|s| s.to_lowercase()).collect();
    stopwords.sort();
    stopwords.dedup();
    let stopword_count = stopwords.len();
    let action_count = catalog.actions.len();
    let substring_texts = catalog.actions.iter().map(|a| {
        let mut text = vec![a.name.clone()];
        text.extend(a.aliases.iter().cloned());
        text.push(a.summary.clone());
        text.join("\n").to_lowercase()
    });
    let cjk_texts = catalog.actions.iter().map(|a| {
        let category = &catalog.categories[a.category];
        let mut parts: Vec<&str> = vec![&a.summary, &category.name];
        parts.extend(a.keywords.iter().map(String::as_str));
        parts.join("\n").to_lowercase()
    });
    let name_words = catalog.actions.iter().map(|a| {
        let parts = words(&a.name);
        quote!(&[#(#parts),*])
    });
    quote! {
        /// Lower-cased token -> (action index, weight), sorted by token.
        pub static TOKENS: [(&str, &[(u16, u8)]); #token_count] = [#(#tokens),*];

        /// Word -> the other words of its synonym groups, sorted by word.
        pub static SYNONYMS: [(&str, &[&str]); #synonym_count] = [#(#synonym_rows),*];

        /// Sorted English filler words dropped from keyword queries.
        pub static STOPWORDS: [&str; #stopword_count] = [#(#stopwords),*];

        /// Per action: lower-cased name, aliases and summary (substring search).
        pub static SUBSTRING_TEXT: [&str; #action_count] = [#(#substring_texts),*];

        /// Per action: summary, category name and keywords, for Chinese terms that are not
        /// whole tokens.
        pub static CJK_TEXT: [&str; #action_count] = [#(#cjk_texts),*];

        /// Per action: the words of its name (`set_group_ban` -> set, group, ban).
        pub static NAME_WORDS: [&[&str]; #action_count] = [#(#name_words),*];
    }
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
