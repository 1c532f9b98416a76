//! Common Chinese words that read like a catalog word, one character apart (通常 and 通畅,
//! 接收 and 接受). The runtime fixes text that reads like a catalog word as a pinyin-input
//! typo (runtime/catalog/search/homophones.rs); these words are real words, not typos, so it
//! leaves them alone. jieba's dictionary says which words are common; the runtime does not
//! load it, so the list is worked out here.

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
    let by_reading = characters_by_main_reading();
    let mut found = BTreeSet::new();
    for word in words {
        let chars: Vec<char> = word.chars().collect();
        if !(2..=4).contains(&chars.len()) || !chars.iter().all(|&c| is_cjk(c)) {
            continue;
        }
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

/// Every CJK unified ideograph by its main (toneless) reading.
fn characters_by_main_reading() -> BTreeMap<&'static str, Vec<char>> {
    let mut by_reading: BTreeMap<&'static str, Vec<char>> = BTreeMap::new();
    for c in ('\u{4E00}'..='\u{9FFF}').filter(|&c| is_cjk(c)) {
        if let Some(&main) = readings(c).first() {
            by_reading.entry(main).or_default().push(c);
        }
    }
    by_reading
}

/// Every toneless reading of a character, the main one first.
fn readings(c: char) -> Vec<&'static str> {
    c.to_pinyin_multi()
        .map(|multi| multi.into_iter().map(|p| p.plain()).collect())
        .unwrap_or_default()
}
