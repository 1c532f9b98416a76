//! What a request asks for beyond its words: the values it carries (quoted text, file names,
//! addresses), its clauses (the one that asks, the ones that say what not to do), and what
//! kind of answer it wants (a read, several things, something about another person).
//!
//! The query's terms come from [`super::query`]; everything here only decides which of them
//! count and how the ranking leans.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// Quotation marks that hold what the action is given, not what it does (`rename the group
/// to "Weekend Raid"`, `发一句"在吗"`). Single quotes are left alone: `bot's`.
const QUOTES: [(char, char); 4] = [('"', '"'), ('“', '”'), ('「', '」'), ('『', '』')];

/// The query with the values it carries taken out.
pub struct Values<'a> {
    /// The rest of the query, what it asks.
    pub rest: Cow<'a, str>,
    /// Quoted pieces, then file names and addresses, lower case, in query order.
    pub pieces: Vec<String>,
    /// How many of `pieces` are file names or addresses (the last ones).
    pub names: usize,
}

/// Takes out quoted text, then file names and addresses (`report.pdf`, `qun.qq.com`,
/// `https://…`).
pub fn values(query: &str) -> Values<'_> {
    let (rest, mut pieces) = unquoted(query);
    let (rest, names) = without_file_names(rest);
    let count = names.len();
    pieces.extend(names);
    Values {
        rest,
        pieces,
        names: count,
    }
}

/// The query without its quoted text, and the quoted pieces. A query that is nothing but
/// quoted text keeps it: then the quotes are only punctuation.
fn unquoted(query: &str) -> (Cow<'_, str>, Vec<String>) {
    let mut outside = String::with_capacity(query.len());
    let mut quoted = Vec::new();
    let mut rest = query;
    while let Some((at, open)) = rest
        .char_indices()
        .find_map(|(at, c)| QUOTES.iter().find(|(open, _)| *open == c).map(|&q| (at, q)))
    {
        let inner = &rest[at + open.0.len_utf8()..];
        let Some(end) = inner.find(open.1) else {
            break;
        };
        outside.push_str(&rest[..at]);
        outside.push(' ');
        let piece = inner[..end].trim();
        if !piece.is_empty() {
            quoted.push(piece.to_lowercase());
        }
        rest = &inner[end + open.1.len_utf8()..];
    }
    if quoted.is_empty() {
        return (Cow::Borrowed(query), quoted);
    }
    outside.push_str(rest);
    if !outside.chars().any(|c| c.is_alphanumeric()) {
        return (Cow::Borrowed(query), Vec::new());
    }
    (Cow::Owned(outside), quoted)
}

/// The text without its file names and addresses, and them. A leading dot is part of an
/// action's name (`.ocr_image`), not a file name.
fn without_file_names(text: Cow<'_, str>) -> (Cow<'_, str>, Vec<String>) {
    // Most queries have neither a dot nor a colon: no scan of their words.
    if !text.contains(['.', ':']) {
        return (text, Vec::new());
    }
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || "_-.:/".contains(c);
    let is_file_name = |piece: &str| {
        let piece = piece.trim_end_matches(['.', ':', '/']);
        let bytes = piece.as_bytes();
        piece.contains("://")
            || (1..bytes.len().saturating_sub(1)).any(|i| {
                bytes[i] == b'.'
                    && bytes[i - 1].is_ascii_alphanumeric()
                    && bytes[i + 1].is_ascii_alphanumeric()
            })
    };
    if !text.split(|c| !is_name_char(c)).any(is_file_name) {
        return (text, Vec::new());
    }
    let mut outside = String::with_capacity(text.len());
    let mut names = Vec::new();
    let mut rest: &str = &text;
    while let Some(start) = rest.find(is_name_char) {
        let end = rest[start..]
            .find(|c| !is_name_char(c))
            .map_or(rest.len(), |n| start + n);
        let piece = &rest[start..end];
        outside.push_str(&rest[..start]);
        if is_file_name(piece) {
            names.push(piece.trim_end_matches(['.', ':', '/']).to_lowercase());
            outside.push(' ');
        } else {
            outside.push_str(piece);
        }
        rest = &rest[end..];
    }
    outside.push_str(rest);
    (Cow::Owned(outside), names)
}

/// The text cut at clause punctuation (a full stop only before a space or at the end: file
/// names are gone by now, but `1.5` may be left). Clauses without a letter or digit are
/// dropped.
pub fn clauses(text: &str) -> Vec<&str> {
    // Most queries are one clause: no scan of their characters.
    if !text.contains([',', '，', '。', ';', '；', '!', '！', '?', '？', '\n', '.']) {
        return vec![text];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let ends = match c {
            ',' | '，' | '。' | ';' | '；' | '!' | '！' | '?' | '？' | '\n' => true,
            '.' => chars.peek().is_none_or(|(_, next)| next.is_whitespace()),
            _ => false,
        };
        if ends {
            out.push(&text[start..at]);
            start = at + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.retain(|clause| clause.chars().any(|c| c.is_alphanumeric()));
    out
}

/// Words that mark the clause asking for something.
const ASK_MARKERS: [&str; 9] = [
    "帮我",
    "帮忙",
    "请",
    "麻烦",
    "please",
    "pls",
    "can you",
    "could you",
    "help me",
];

/// In a request of several clauses, the one that asks (`…，帮我转成文字`, `…, please take it
/// back`): it says what to do, the others tell the story around it. The last one with an
/// ask marker; none when there is one clause or no marker.
pub fn asking_clause(clauses: &[&str]) -> Option<usize> {
    if clauses.len() < 2 {
        return None;
    }
    clauses
        .iter()
        .rposition(|c| ASK_MARKERS.iter().any(|m| c.contains(m)))
}

/// Words that open an English relative clause about a thing (`a post that only friends can
/// see`). Not `who`: which people (`members who are muted`) is often what is asked.
const RELATIVE_PRONOUNS: [&str; 2] = ["that", "which"];

/// Where a relative clause starts in an English clause, if it has one: a relative pronoun
/// after the clause's first two words, followed by a function word (`that only`, `which the`,
/// see [`is_function_word`]); `that message` is a demonstrative.
pub fn relative_clause(clause: &str) -> Option<usize> {
    if !RELATIVE_PRONOUNS.iter().any(|p| clause.contains(p)) {
        return None;
    }
    let mut words = clause
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - clause.as_ptr() as usize, w))
        .peekable();
    let mut seen = 0;
    while let Some((at, word)) = words.next() {
        seen += 1;
        if seen > 2
            && RELATIVE_PRONOUNS.contains(&word)
            && words.peek().is_some_and(|(_, next)| is_function_word(next))
        {
            return Some(at);
        }
    }
    None
}

/// Words that open what a relative clause says (a subject or an auxiliary), never an
/// action's object.
fn is_function_word(word: &str) -> bool {
    const WORDS: [&str; 22] = [
        "i", "you", "he", "she", "it", "we", "they", "someone", "somebody", "the", "a", "my",
        "only", "is", "are", "was", "were", "has", "have", "had", "can", "will",
    ];
    WORDS.contains(&word)
}

/// How a clause that says what not to do begins.
const NEGATIONS: [&str; 12] = [
    "不要",
    "别",
    "不用",
    "不是",
    "而不是",
    "not ",
    "don't ",
    "dont ",
    "do not ",
    "without ",
    "instead of ",
    "rather than ",
];

/// Whether the clause says what not to do (`不要合并转发`, `not as a chat record`): it names
/// the wrong action.
pub fn is_negated(clause: &str) -> bool {
    let clause = clause.trim_start();
    NEGATIONS.iter().any(|n| clause.starts_with(n))
}

/// A Chinese yes-no question asked as A-not-A (`在不在线`, `有没有`, `可不可以`): the text
/// with the question taken out (`在线`, `有`, `可以`) and the A-not-A part, which asks.
pub fn a_not_a(text: &str) -> Option<(String, String)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    chars.windows(3).find_map(|w| {
        let [(at, a), (_, not), (end, again)] = *w else {
            return None;
        };
        if !is_a_not_a_triple(a, not, again) {
            return None;
        }
        let asked = format!("{}{}", &text[..at], &text[end..]);
        Some((asked, text[at..end + again.len_utf8()].to_string()))
    })
}

/// Whether a word is an A-not-A question (see [`a_not_a`]).
fn is_a_not_a(word: &str) -> bool {
    let mut chars = word.chars();
    let (Some(a), Some(not), Some(again), None) =
        (chars.next(), chars.next(), chars.next(), chars.next())
    else {
        return false;
    };
    is_a_not_a_triple(a, not, again)
}

/// A, then 不 or 没, then A again (A itself not 不 or 没).
fn is_a_not_a_triple(a: char, not: char, again: char) -> bool {
    a == again && a != not && matches!(not, '不' | '没')
}

/// What kind of answer a query wants, beyond its terms.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Asks {
    /// To read something: a question (`who is muted`, `能发图片吗`), a look (`看`, `查一下`)
    /// or a state (`muted members`).
    pub reads: bool,
    /// Several things: a plural (`groups the bot is in`) or a word for many (`哪些群`,
    /// `这几个人`); not a count (`how many members`).
    pub many: bool,
    /// Something about another person (`someone`, `他`, `对方`): an action that takes a user
    /// fits better than one about the bot itself.
    pub person: bool,
    /// A phrase that names something with a possessive or an attribute (`my friends`,
    /// `我收藏的表情包`); with no deed in the query, it asks to see the thing.
    pub names_a_thing: bool,
    /// A number (`how many members`, `多少个文件`, `几个人`): an action whose result counts
    /// the thing answers it.
    pub count: bool,
    /// Who (`谁是管理员`, `who reacted`): the answer is people, so an action whose result
    /// holds people fits.
    pub who: bool,
    /// Everyone (`everyone in the group`, `所有人`): asked to be seen, the answer is people.
    pub everyone: bool,
    /// To undo something done before (`take back my like`, `这条别当精华了`): the action
    /// that cancels or deletes it fits better than the one that did it.
    pub undo: bool,
}

const READ: u8 = 1;
const MANY: u8 = 2;
const PERSON: u8 = 4;
/// Asks for a count (`how many`), which is not several things.
const COUNT: u8 = 8;
/// Asks who (`谁是管理员`, `who reacted`): people the query cannot name, found in a list.
const WHO: u8 = 16;

/// What words tell about the answer wanted.
/// Stop words mostly, so no intent of the spec's can name them; `several` and `multiple`
/// are terms.
const ROLES: [(&str, u8); 63] = [
    ("couple", MANY),
    ("dozen", MANY),
    ("eight", MANY),
    ("few", MANY),
    ("five", MANY),
    ("four", MANY),
    ("guy", PERSON),
    ("he", PERSON),
    ("her", PERSON),
    ("him", PERSON),
    ("many", COUNT),
    ("multiple", MANY),
    ("nine", MANY),
    ("person", PERSON),
    ("seven", MANY),
    ("several", MANY),
    ("she", PERSON),
    ("six", MANY),
    ("somebody", PERSON),
    ("someone", PERSON),
    ("ten", MANY),
    ("these", MANY),
    ("those", MANY),
    ("three", MANY),
    ("two", MANY),
    ("user", PERSON),
    ("一起", MANY),
    ("什么", READ),
    ("他", PERSON),
    ("们", MANY),
    // 这几个 is several, 几个 a count: see `asks`.
    ("几", READ),
    ("几个人", READ),
    ("可不可以", READ),
    ("吗", READ),
    ("告诉我", READ),
    ("哪个", READ),
    ("哪些", READ | MANY),
    ("啥", READ),
    ("多少", READ | COUNT),
    ("她", PERSON),
    ("对方", PERSON),
    ("所有", MANY),
    ("所有的", MANY),
    ("是不是", READ),
    ("是否", READ),
    ("是谁", READ),
    ("有人", PERSON),
    ("有没有", READ),
    ("某个人", PERSON),
    ("某人", PERSON),
    // A state (`正在输入`, `正在禁言的人`) is something to see.
    ("正在", READ),
    ("查", READ),
    ("查一下", READ),
    // A choice (`忙碌还是在线`) asks which.
    ("还是", READ),
    ("看", READ),
    ("看一下", READ),
    ("看看", READ),
    ("能不能", READ),
    ("谁", READ | WHO),
    ("这个人", PERSON),
    ("这些", MANY),
    ("那个人", PERSON),
    ("那些", MANY),
];

fn role(word: &str) -> u8 {
    // A scan: most words differ in length from every entry, which costs one comparison each.
    // A binary search compares bytes at every step: in the profile of `mute someone in a
    // group` it took 12 % of the query, the scan about 4 %.
    ROLES
        .iter()
        .find(|(known, _)| *known == word)
        .map_or(0, |(_, role)| *role)
}

/// Words for all the people there are.
const EVERYONE: [&str; 4] = ["everyone", "everybody", "所有人", "大家"];

/// Words that make a query a question when they open it (`is the bot online`).
const QUESTION_OPENERS: [&str; 7] = ["is", "are", "can", "could", "does", "do", "did"];

/// What the query wants (see [`Asks`]), from its stop words in query order (values left
/// out), its terms, the text it asks with and its clauses.
pub fn asks<'a>(
    stop_words: &[String],
    terms: impl Iterator<Item = &'a str>,
    rest: &str,
    clauses: &[&str],
) -> Asks {
    let mut asks = Asks::default();
    for term in terms {
        let role = role(term);
        asks.many |= role & MANY != 0 || is_plural(term);
        asks.person |= role & PERSON != 0;
        asks.everyone |= EVERYONE.contains(&term);
    }
    let mut who = false;
    let mut previous = "";
    for word in stop_words {
        let word = word.as_str();
        let role = role(word);
        asks.reads |= role & READ != 0 || is_a_not_a(word);
        asks.names_a_thing |= matches!(word, "的" | "my");
        asks.person |= role & PERSON != 0;
        asks.many |= role & MANY != 0;
        asks.count |= role & COUNT != 0;
        who |= role & WHO != 0;
        // 几 (几个, 几个人) asks how many, unless 这 or 那 comes first: 这几个 are several.
        if word.starts_with('几') {
            if matches!(previous, "这" | "那") {
                asks.many = true;
            } else {
                asks.count = true;
            }
        }
        previous = word;
    }
    let question_mark = rest.trim_end().ends_with(['?', '？']);
    // A yes-no question may end in its negation (`能发语音不`, `收到没`).
    let ends_negated = clauses
        .last()
        .is_some_and(|c| c.chars().count() > 2 && c.trim_end().ends_with(['不', '没', '否']));
    let wh = asked_wh_word(clauses, question_mark);
    asks.who = who || matches!(wh, Some("who" | "whos"));
    // Asking who, with nobody named (no user id, not `who am I`), wants people found in a
    // list: `谁是管理员` is answered by the member list, not by one member's details.
    asks.many |= asks.who && !names_a_user_id(rest) && !stop_words.iter().any(|w| w == "am");
    asks.many &= !asks.count;
    asks.undo = undo_markers().is_match(rest);
    // `can you send …` asks for something to be done, politely; `can it send …` asks.
    let mut words = rest.split_whitespace();
    let opens_a_question = words
        .next()
        .is_some_and(|w| QUESTION_OPENERS.iter().any(|o| w.eq_ignore_ascii_case(o)))
        && !words.next().is_some_and(|w| w.eq_ignore_ascii_case("you"));
    asks.reads = asks.reads
        || opens_a_question
        || ends_negated
        || wh.is_some()
        || rest
            .split(|c: char| !c.is_ascii_alphabetic())
            .any(names_a_state);
    asks
}

/// Words that ask to undo what was done, whatever the deed (the deed names the action that
/// did it: `like`, `精华`).
const UNDO_MARKERS: [&str; 22] = [
    "取消",
    "撤回",
    "撤销",
    "撤掉",
    "去掉",
    "拿掉",
    "收回",
    "别当",
    "别再",
    "不再",
    "不要再",
    "undo",
    "take back",
    "take it back",
    "take my",
    "revert",
    "retract",
    " off the ",
    " out of the ",
    "anymore",
    "no longer",
    "get rid of",
];

/// The automaton that finds any of [`UNDO_MARKERS`], built on first use.
fn undo_markers() -> &'static AhoCorasick {
    static MARKERS: OnceLock<AhoCorasick> = OnceLock::new();
    MARKERS.get_or_init(|| AhoCorasick::new(UNDO_MARKERS).expect("the markers are plain text"))
}

/// Words before a number that make it a group's id, not a user's (`group 123`, `群 123`).
const GROUP_WORDS: [&str; 4] = ["group", "群", "群号", "群聊"];

/// Whether the text holds a number that is not a group's id: a user named by id.
fn names_a_user_id(text: &str) -> bool {
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let before = rest[..start].trim_end().to_lowercase();
        if !GROUP_WORDS.iter().any(|w| before.ends_with(w)) {
            return true;
        }
        rest = rest[start..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    false
}

/// English question words. They ask when they open a clause (`who is muted`), follow a
/// verb of finding out (`tell me which`, `find out who`), or stand in a query that ends
/// with a question mark; elsewhere they join a clause (`someone who wants to join`).
const WH_WORDS: [&str; 7] = ["who", "whos", "what", "which", "whether", "when", "where"];
/// Words after which a question word asks (`show me who`, `know whether`).
const WH_LEAD_INS: [&str; 9] = [
    "me", "out", "know", "see", "tell", "check", "find", "show", "ask",
];

/// The first English question word that asks (see [`WH_WORDS`]), if any.
fn asked_wh_word(clauses: &[&str], question_mark: bool) -> Option<&'static str> {
    clauses.iter().find_map(|clause| {
        // Every question word starts with `wh`: most queries are decided here.
        if !clause.contains("wh") {
            return None;
        }
        let mut previous: Option<&str> = None;
        let words = clause
            .split(|c: char| !c.is_ascii_alphabetic() && c != '\'')
            .filter(|w| !w.is_empty());
        for word in words {
            let bare = word.split('\'').next().unwrap_or(word);
            let asks = match previous {
                None => true,
                Some(previous) => question_mark || WH_LEAD_INS.contains(&previous),
            };
            if asks && let Some(wh) = WH_WORDS.iter().find(|wh| **wh == bare) {
                return Some(*wh);
            }
            previous = Some(word);
        }
        None
    })
}

/// A past participle (`muted members`, `blocked friends`, `logged in`) names a state, which
/// the query wants to see; an imperative never ends in -ed. Words in -eed (`speed`) are not
/// participles.
fn names_a_state(word: &str) -> bool {
    let ends_with = |suffix: &str| {
        word.len() >= suffix.len()
            && word.as_bytes()[word.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    };
    word.len() >= 5 && ends_with("ed") && !ends_with("eed")
}

/// An English plural noun (`members`, `groups`); not a word that only ends in s (`status`,
/// `class`, `this`).
pub fn is_plural(word: &str) -> bool {
    word.len() >= 4
        && word.ends_with('s')
        && !["ss", "us", "is"].iter().any(|end| word.ends_with(end))
        && word.bytes().all(|b| b.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_has_one_role_entry() {
        let mut words: Vec<&str> = ROLES.iter().map(|(word, _)| *word).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), ROLES.len());
        assert_eq!(role("哪些"), READ | MANY);
        assert_eq!(role("禁言"), 0);
    }

    #[test]
    fn an_a_not_a_question_is_found_and_taken_out() {
        assert_eq!(
            a_not_a("他在不在线"),
            Some(("他在线".to_string(), "在不在".to_string()))
        );
        assert_eq!(
            a_not_a("有没有人"),
            Some(("有人".to_string(), "有没有".to_string()))
        );
        assert_eq!(a_not_a("他不在群里"), None);
        assert!(is_a_not_a("在不在") && !is_a_not_a("不在"));
    }

    #[test]
    fn who_without_a_user_asks_for_several() {
        let who = |query: &str| {
            let clauses = clauses(query);
            let stop: Vec<String> = query.split_whitespace().map(String::from).collect();
            asks(&stop, std::iter::empty(), query, &clauses)
        };
        let admins = who("who are the admins of group 123");
        assert!(admins.who && admins.many);
        let user = who("who is qq 12345");
        assert!(user.who && !user.many);
        assert!(!who("who am i logged in as").many);
        assert!(who("谁 是 群主").many);
        assert!(names_a_user_id("群 1 的 用户 2") && !names_a_user_id("群号 20001"));
    }

    #[test]
    fn a_question_that_ends_in_its_negation_reads() {
        let reads = |query: &str| asks(&[], std::iter::empty(), query, &clauses(query)).reads;
        assert!(reads("能发语音不") && reads("消息收到没"));
        assert!(!reads("发语音") && !reads("不"));
    }

    #[test]
    fn a_relative_clause_starts_at_its_pronoun() {
        let clause = "find the message that was pinned in the group";
        let at = relative_clause(clause).expect("a relative clause");
        assert_eq!(&clause[at..], "that was pinned in the group");
        // `that` as a determiner opens no clause; nor does it as the query's second word.
        assert_eq!(relative_clause("delete that message"), None);
        assert_eq!(relative_clause("forward that photo to my friend"), None);
    }

    #[test]
    fn undoing_and_everyone_are_heard() {
        let asked = |query: &str| asks(&[], std::iter::empty(), query, &clauses(query));
        assert!(asked("i don't want to like that photo anymore").undo);
        assert!(asked("take that message out of the group's highlights").undo);
        assert!(asked("取消点赞").undo && !asked("点赞").undo);
        let query = "show me everyone in the group";
        assert!(asks(&[], query.split_whitespace(), query, &clauses(query)).everyone);
    }

    #[test]
    fn values_clauses_and_negations_are_found() {
        let values = values("send report.pdf and \"hi\" to https://x.com/a, not .ocr_image");
        assert_eq!(values.pieces, ["hi", "report.pdf", "https://x.com/a"]);
        assert_eq!(values.names, 2);
        assert!(values.rest.contains(".ocr_image"));
        assert_eq!(clauses("a, b。c. d 1.5"), ["a", " b", "c", " d 1.5"]);
        assert_eq!(clauses("no punctuation"), ["no punctuation"]);
        assert_eq!(asking_clause(&["他发了语音", "帮我转成文字"]), Some(1));
        assert_eq!(asking_clause(&["帮我转成文字"]), None);
        assert!(is_negated(" 不要合并转发") && is_negated("not as a chat record"));
        assert!(!is_negated("forward it, not merged"));
    }
}
