//! How catalog text becomes index terms, at build time.
//!
//! Chinese runs are segmented by jieba (its full dictionary, with the spec's own words added
//! so that `戳一戳` or `群待办` are never split); English words are lower-cased and reduced to
//! their Snowball stem (`members` -> `member`, `logged` -> `log`). The runtime applies the same
//! stemmer to queries and segments Chinese queries against the vocabulary written here, so a
//! query term and an index term meet in the same form.

use std::collections::{BTreeMap, BTreeSet};

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};

use crate::ir::Catalog;

pub struct Analyzer {
    jieba: Jieba,
    stemmer: Stemmer,
    /// The Chinese words the spec itself uses (keywords, synonyms, category names): the only
    /// single characters kept as index terms (`群`, `赞`), since jieba's other one-character
    /// pieces are particles (`向`, `把`).
    spec_words: BTreeSet<String>,
    stopwords: BTreeSet<String>,
}

impl Analyzer {
    pub fn new(catalog: &Catalog) -> Self {
        let mut spec_words = BTreeSet::new();
        let spec_text = catalog
            .actions
            .iter()
            .flat_map(|a| a.keywords.iter())
            .chain(catalog.synonyms.iter().flatten())
            .chain(catalog.categories.iter().map(|c| &c.name));
        for text in spec_text {
            spec_words.extend(cjk_runs(&text.to_lowercase()));
        }
        let mut jieba = Jieba::new();
        for word in &spec_words {
            // The frequency that makes jieba keep the word whole.
            let freq = jieba.suggest_freq(word);
            jieba.add_word(word, Some(freq), None);
        }
        let stopwords = catalog.stopwords.iter().map(|w| w.to_lowercase()).collect();
        Analyzer {
            jieba,
            stemmer: Stemmer::create(Algorithm::English),
            spec_words,
            stopwords,
        }
    }

    /// The form a word is indexed and looked up under: lower case, and the English stem of a
    /// purely alphabetic ASCII word.
    pub fn normalize(&self, word: &str) -> String {
        let lower = word.trim().to_lowercase();
        if !lower.is_empty() && lower.chars().all(|c| c.is_ascii_alphabetic()) {
            self.stemmer.stem(&lower).into_owned()
        } else {
            lower
        }
    }

    /// A text's index terms in text order: English words of two or more characters, the
    /// Chinese words jieba finds (one-character pieces only when the spec uses them), stop
    /// words left out.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut terms = Vec::new();
        for run in runs(&text.to_lowercase()) {
            match run {
                Run::Ascii(word) => {
                    if word.len() >= 2 && !self.stopwords.contains(&word) {
                        terms.push(self.normalize(&word));
                    }
                }
                Run::Cjk(run) => {
                    for token in self.jieba.cut_for_search(&run, false) {
                        let word = token.word;
                        let keep = (word.chars().count() >= 2 || self.spec_words.contains(word))
                            && !self.stopwords.contains(word);
                        if keep {
                            terms.push(word.to_string());
                        }
                    }
                }
            }
        }
        terms
    }

    /// How often jieba's dictionary (with the spec's words) expects the word: the runtime's
    /// segmenter weighs its vocabulary with these, so it cuts queries as jieba would.
    pub fn frequency(&self, word: &str) -> usize {
        self.jieba.suggest_freq(word)
    }

    /// Whether jieba's dictionary holds the word at least `min` times.
    pub fn is_common(&self, word: &str, min: usize) -> bool {
        self.jieba.has_word(word) && self.jieba.suggest_freq(word) >= min
    }

    /// The sum of the frequencies in jieba's dictionary, which scales them into
    /// probabilities. jieba keeps it private and shows it only in its `Debug` output.
    pub fn total_frequency(&self) -> u64 {
        let shown = format!("{:?}", self.jieba);
        shown
            .split("total_freq: ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok())
            .expect("jieba's Debug output names total_freq")
    }

    /// The lower-cased English words of a text (no stemming): what a misspelled query word is
    /// corrected towards.
    pub fn surface_words(text: &str) -> Vec<String> {
        runs(&text.to_lowercase())
            .into_iter()
            .filter_map(|run| match run {
                Run::Ascii(word)
                    if word.len() >= 3 && word.chars().all(|c| c.is_ascii_alphabetic()) =>
                {
                    Some(word)
                }
                _ => None,
            })
            .collect()
    }
}

/// jieba over the query vocabulary only, weighted as in the full dictionary: the segmenter
/// the runtime builds (runtime/catalog/search/query.rs), so what it finds inside a word can
/// be written into the index.
pub struct QuerySegmenter {
    jieba: Jieba,
}

/// A private-use character: never part of a Chinese run (the runtime uses the same one).
const UNREACHABLE_WORD: &str = "\u{E000}";

impl QuerySegmenter {
    pub fn new<'a>(words: impl Iterator<Item = (&'a str, usize)>, total: u64) -> Self {
        let mut jieba = Jieba::empty();
        let mut sum = 0u64;
        for (word, freq) in words {
            let freq = u32::try_from(freq).unwrap_or(u32::MAX);
            jieba.add_word(word, Some(freq as usize), None);
            sum += u64::from(freq);
        }
        let rest = total.saturating_sub(sum);
        jieba.add_word(UNREACHABLE_WORD, Some(rest as usize), None);
        QuerySegmenter { jieba }
    }

    /// The word and the known words inside it (jieba's search mode), as the runtime's
    /// `subwords` gives them.
    pub fn subwords(&self, word: &str) -> Vec<String> {
        if word.chars().count() < 3 {
            return vec![word.to_string()];
        }
        let mut words: Vec<String> = self
            .jieba
            .cut_for_search(word, false)
            .into_iter()
            .map(|piece| piece.word.to_string())
            .collect();
        if !words.iter().any(|w| w == word) {
            words.push(word.to_string());
        }
        words
    }
}

/// The parts of an action name or alias (`.send_packet` -> send, packet), lower-cased.
pub fn name_parts(name: &str) -> Vec<String> {
    name.to_lowercase()
        .split(['_', '.'])
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

enum Run {
    Ascii(String),
    Cjk(String),
}

/// The text cut into runs of ASCII letters and digits and runs of Chinese characters;
/// everything else separates them.
fn runs(text: &str) -> Vec<Run> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut current_is_cjk = false;
    let flush = |current: &mut String, is_cjk: bool, out: &mut Vec<Run>| {
        if !current.is_empty() {
            let run = std::mem::take(current);
            out.push(if is_cjk {
                Run::Cjk(run)
            } else {
                Run::Ascii(run)
            });
        }
    };
    for c in text.chars() {
        let cjk = is_cjk(c);
        if c.is_ascii_alphanumeric() || cjk {
            if !current.is_empty() && cjk != current_is_cjk {
                flush(&mut current, current_is_cjk, &mut out);
            }
            current_is_cjk = cjk;
            current.push(c);
        } else {
            flush(&mut current, current_is_cjk, &mut out);
        }
    }
    flush(&mut current, current_is_cjk, &mut out);
    out
}

fn cjk_runs(text: &str) -> Vec<String> {
    runs(text)
        .into_iter()
        .filter_map(|run| match run {
            Run::Cjk(run) => Some(run),
            Run::Ascii(_) => None,
        })
        .collect()
}

pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// The Chinese words a query may be cut into: every Chinese index token, synonym and stop
/// word, except compounds of the others that are neither synonyms nor stop words
/// (`删除群文件` = 删除 + 群 + 文件). A compound in the segmenter's dictionary would swallow
/// text a query means differently (`删除群文件夹` would become 删除群文件 + 夹), and its
/// parts find the same actions: every Chinese term also matches as a substring of the
/// actions' text.
pub fn cjk_vocabulary(
    index: &BTreeMap<String, BTreeMap<usize, u8>>,
    synonyms: &BTreeMap<String, Vec<String>>,
    stopwords: &[String],
) -> Vec<String> {
    let words: BTreeSet<String> = index
        .keys()
        .chain(synonyms.keys())
        .chain(stopwords)
        .filter(|w| !w.is_empty() && w.chars().all(is_cjk))
        .cloned()
        .collect();
    // A word of a synonym group stays whole: the group says what it means as one word
    // (`聊天记录` is history, which 聊天 + 记录 would not find). So does a stop word: cut,
    // `这个人` (someone) would become 这 + 个人 (personal).
    words
        .iter()
        .filter(|w| synonyms.contains_key(*w) || stopwords.contains(*w) || !is_compound(w, &words))
        .cloned()
        .collect()
}

/// Whether `word` splits into two or more other words of `words`.
fn is_compound(word: &str, words: &BTreeSet<String>) -> bool {
    let chars: Vec<char> = word.chars().collect();
    // pieces[i]: the fewest words covering chars[..i], if any.
    let mut pieces: Vec<Option<usize>> = vec![None; chars.len() + 1];
    pieces[0] = Some(0);
    for end in 1..=chars.len() {
        for start in 0..end {
            let Some(count) = pieces[start] else {
                continue;
            };
            let piece: String = chars[start..end].iter().collect();
            if piece != word && words.contains(&piece) {
                let count = count + 1;
                pieces[end] = Some(pieces[end].map_or(count, |c| c.min(count)));
            }
        }
    }
    pieces[chars.len()].is_some_and(|count| count >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compounds_of_other_words_are_recognised() {
        let words: BTreeSet<String> = ["删除", "群", "文件", "文件夹", "戳"]
            .into_iter()
            .map(String::from)
            .collect();
        assert!(is_compound("删除群文件", &words));
        assert!(is_compound("群文件夹", &words));
        assert!(!is_compound("戳一戳", &words), "一 is no word here");
        assert!(
            !is_compound("文件", &words),
            "a word is not its own compound"
        );
    }

    #[test]
    fn a_stop_word_stays_whole_in_the_vocabulary() {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let index: BTreeMap<String, BTreeMap<usize, u8>> = ["这", "个人", "群", "文件"]
            .into_iter()
            .map(|w| (w.to_string(), BTreeMap::from([(0, 1)])))
            .collect();
        let stopwords = words(&["这个人"]);
        let vocabulary = cjk_vocabulary(&index, &BTreeMap::new(), &stopwords);
        assert!(vocabulary.contains(&"这个人".to_string()));
        let with_compound = cjk_vocabulary(
            &index
                .into_iter()
                .chain([("群文件".to_string(), BTreeMap::new())])
                .collect(),
            &BTreeMap::new(),
            &[],
        );
        assert!(!with_compound.contains(&"群文件".to_string()));
    }
}
