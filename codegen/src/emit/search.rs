//! generated/search_index.rs: the keyword index. Tokens come from names, aliases, keywords,
//! summaries and categories, cut into words by [`analyze`] (jieba for Chinese, Snowball
//! stems for English); synonym groups are expanded here, at build time, so a query costs one
//! binary search per term.

mod analyze;
mod results;
mod sound_alike;

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, quote};

use crate::ir::Catalog;
use analyze::{Analyzer, cjk_vocabulary, is_cjk, name_parts};

/// How much a term matching each source counts when ranking.
const NAME: u8 = 20;
const NAME_PART: u8 = 8;
const ALIAS_PART: u8 = 6;
const KEYWORD: u8 = 10;
const KEYWORD_WORD: u8 = 6;
const SUMMARY_WORD: u8 = 4;
const CATEGORY: u8 = 2;
/// A Chinese word found inside an action's summary or keywords (`禁言` in 全员禁言).
const CJK_SUBSTRING: u8 = 4;

pub fn emit(catalog: &Catalog) -> TokenStream {
    let analyzer = &Analyzer::new(catalog);
    let synonyms = synonym_table(catalog, analyzer);
    // token -> action index -> weight, summed over the sources (name, aliases, keywords,
    // summary, category) that contain the token; within one source the best match counts.
    let mut index: BTreeMap<String, BTreeMap<usize, u8>> = BTreeMap::new();
    for (i, action) in catalog.actions.iter().enumerate() {
        let category = &catalog.categories[action.category];
        let parts = |name: &str, weight: u8| {
            name_parts(name)
                .into_iter()
                .map(move |p| (analyzer.normalize(&p), weight))
        };
        let mut name = vec![(action.name.to_lowercase(), NAME)];
        name.extend(parts(&action.name, NAME_PART));
        let mut aliases = Vec::new();
        for alias in &action.aliases {
            aliases.push((alias.to_lowercase(), NAME));
            aliases.extend(parts(alias, ALIAS_PART));
        }
        // The words of a phrase (`chat record`) are indexed without their synonyms: in the
        // phrase `record` means a log, not the voice `record` of the synonym table.
        let mut keywords = Vec::new();
        for keyword in &action.keywords {
            keywords.push((analyzer.normalize(keyword), KEYWORD, true));
            let expand = !keyword.trim().contains(' ');
            let words = analyzer.terms(keyword).into_iter();
            keywords.extend(words.map(|w| (w, KEYWORD_WORD, expand)));
        }
        let summary = analyzer
            .terms(&action.summary)
            .into_iter()
            .map(|w| (w, SUMMARY_WORD));
        let category_tokens = [
            (category.id.clone(), CATEGORY),
            (category.name.clone(), CATEGORY),
        ];
        let expanded = |source: Vec<(String, u8)>| -> Vec<(String, u8, bool)> {
            source.into_iter().map(|(t, w)| (t, w, true)).collect()
        };
        let sources = [
            expanded(name),
            expanded(aliases),
            keywords,
            expanded(summary.collect()),
            expanded(category_tokens.to_vec()),
        ];
        for source in sources {
            let mut best: BTreeMap<String, u8> = BTreeMap::new();
            let mut offer = |token: String, weight: u8| {
                let slot = best.entry(token).or_insert(0);
                *slot = (*slot).max(weight);
            };
            for (token, weight, expand) in source {
                if token.is_empty() {
                    continue;
                }
                // A synonym counts for two thirds of the word the action really uses.
                let others = synonyms.get(&token).filter(|_| expand);
                for other in others.into_iter().flatten() {
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
    let mut stopwords: Vec<String> = catalog.stopwords.iter().map(|s| s.to_lowercase()).collect();
    stopwords.sort();
    stopwords.dedup();
    let vocabulary = cjk_vocabulary(&index, &synonyms, &stopwords);
    let cjk_freqs: Vec<Literal> = vocabulary
        .iter()
        .map(|w| {
            let freq = u32::try_from(analyzer.frequency(w)).unwrap_or(u32::MAX);
            Literal::u32_unsuffixed(freq)
        })
        .collect();
    let cjk_count = Literal::usize_unsuffixed(vocabulary.len());
    let cjk_total = Literal::u64_unsuffixed(analyzer.total_frequency());
    // What the runtime's segmenter finds inside each vocabulary word, worked out here with
    // the same dictionary, so ranking a query needs no segmenter pass per term.
    let query_segmenter = analyze::QuerySegmenter::new(
        vocabulary
            .iter()
            .map(|w| (w.as_str(), analyzer.frequency(w))),
        analyzer.total_frequency(),
    );
    let cjk_subwords = str_lists(vocabulary.iter().map(|w| query_segmenter.subwords(w)));
    let cjk_words = strs(vocabulary);

    let intents = IntentWords::new(catalog, analyzer);
    let token_intents = index
        .keys()
        .map(|token| Literal::u8_unsuffixed(intents.bits(token, &synonyms)));
    let sound_alikes = sound_alike::common_sound_alikes(index.keys().map(String::as_str), analyzer);
    let sound_alikes = strs(sound_alikes.into_iter().filter(|w| !index.contains_key(w)));
    let by_reading = sound_alike::words_by_reading(index.keys().map(String::as_str));
    let reading_keys = strs(by_reading.keys().cloned());
    let reading_words = str_lists(by_reading.into_values());
    let (syllables, main_readings) = sound_alike::main_reading_table();
    let syllables = strs(syllables);
    let main_readings_from = Literal::u32_unsuffixed(u32::from(sound_alike::TABLE_FROM));
    let main_reading_count = Literal::usize_unsuffixed(main_readings.len());
    let main_readings = main_readings.into_iter().map(Literal::u16_unsuffixed);
    let token_count = Literal::usize_unsuffixed(index.len());
    let cjk_substring = Literal::u32_unsuffixed(u32::from(CJK_SUBSTRING));
    let token_words = strs(index.keys().cloned());
    // A Chinese token also matches every action whose Chinese text holds it (with
    // CJK_SUBSTRING): worked out here, so a query scans that text only for a word no token is.
    let cjk_text_values = cjk_texts(catalog);
    let token_hits = lists(index.iter().map(|(token, hits)| {
        let mut hits = hits.clone();
        if token.chars().any(is_cjk) {
            for (action, text) in cjk_text_values.iter().enumerate() {
                if text.contains(token.as_str()) {
                    let weight = hits.entry(action).or_insert(0);
                    *weight = weight.saturating_add(CJK_SUBSTRING);
                }
            }
        }
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
    let stopwords = strs(stopwords);
    let substring_texts = strs(catalog.actions.iter().map(|a| {
        let mut text = vec![a.name.clone()];
        text.extend(a.aliases.iter().cloned());
        text.push(a.summary.clone());
        text.join("\n").to_lowercase()
    }));
    let cjk_texts = strs(cjk_text_values);
    let normalized_parts = |name: &str| -> Vec<String> {
        name_parts(name)
            .iter()
            .map(|p| analyzer.normalize(p))
            .collect()
    };
    let action_parts: Vec<Vec<String>> = catalog
        .actions
        .iter()
        .map(|a| normalized_parts(&a.name))
        .collect();
    let name_masks = name_masks(&index, &synonyms, &query_segmenter, &action_parts);
    let token_name_masks = lists(name_masks.iter().map(|masks| {
        masks
            .iter()
            .map(|(action, names, covers)| {
                let action = Literal::u16_unsuffixed(*action as u16);
                let names = Literal::u16_unsuffixed(*names);
                let covers = Literal::u16_unsuffixed(*covers);
                quote!((#action, #names, #covers))
            })
            .collect()
    }));
    let results::Tables {
        token_counts,
        token_fields,
        people_results,
    } = results::tables(catalog, analyzer, index.keys().cloned(), &synonyms);
    let generic_masks = action_parts
        .iter()
        .map(|parts| Literal::u16_unsuffixed(part_mask(parts, |p| GENERIC_PARTS.contains(&p))));
    let name_words = str_lists(action_parts.iter().cloned());
    let (sequences, sequence_actions): (Vec<Vec<String>>, Vec<Literal>) = catalog
        .actions
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            std::iter::once(&a.name)
                .chain(&a.aliases)
                .map(move |n| (i, n))
        })
        .map(|(i, n)| (normalized_parts(n), Literal::u16_unsuffixed(i as u16)))
        .unzip();
    let sequence_count = Literal::usize_unsuffixed(sequence_actions.len());
    // "a b" -> the actions with parts a and b side by side in their name or an alias.
    let mut adjacent: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    for (i, a) in catalog.actions.iter().enumerate() {
        for name in std::iter::once(&a.name).chain(&a.aliases) {
            for pair in normalized_parts(name).windows(2) {
                let key = format!("{} {}", pair[0], pair[1]);
                adjacent.entry(key).or_default().insert(i as u16);
            }
        }
    }
    let adjacent_pairs = strs(adjacent.keys().cloned());
    let adjacent_pair_actions = lists(adjacent.values().map(|actions| {
        actions
            .iter()
            .map(|a| Literal::u16_unsuffixed(*a).into_token_stream())
            .collect()
    }));
    let name_sequences = str_lists(sequences);
    let raw_parts: BTreeSet<String> = catalog
        .actions
        .iter()
        .flat_map(|a| std::iter::once(&a.name).chain(&a.aliases))
        .flat_map(|n| name_parts(n))
        .collect();
    let spelling: BTreeSet<String> = catalog
        .actions
        .iter()
        .flat_map(|a| {
            let mut texts: Vec<&str> = vec![&a.name, &a.summary];
            texts.extend(a.aliases.iter().map(String::as_str));
            texts.extend(a.keywords.iter().map(String::as_str));
            texts
        })
        .chain(catalog.synonyms.iter().flatten().map(String::as_str))
        .flat_map(|text| Analyzer::surface_words(&text.replace(['_', '.'], " ")))
        .filter(|w| !stopwords_contains(catalog, w))
        .collect();
    // Every English word the catalog writes, and the stop words, with the stem the index
    // uses: the runtime looks a query word up here before running the stemmer.
    let stem_table: BTreeMap<String, String> = spelling
        .iter()
        .chain(&raw_parts)
        .chain(catalog.stopwords.iter())
        .map(|w| w.to_lowercase())
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic()))
        .map(|w| {
            let stem = analyzer.normalize(&w);
            (w, stem)
        })
        .collect();
    let stem_words = strs(stem_table.keys().cloned());
    let stems = strs(stem_table.values().cloned());
    let name_part_words = strs(raw_parts);
    let spelling_words = strs(spelling);
    let longest_phrase = Literal::usize_unsuffixed(
        index
            .keys()
            .map(|token| token.split(' ').count())
            .max()
            .unwrap_or(1),
    );
    let action_count = catalog.actions.len();
    let action_count_literal = Literal::usize_unsuffixed(action_count);
    let idf_slots = action_count + 1;
    // The runtime's ranking weight of a term that `hits` actions match: computed here so
    // the server needs no libm (`ln`) and loads one shared library less at start-up.
    let idf = (0..idf_slots).map(|hits| {
        let total = action_count as f64;
        Literal::f64_unsuffixed((1.0 + total / hits.max(1) as f64).ln())
    });
    quote! {
        use crate::catalog::facade::*;

        /// Normalized tokens (lower case; English words as their Snowball stem), sorted by
        /// bytes.
        pub static TOKENS: Strs = #token_words;

        /// The most words a token has (a keyword phrase such as `remove myself from group`):
        /// a longer query is no phrase, and is not looked up as one.
        pub const LONGEST_PHRASE: usize = #longest_phrase;

        /// Per token (in [`TOKENS`] order): what a query holding it wants done, as bits:
        /// 1 read (`列表`), 2 write (`删除`, `kick`); from the spec's intents and their
        /// synonym groups.
        pub static TOKEN_INTENTS: [u8; #token_count] = [#(#token_intents),*];

        /// Common Chinese words that read like a Chinese token one character apart (通常 for
        /// 通畅), sorted by bytes: real words, never corrected as pinyin typos.
        pub static COMMON_SOUND_ALIKES: Strs = #sound_alikes;

        /// The readings of the Chinese tokens of two to four characters (toneless pinyin,
        /// space-separated, every reading of a polyphonic character), sorted by bytes.
        pub static READINGS: Strs = #reading_keys;

        /// Per entry of [`READINGS`]: the tokens that read that way.
        pub static READING_WORDS: StrLists = #reading_words;

        /// Toneless pinyin syllables, sorted by bytes.
        pub static SYLLABLES: Strs = #syllables;

        /// The first character of [`MAIN_READINGS`].
        pub const MAIN_READINGS_FROM: u32 = #main_readings_from;

        /// Per character from [`MAIN_READINGS_FROM`] to U+9FFF: its main reading, as an index
        /// into [`SYLLABLES`] (`u16::MAX` for a character without one).
        pub static MAIN_READINGS: [u16; #main_reading_count] = [#(#main_readings),*];

        /// Per token (in [`TOKENS`] order): (action index, weight), by action index; a
        /// Chinese token's weight includes [`CJK_SUBSTRING`] where the action's text holds it.
        pub static TOKEN_HITS: Lists<(u16, u8)> = #token_hits;

        /// Normalized words that belong to a synonym group, sorted by bytes.
        pub static SYNONYM_WORDS: Strs = #synonym_words;

        /// Per word of [`SYNONYM_WORDS`]: the other words of its groups, sorted.
        pub static SYNONYM_GROUPS: StrLists = #synonym_groups;

        /// Sorted stop words, English and Chinese, dropped from keyword queries.
        pub static STOPWORDS: Strs = #stopwords;

        /// Per action: lower-cased name, aliases and summary (substring search).
        pub static SUBSTRING_TEXT: Strs = #substring_texts;

        /// Per action: summary, category name and keywords, for Chinese terms that are not
        /// whole tokens.
        pub static CJK_TEXT: Strs = #cjk_texts;

        /// The weight of a Chinese word found inside an action's [`CJK_TEXT`]; for tokens it
        /// is already part of [`TOKEN_HITS`].
        pub const CJK_SUBSTRING: u32 = #cjk_substring;

        /// Per action: the normalized parts of its name (`set_group_ban` -> set, group, ban).
        pub static NAME_WORDS: StrLists = #name_words;

        /// Per token (in [`TOKENS`] order): (action index, the parts of the action's name the
        /// token or a synonym of it is, the parts it or the words inside it or their synonyms
        /// are), as bit masks over [`NAME_WORDS`], for the actions where either is not empty.
        pub static TOKEN_NAME_MASKS: Lists<(u16, u16, u16)> = #token_name_masks;

        /// Per token (in [`TOKENS`] order): the actions whose result counts what the token
        /// or a synonym of it names (`member` -> get_group_info, for its `member_count`).
        pub static TOKEN_COUNTS: Lists<u16> = #token_counts;

        /// Per token (in [`TOKENS`] order): the actions whose result has a field the token
        /// or a synonym of it names (`名片` -> get_group_member_info, for its `card`).
        pub static TOKEN_FIELDS: Lists<u16> = #token_fields;

        /// Per action: whether its result holds people (a user id or nickname), which is
        /// what a `who` question asks for.
        pub static PEOPLE_RESULTS: [bool; #action_count_literal] = #people_results;

        /// Per action: its name parts that say little on their own (`get`, `set`, `nc`), as a
        /// bit mask over [`NAME_WORDS`].
        pub static GENERIC_PART_MASKS: [u16; #action_count_literal] = [#(#generic_masks),*];

        /// Every name and alias as its normalized parts, for name fragments (`group_msg`).
        pub static NAME_SEQUENCES: StrLists = #name_sequences;

        /// Neighbouring name parts as `"a b"` (normalized), sorted by bytes.
        pub static ADJACENT_PAIRS: Strs = #adjacent_pairs;

        /// Per entry of [`ADJACENT_PAIRS`]: the actions whose name or an alias holds the
        /// pair, by action index.
        pub static ADJACENT_PAIR_ACTIONS: Lists<u16> = #adjacent_pair_actions;

        /// Per entry of [`NAME_SEQUENCES`]: the action it names.
        pub static SEQUENCE_ACTIONS: [u16; #sequence_count] = [#(#sequence_actions),*];

        /// The parts of every name and alias as written, sorted: run-together queries
        /// (`groupmsg`) are split into these.
        pub static NAME_PARTS: Strs = #name_part_words;

        /// English words as written (the catalog's words, name parts and stop words), sorted
        /// by bytes.
        pub static STEM_WORDS: Strs = #stem_words;

        /// Per word of [`STEM_WORDS`]: its Snowball stem, the form the index uses.
        pub static STEMS: Strs = #stems;

        /// The catalog's English words as written (three letters or more, no stop words),
        /// sorted: a query word that matches nothing is corrected to the nearest of these.
        pub static SPELLING: Strs = #spelling_words;

        /// The Chinese vocabulary a query is segmented against (index words and stop words),
        /// sorted by bytes.
        pub static CJK_WORDS: Strs = #cjk_words;

        /// Per word of [`CJK_WORDS`]: jieba's frequency for it at build time.
        pub static CJK_FREQS: [u32; #cjk_count] = [#(#cjk_freqs),*];

        /// Per word of [`CJK_WORDS`]: the words the query segmenter finds inside it (jieba's
        /// search mode), the word itself last if the segmenter does not give it.
        pub static CJK_SUBWORDS: StrLists = #cjk_subwords;

        /// The total of jieba's dictionary at build time: with it, a word's frequency gives
        /// the same probability at run time as at build time.
        pub static CJK_TOTAL: u64 = #cjk_total;

        /// By how many actions a term matches: its weight, ln(1 + actions / matches).
        pub static IDF: [f64; #idf_slots] = [#(#idf),*];
    }
}

/// Name parts that say little about what an action is for: they count towards a name's
/// coverage only when the query names them.
const GENERIC_PARTS: [&str; 3] = ["get", "set", "nc"];

/// The bits of the parts that pass `test` (part i is bit i).
fn part_mask(parts: &[String], test: impl Fn(&str) -> bool) -> u16 {
    assert!(parts.len() <= 16, "an action name has at most 16 parts");
    parts
        .iter()
        .enumerate()
        .filter(|(_, p)| test(p))
        .fold(0, |mask, (i, _)| mask | 1 << i)
}

/// Per token (in index order): for each action whose name it touches, (action, the parts the
/// token or one of its synonyms is, the parts the words inside it or their synonyms are). The
/// runtime ranks with these instead of comparing words with name parts per action.
fn name_masks(
    index: &BTreeMap<String, BTreeMap<usize, u8>>,
    synonyms: &BTreeMap<String, Vec<String>>,
    segmenter: &analyze::QuerySegmenter,
    action_parts: &[Vec<String>],
) -> Vec<Vec<(usize, u16, u16)>> {
    let with_synonyms = |word: &str, into: &mut BTreeSet<String>| {
        into.insert(word.to_string());
        into.extend(synonyms.get(word).into_iter().flatten().cloned());
    };
    index
        .keys()
        .map(|token| {
            let mut names = BTreeSet::new();
            with_synonyms(token, &mut names);
            let mut covers = BTreeSet::new();
            let inside = if token.chars().any(is_cjk) {
                segmenter.subwords(token)
            } else {
                vec![token.clone()]
            };
            for word in &inside {
                with_synonyms(word, &mut covers);
            }
            action_parts
                .iter()
                .enumerate()
                .map(|(action, parts)| {
                    let named = part_mask(parts, |p| names.contains(p));
                    let covered = part_mask(parts, |p| covers.contains(p));
                    (action, named, covered)
                })
                .filter(|(_, named, covered)| named | covered != 0)
                .collect()
        })
        .collect()
}

fn stopwords_contains(catalog: &Catalog, word: &str) -> bool {
    catalog
        .stopwords
        .iter()
        .any(|s| s.eq_ignore_ascii_case(word))
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

/// word -> every other word that shares a synonym group with it (normalized, sorted,
/// deduplicated).
/// Per action: summary, category name and keywords, lower-cased: where a Chinese word that
/// is not one of the action's tokens may still be found.
fn cjk_texts(catalog: &Catalog) -> Vec<String> {
    catalog
        .actions
        .iter()
        .map(|a| {
            let category = &catalog.categories[a.category];
            let mut parts: Vec<&str> = vec![&a.summary, &category.name];
            parts.extend(a.keywords.iter().map(String::as_str));
            parts.join("\n").to_lowercase()
        })
        .collect()
}

/// The spec's intent words, normalized once.
struct IntentWords {
    read: BTreeSet<String>,
    write: BTreeSet<String>,
}

impl IntentWords {
    fn new(catalog: &Catalog, analyzer: &Analyzer) -> Self {
        let normalized = |list: &[String]| list.iter().map(|w| analyzer.normalize(w)).collect();
        IntentWords {
            read: normalized(&catalog.intents.read),
            write: normalized(&catalog.intents.write),
        }
    }

    /// The intent bits of a token: 1 when it or a synonym is a read word, 2 when a write
    /// word.
    fn bits(&self, token: &str, synonyms: &BTreeMap<String, Vec<String>>) -> u8 {
        let words = std::iter::once(token).chain(
            synonyms
                .get(token)
                .into_iter()
                .flatten()
                .map(String::as_str),
        );
        let (mut read, mut write) = (false, false);
        for word in words {
            read |= self.read.contains(word);
            write |= self.write.contains(word);
        }
        u8::from(read) | (u8::from(write) << 1)
    }
}

fn synonym_table(catalog: &Catalog, analyzer: &Analyzer) -> BTreeMap<String, Vec<String>> {
    let mut table: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for group in &catalog.synonyms {
        let group: Vec<String> = group.iter().map(|w| analyzer.normalize(w)).collect();
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
