//! What a keyword query asks for: its terms after stop words, Chinese segmentation, English
//! stems, name fragments and spelling correction.
//!
//! Everything here reads tables the codegen wrote: the query meets the index in the same
//! normalized form. Chinese runs are cut by jieba over the catalog's own vocabulary (with the
//! frequencies jieba's full dictionary gave those words at build time), so the full
//! dictionary is never loaded; the segmenter is built once, on the first Chinese query.

use std::borrow::Cow;
use std::sync::OnceLock;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};

use super::super::generated::search_index::{
    CJK_FREQS, CJK_SUBWORDS, CJK_TEXT, CJK_TOTAL, CJK_WORDS, NAME_PARTS, NAME_SEQUENCES,
    STEM_WORDS, STEMS, STOPWORDS, TOKEN_HITS, TOKENS,
};
use super::homophones;
use super::request::{self, Asks};
use super::spelling::correction;

/// One term of the AND.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The word as the query wrote it (lower case), or its corrected spelling: what
    /// diagnostics show.
    pub text: String,
    pub kind: TermKind,
    /// A word's entry in [`TOKENS`], looked up once here for everything that ranks it.
    pub token: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermKind {
    /// A normalized word, looked up in the token index (and, when Chinese, in the actions'
    /// Chinese text).
    Word(String),
    /// Normalized name parts in order (`group_msg`, `groupmsg`): matches the names and
    /// aliases that contain them as a run of parts.
    Fragment(Vec<String>),
}

/// A query taken apart.
#[derive(Debug, Default)]
pub struct Query {
    pub terms: Vec<Term>,
    /// Quoted text, then stop words, particles and numbers, dropped before the AND, each in
    /// query order.
    pub ignored: Vec<String>,
    /// How many of `ignored`, from the first, are values: quoted text, file names, addresses.
    pub values: usize,
    /// Misspelled words and what they were read as (`grup -> group`).
    pub corrected: Vec<String>,
    /// The catalog words inside the query's file names and addresses (`qun.qq.com`): they
    /// hint at the action the value is for, but stay out of the AND.
    pub hints: Vec<Term>,
    /// The terms of the clause that asks, when the query has several clauses and one asks
    /// (see [`Query::is_context`]).
    pub asking_terms: Option<std::ops::Range<usize>>,
    /// The terms of relative clauses (`a post that only friends can see`): they describe a
    /// thing the request is about, not what to do with it.
    pub relative_terms: Vec<std::ops::Range<usize>>,
    /// What kind of answer the query wants.
    pub asks: Asks,
}

impl Query {
    /// Whether term `t` only tells the story around the request: it stands outside the
    /// clause that asks.
    pub fn is_context(&self, t: usize) -> bool {
        self.asking_terms
            .as_ref()
            .is_some_and(|asking| !asking.contains(&t))
            || self.relative_terms.iter().any(|r| r.contains(&t))
    }
}

pub fn analyze(query: &str) -> Query {
    let mut out = Query::default();
    let values = request::values(query);
    let names = &values.pieces[values.pieces.len() - values.names..];
    for word in names
        .iter()
        .flat_map(|name| name.split(|c: char| !c.is_ascii_alphanumeric()))
    {
        let hint = term(word, normalize(word));
        if hint.token.is_some() && !is_stopword(word) {
            out.hints.push(hint);
        }
    }
    out.values = values.pieces.len();
    out.ignored.extend(values.pieces);
    let lower = values.rest.to_lowercase();
    let clauses = request::clauses(&lower);
    let asking = request::asking_clause(&clauses);
    // A clause that says what not to do names the wrong action: its words are left out,
    // unless nothing else is asked.
    let mut negated = Vec::new();
    for (i, clause) in clauses.iter().enumerate() {
        if clauses.len() > 1 && request::is_negated(clause) {
            let mut apart = Query::default();
            clause_terms(clause, &mut apart);
            negated.push(apart);
            continue;
        }
        let first = out.terms.len();
        match request::relative_clause(clause) {
            Some(at) => {
                clause_terms(&clause[..at], &mut out);
                let main = out.terms.len();
                clause_terms(&clause[at..], &mut out);
                if out.terms.len() > main && main > first {
                    out.relative_terms.push(main..out.terms.len());
                }
            }
            None => clause_terms(clause, &mut out),
        }
        if asking == Some(i) && out.terms.len() > first {
            out.asking_terms = Some(first..out.terms.len());
        }
    }
    let keep_negated = out.terms.is_empty();
    for apart in negated {
        out.corrected.extend(apart.corrected);
        out.ignored.extend(apart.ignored);
        if keep_negated {
            out.terms.extend(apart.terms);
        } else {
            out.ignored.extend(apart.terms.into_iter().map(|t| t.text));
        }
    }
    // What the query asks is read outside its values: a quoted `"blocked"` is a value.
    let words = out.terms.iter().map(|t| t.text.as_str());
    out.asks = request::asks(&out.ignored[out.values..], words, &values.rest, &clauses);
    out
}

/// English particles that make a phrasal verb (`check in`, `sign up`).
const PARTICLES: [&str; 7] = ["in", "up", "out", "on", "off", "back", "down"];
/// The terms of one clause, in order.
fn clause_terms(clause: &str, out: &mut Query) {
    let mut runs = runs(clause).into_iter().peekable();
    while let Some(run) = runs.next() {
        match run {
            Run::Ascii(text) => match runs.peek() {
                // A verb and its particle written apart (`check in`), or a hyphenated word
                // (`one-way`), are the one catalog word they spell together.
                Some(Run::Ascii(next))
                    if hyphen_follows(clause, text)
                        || (PARTICLES.contains(next) && !is_stopword(text)) =>
                {
                    let joined = format!("{text}{next}");
                    if is_catalog_word(&joined) {
                        runs.next();
                        ascii_word(&joined, out);
                    } else {
                        ascii_run(text, out);
                    }
                }
                _ => ascii_run(text, out),
            },
            Run::Cjk(text) => cjk_run(text, out),
        }
    }
}

/// Whether a hyphen follows `run`, a slice of `clause` (`one-way`).
fn hyphen_follows(clause: &str, run: &str) -> bool {
    let end = run.as_ptr() as usize - clause.as_ptr() as usize + run.len();
    clause[end..].starts_with('-')
}

/// Whether the catalog writes the word (`checkin`), looked up without running the stemmer:
/// a word the catalog writes has its stem in [`STEMS`].
fn is_catalog_word(word: &str) -> bool {
    let key = STEM_WORDS.position(word).map_or(word, |i| STEMS.get(i));
    TOKENS.position(key).is_some()
}

/// A normalized word's position in the token index.
pub fn token_index(word: &str) -> Option<usize> {
    TOKENS.position(word)
}

/// The token index's entry for a normalized word.
pub fn token(word: &str) -> Option<&'static [(u16, u8)]> {
    token_index(word).map(|i| TOKEN_HITS.get(i))
}

/// The form the index uses: the English stem of an alphabetic word, anything else as is.
pub fn normalize(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphabetic()) {
        // The catalog's own words were stemmed at build time; only other words need the
        // stemmer.
        match STEM_WORDS.position(word) {
            Some(i) => STEMS.get(i).to_string(),
            None => Stemmer::create(Algorithm::English).stem(word).into_owned(),
        }
    } else {
        word.to_string()
    }
}

fn is_stopword(word: &str) -> bool {
    STOPWORDS.position(word).is_some()
}

fn ascii_run(text: &str, out: &mut Query) {
    if !text.contains('_') {
        ascii_word(text, out);
        return;
    }
    let parts: Vec<&str> = text.split('_').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => {}
        [word] => ascii_word(word, out),
        _ => {
            let mut fixed = Vec::new();
            for part in &parts {
                let known =
                    NAME_PARTS.position(part).is_some() || token(&normalize(part)).is_some();
                match correction(part, known, true) {
                    Some(better) => {
                        out.corrected.push(format!("{part} -> {better}"));
                        fixed.push(better.to_string());
                    }
                    None => fixed.push(part.to_string()),
                }
            }
            let normalized: Vec<String> = fixed.iter().map(|p| normalize(p)).collect();
            if names_contain(&normalized) {
                out.terms.push(Term {
                    text: fixed.join("_"),
                    kind: TermKind::Fragment(normalized),
                    token: None,
                });
            } else {
                // No name holds these parts in this order: they are ordinary words.
                for part in fixed {
                    ascii_word(&part, out);
                }
            }
        }
    }
}

fn ascii_word(word: &str, out: &mut Query) {
    // A number (a QQ or group id, a count) or a lone letter (`bot's`) is never indexed, so
    // as a term it would only empty the results.
    let bare = word.len() == 1 || word.bytes().all(|b| b.is_ascii_digit());
    // Letters and digits mixed (`8f3kq2`, `3a9f`) are an id or a hash, unless the catalog
    // knows the word (`base64`).
    let id = word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_alphabetic())
        && TOKENS.position(word).is_none();
    if bare || id || is_stopword(word) {
        out.ignored.push(word.to_string());
        return;
    }
    let as_is = term(word, normalize(word));
    if as_is.token.is_some() {
        out.terms.push(as_is);
        return;
    }
    if let Some(parts) = run_together(word) {
        out.terms.push(Term {
            text: word.to_string(),
            kind: TermKind::Fragment(parts),
            token: None,
        });
        return;
    }
    match correction(word, false, false) {
        Some(better) => {
            out.corrected.push(format!("{word} -> {better}"));
            out.terms.push(term(better, normalize(better)));
        }
        // Unknown: it stays in the AND and empties the results.
        None => out.terms.push(as_is),
    }
}

fn term(text: &str, key: String) -> Term {
    let token = TOKENS.position(&key);
    word_term(text, key, token)
}

/// A word term whose token lookup is already done.
fn word_term(text: &str, key: String, token: Option<usize>) -> Term {
    Term {
        text: text.to_string(),
        kind: TermKind::Word(key),
        token,
    }
}

/// Cuts a run of Chinese with jieba. Known words become terms and stop words are dropped.
/// Unknown text between them is kept as one term when some action's Chinese text contains
/// it, and dropped (reported as ignored) otherwise: jieba over the catalog's vocabulary
/// leaves particles such as 他 or 里 as such pieces. A run that yields no term at all and
/// is not all stop words stays one (unknown) term, so it empties the results.
///
/// Before that, text the cut could not place is checked for sound-alike typos (`撤会` for
/// 撤回); when one is fixed (and reported), the fixed run is cut instead.
fn cjk_run(text: &str, out: &mut Query) {
    if let Some((asked, marker)) = request::a_not_a(text) {
        out.ignored.push(marker);
        return cjk_run(&asked, out);
    }
    let pieces = cut(text);
    if pieces.iter().any(|p| matches!(p.kind, Piece::Unknown)) {
        let spans: Vec<(usize, bool)> = pieces
            .iter()
            .map(|p| (p.word.chars().count(), !matches!(p.kind, Piece::Unknown)))
            .collect();
        if let Some(fixed) = homophones::correct(text, &spans) {
            out.corrected.extend(fixed.fixes);
            let pieces = cut(&fixed.text);
            return cjk_terms(&fixed.text, pieces, out);
        }
    }
    cjk_terms(text, pieces, out);
}

/// One word of a cut Chinese run.
struct CutWord<'a> {
    word: &'a str,
    kind: Piece,
}

enum Piece {
    Stop,
    /// Its entry in [`TOKENS`].
    Token(usize),
    Unknown,
}

/// The run cut by jieba, each word looked up once.
fn cut(text: &str) -> Vec<CutWord<'_>> {
    // A run that is one vocabulary word (`禁言`) or one character (`群`) is what jieba would
    // give back whole: no segmenter is built or run for it.
    let whole = text.chars().nth(1).is_none() || CJK_WORDS.position(text).is_some();
    let words: Vec<&str> = if whole {
        vec![text]
    } else {
        segmenter()
            .cut(text, false)
            .into_iter()
            .map(|piece| piece.word)
            .collect()
    };
    words
        .into_iter()
        .map(|word| {
            let kind = if is_stopword(word) {
                Piece::Stop
            } else if let Some(i) = TOKENS.position(word) {
                Piece::Token(i)
            } else {
                Piece::Unknown
            };
            CutWord { word, kind }
        })
        .collect()
}

/// The terms, stop words and ignored pieces of a cut run (see [`cjk_run`]).
fn cjk_terms(text: &str, pieces: Vec<CutWord<'_>>, out: &mut Query) {
    let before = out.terms.len();
    let mut stopped = false;
    let mut leftover = String::new();
    let flush = |leftover: &mut String, out: &mut Query| {
        if leftover.chars().count() >= 2 && in_cjk_text(leftover) {
            out.terms.push(term(leftover, leftover.clone()));
        } else if let Some((verb, ending)) = verb_and_ending(leftover) {
            out.terms.push(term(verb, verb.to_string()));
            out.ignored.push(ending.to_string());
        } else if !leftover.is_empty() {
            out.ignored.push(leftover.clone());
        }
        leftover.clear();
    };
    for CutWord { word, kind } in pieces {
        match kind {
            Piece::Stop => {
                flush(&mut leftover, out);
                out.ignored.push(word.to_string());
                stopped = true;
            }
            Piece::Token(i) => {
                flush(&mut leftover, out);
                out.terms.push(word_term(word, word.to_string(), Some(i)));
            }
            Piece::Unknown => leftover.push_str(word),
        }
    }
    flush(&mut leftover, out);
    if out.terms.len() == before && !stopped {
        out.ignored.retain(|w| !text.contains(w.as_str()));
        out.terms.push(term(text, text.to_string()));
    }
}

/// The word and, for Chinese, the known words inside it (jieba's search mode). For a word
/// of the vocabulary the codegen wrote them down ([`CJK_SUBWORDS`]); only other text is cut
/// here.
pub fn subwords(word: &str) -> Subwords<'_> {
    // A word of one or two characters holds no shorter word worth a segmenter pass.
    if !word.chars().any(is_cjk) || word.chars().count() < 3 {
        return Subwords::Itself(word);
    }
    if let Some(i) = CJK_WORDS.position(word) {
        return Subwords::Known(i);
    }
    let mut words: Vec<String> = segmenter()
        .cut_for_search(word, false)
        .into_iter()
        .map(|piece| piece.word.to_string())
        .collect();
    if !words.iter().any(|w| w == word) {
        words.push(word.to_string());
    }
    Subwords::Cut(words)
}

/// What [`subwords`] found: borrowed wherever it can be.
pub enum Subwords<'a> {
    Itself(&'a str),
    Known(usize),
    Cut(Vec<String>),
}

impl<'a> Subwords<'a> {
    pub fn each(self, mut f: impl FnMut(Cow<'a, str>)) {
        match self {
            Subwords::Itself(word) => f(Cow::Borrowed(word)),
            Subwords::Known(i) => CJK_SUBWORDS.get(i).for_each(|w| f(Cow::Borrowed(w))),
            Subwords::Cut(words) => words.into_iter().for_each(|w| f(Cow::Owned(w))),
        }
    }
}

/// Endings a colloquial verb takes that the catalog never writes: a result (`清掉`, `删光`,
/// `改好`) or an aspect (`聊过`, `发着`).
const VERB_ENDINGS: [char; 6] = ['掉', '光', '完', '好', '过', '着'];

/// A word the catalog does not know, cut into a verb it does know and an ending (`聊过` ->
/// 聊 + 过): the verb, found in some action's Chinese text, and the ending.
fn verb_and_ending(word: &str) -> Option<(&str, &str)> {
    let ending = word
        .chars()
        .next_back()
        .filter(|c| VERB_ENDINGS.contains(c))?;
    let verb = &word[..word.len() - ending.len_utf8()];
    (!verb.is_empty() && in_cjk_text(verb)).then(|| (verb, &word[verb.len()..]))
}

/// Whether some action's Chinese text contains the word.
fn in_cjk_text(word: &str) -> bool {
    CJK_TEXT.iter().any(|text| text.contains(word))
}

/// jieba over the catalog's Chinese vocabulary, built on first use.
fn segmenter() -> &'static Jieba {
    /// A private-use character: never part of a Chinese run.
    const UNREACHABLE_WORD: &str = "\u{E000}";
    static SEGMENTER: OnceLock<Jieba> = OnceLock::new();
    SEGMENTER.get_or_init(|| {
        let mut jieba = Jieba::empty();
        let mut sum = 0u64;
        for (word, freq) in CJK_WORDS.iter().zip(CJK_FREQS) {
            jieba.add_word(word, Some(freq as usize), None);
            sum += u64::from(freq);
        }
        // The rest of the build-time dictionary's weight, on a word no query can contain
        // (queries reach jieba only as runs of Chinese characters): the vocabulary's words
        // then weigh what they weighed in the full dictionary.
        let rest = CJK_TOTAL.saturating_sub(sum);
        jieba.add_word(UNREACHABLE_WORD, Some(rest as usize), None);
        jieba
    })
}

/// Whether some name or alias holds these normalized parts as a run.
pub fn names_contain(parts: &[String]) -> bool {
    (0..NAME_SEQUENCES.len()).any(|i| sequence_contains(i, parts))
}

/// Whether name sequence `i` holds `parts` as a run.
pub fn sequence_contains(i: usize, parts: &[String]) -> bool {
    let sequence = NAME_SEQUENCES.get(i);
    let Some(last_start) = sequence.len().checked_sub(parts.len()) else {
        return false;
    };
    (0..=last_start).any(|start| {
        sequence
            .clone()
            .skip(start)
            .zip(parts)
            .all(|(a, b)| a == b.as_str())
    })
}

/// `groupmsg` -> group, msg: the fewest name parts (two or more) the word splits into,
/// normalized, when the catalog has a name holding them as a run.
fn run_together(word: &str) -> Option<Vec<String>> {
    if word.len() < 5 || !word.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    // best[i]: the fewest parts covering word[..i], and where the last one starts.
    let n = word.len();
    let mut best: Vec<Option<(usize, usize)>> = vec![None; n + 1];
    best[0] = Some((0, 0));
    for end in 1..=n {
        for start in 0..end {
            let Some((count, _)) = best[start] else {
                continue;
            };
            if end - start >= 2 && NAME_PARTS.position(&word[start..end]).is_some() {
                let better = best[end].is_none_or(|(c, _)| count + 1 < c);
                if better {
                    best[end] = Some((count + 1, start));
                }
            }
        }
    }
    let (count, _) = best[n]?;
    if count < 2 {
        return None;
    }
    let mut parts = Vec::new();
    let mut end = n;
    while end > 0 {
        let (_, start) = best[end]?;
        parts.push(normalize(&word[start..end]));
        end = start;
    }
    parts.reverse();
    names_contain(&parts).then_some(parts)
}

enum Run<'a> {
    Ascii(&'a str),
    Cjk(&'a str),
}

/// The query cut into runs of ASCII letters, digits and `_`, and runs of Chinese characters;
/// anything else separates them.
fn runs<'a>(text: &'a str) -> Vec<Run<'a>> {
    let mut out = Vec::new();
    // The current run: where it starts and whether it is Chinese.
    let mut current: Option<(usize, bool)> = None;
    let flush = |current: &mut Option<(usize, bool)>, end: usize, out: &mut Vec<Run<'a>>| {
        if let Some((start, cjk)) = current.take() {
            let run = &text[start..end];
            out.push(if cjk { Run::Cjk(run) } else { Run::Ascii(run) });
        }
    };
    for (at, c) in text.char_indices() {
        let cjk = is_cjk(c);
        if c.is_ascii_alphanumeric() || c == '_' || cjk {
            match current {
                Some((_, kind)) if kind == cjk => {}
                Some(_) => {
                    flush(&mut current, at, &mut out);
                    current = Some((at, cjk));
                }
                None => current = Some((at, cjk)),
            }
        } else {
            flush(&mut current, at, &mut out);
        }
    }
    flush(&mut current, text.len(), &mut out);
    out
}

pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cjk_run` skips the segmenter for a run that is one vocabulary word, which is only
    /// right if the segmenter gives every such word back whole.
    #[test]
    fn the_segmenter_keeps_every_vocabulary_word_whole() {
        let split: Vec<(&str, Vec<&str>)> = CJK_WORDS
            .iter()
            .map(|word| {
                let pieces = segmenter().cut(word, false).into_iter().map(|p| p.word);
                (word, pieces.collect::<Vec<_>>())
            })
            .filter(|(word, pieces)| pieces.as_slice() != [*word])
            .collect();
        assert!(split.is_empty(), "{split:?}");
    }

    /// Quoted text is what the action is given: its question words, opener and participles
    /// ask for nothing.
    #[test]
    fn a_read_is_told_outside_the_quotes() {
        let reads = |asks: &Asks| asks.reads;
        let questions = [
            "who is blocked",
            "is the bot online",
            "blocked friends",
            "谁被禁言了",
        ];
        assert_each_asks(&questions, reads, true);
        let quoted = [
            "send \"who is blocked\" to the group",
            "\"is it done\" send to my friend",
            "set the group name to \"Blocked Friends\"",
            "给好友发一句「谁在吗」",
        ];
        assert_each_asks(&quoted, reads, false);
    }

    /// What `analyze` tells of each query, by `what`, is `expected`.
    fn assert_each_asks(queries: &[&str], what: impl Fn(&Asks) -> bool, expected: bool) {
        for query in queries {
            assert_eq!(what(&analyze(query).asks), expected, "{query}");
        }
    }

    /// `can you …` asks for a deed; `can it …` asks a question.
    #[test]
    fn can_you_is_a_request_and_can_it_a_question() {
        assert!(!analyze("can you send hello to the group").asks.reads);
        assert!(!analyze("Could you mute him").asks.reads);
        assert!(analyze("can it send images").asks.reads);
    }

    /// A plural or a word for many asks about several things; a count does not.
    #[test]
    fn several_things_are_told_from_plurals_and_words_for_many() {
        let many = |asks: &Asks| asks.many;
        let several = [
            "群成员们",
            "哪些群",
            "这几个人",
            "kick these spammers",
            "muted members",
        ];
        assert_each_asks(&several, many, true);
        let counts_or_one = [
            "how many members",
            "群里有几个人",
            "member status",
            "群成员多少人",
        ];
        assert_each_asks(&counts_or_one, many, false);
    }

    #[test]
    fn another_person_is_told_from_the_words_for_one() {
        let person = |asks: &Asks| asks.person;
        assert_each_asks(
            &["他现在在线吗", "is someone online", "对方的资料"],
            person,
            true,
        );
        assert_each_asks(&["bot online status"], person, false);
    }

    /// An A-not-A question (`在不在线`) reads, and its word (`在线`) stays a term.
    #[test]
    fn an_a_not_a_question_reads_and_keeps_its_word() {
        let found = analyze("查他在不在线");
        assert!(found.asks.reads);
        assert!(
            found.terms.iter().any(|t| t.text == "在线"),
            "{:?}",
            found.terms
        );
    }
}
