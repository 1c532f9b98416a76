//! What the runtime needs to fix pinyin-input typos (runtime/catalog/search/homophones.rs):
//! the catalog's Chinese words by how they read, and the common Chinese words that read like a
//! catalog word one character apart (通常 and 通畅, 接收 and 接受). Those are real words, not
//! typos, so the runtime leaves them alone; jieba's dictionary says which words are common,
//! and the runtime does not load it, so the list is worked out here.

use std::collections::{BTreeMap, BTreeSet};

use pinyin::ToPinyinMulti;

use super::analyze::{Analyzer, is_cjk};

/// How often jieba's dictionary must hold a word for it to count as a real word rather than
/// a typo. Rare dictionary words are still read as typos of the catalog's words (进言, 64
/// times, is 禁言 to a QQ-bot operator; 通常, 8,161 times, is never 通畅).
const COMMON: usize = 300;

/// The common words that differ from one of `words` (Chinese catalog words of two to four
/// characters) in one character, read the way the runtime reads a typo: the other
/// character's main reading is a reading of the catalog word's character.
pub fn common_sound_alikes<'a>(
    words: impl Iterator<Item = &'a str>,
    analyzer: &Analyzer,
) -> BTreeSet<String> {
    let mut by_reading: BTreeMap<&'static str, Vec<char>> = BTreeMap::new();
    for (c, main) in main_readings() {
        by_reading.entry(main).or_default().push(c);
    }
    let mut found = BTreeSet::new();
    for chars in words.filter_map(short_chinese_word) {
        for (i, &c) in chars.iter().enumerate() {
            for reading in readings(c) {
                for &other in by_reading.get(reading).into_iter().flatten() {
                    if other == c {
                        continue;
                    }
                    let mut variant = chars.clone();
                    variant[i] = other;
                    let variant: String = variant.into_iter().collect();
                    if analyzer.is_common(&variant, COMMON) {
                        found.insert(variant);
                    }
                }
            }
        }
    }
    found
}

/// Every reading of each Chinese catalog word of two to four characters, as the words that
/// read that way: `che hui` -> 撤回. A word with polyphonic characters reads several ways
/// (`hui` and `kuai` for 会), each listed. The runtime looks a typed stretch up here by the
/// main readings of its characters, so finding the word it sounds like is one binary search.
pub fn words_by_reading<'a>(words: impl Iterator<Item = &'a str>) -> BTreeMap<String, Vec<String>> {
    /// Most readings listed for one word; a word of four polyphonic characters could have
    /// hundreds, all but a few of them never typed.
    const MOST: usize = 16;
    let mut index: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for word in words {
        let Some(chars) = short_chinese_word(word) else {
            continue;
        };
        let mut keys = vec![String::new()];
        for &c in &chars {
            let options = readings(c);
            if options.is_empty() {
                keys.clear();
                break;
            }
            keys = keys
                .iter()
                .flat_map(|key| {
                    options.iter().map(move |r| {
                        if key.is_empty() {
                            r.to_string()
                        } else {
                            format!("{key} {r}")
                        }
                    })
                })
                .take(MOST)
                .collect();
        }
        for key in keys {
            index.entry(key).or_default().insert(word.to_string());
        }
    }
    index
        .into_iter()
        .map(|(key, words)| (key, words.into_iter().collect()))
        .collect()
}

/// The first character of [`main_reading_table`]; it runs to U+9FFF (CJK Extension A and
/// the unified ideographs, the characters a query's Chinese runs hold).
pub const TABLE_FROM: char = '\u{3400}';
const TABLE_TO: char = '\u{9FFF}';

/// The main (toneless) reading of every character from [`TABLE_FROM`] to U+9FFF: the sorted
/// syllables, and per character the index of its syllable (`u16::MAX` for none). The runtime
/// reads a typed character here instead of linking the pinyin crate, whose tables hold
/// thousands of pointers the loader must relocate at every start.
pub fn main_reading_table() -> (Vec<String>, Vec<u16>) {
    let mains: BTreeMap<char, &'static str> = main_readings().collect();
    let syllables: BTreeSet<&'static str> = mains.values().copied().collect();
    let syllables: Vec<&'static str> = syllables.into_iter().collect();
    let slots = (TABLE_FROM..=TABLE_TO)
        .map(|c| match mains.get(&c) {
            Some(main) => {
                let at = syllables.binary_search(main).expect("collected above");
                u16::try_from(at).expect("fewer than 65,535 syllables")
            }
            None => u16::MAX,
        })
        .collect();
    (syllables.into_iter().map(str::to_string).collect(), slots)
}

/// Each Chinese character of the table's range with its main (toneless) reading: what the
/// runtime reads a typed character as, and so what the common words are found by.
fn main_readings() -> impl Iterator<Item = (char, &'static str)> {
    (TABLE_FROM..=TABLE_TO)
        .filter(|&c| is_cjk(c))
        .filter_map(|c| readings(c).first().map(|&main| (c, main)))
}

/// The characters of a Chinese word of two to four characters, the words a typo is read as.
fn short_chinese_word(word: &str) -> Option<Vec<char>> {
    let chars: Vec<char> = word.chars().collect();
    ((2..=4).contains(&chars.len()) && chars.iter().all(|&c| is_cjk(c))).then_some(chars)
}

/// Every toneless reading of a character, the main one first.
fn readings(c: char) -> Vec<&'static str> {
    c.to_pinyin_multi()
        .map(|multi| multi.into_iter().map(|p| p.plain()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_listed_under_every_reading() {
        let index = words_by_reading(["撤回", "会议", "群", "hello"].into_iter());
        assert_eq!(index["che hui"], ["撤回"]);
        // 会 reads hui and kuai: the word is found under both.
        assert_eq!(index["hui yi"], ["会议"]);
        assert_eq!(index["kuai yi"], ["会议"]);
        // One character, or no Chinese at all: nothing to mistype against.
        assert!(index.values().flatten().all(|w| w != "群" && w != "hello"));
    }
}
