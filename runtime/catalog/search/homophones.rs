//! Chinese typos from pinyin input: a wrong character that sounds like the right one
//! (`撤会消息` for 撤回消息, `群成圆` for 群成员). Chinese IMEs turn every misspelling into a
//! real character, so the edit distance of the English correction says nothing here; the
//! reading does.
//!
//! Only text the segmenter could not place is corrected: a stretch of two to four characters
//! that holds at least one character of no token or stop word, cuts no token or stop word in
//! two, takes in the whole of the unplaced text it touches, and reads (toneless) exactly like
//! a Chinese token of the same length that shares a character with it in the same place.
//! Longer stretches are tried first; the codegen indexed the tokens by reading
//! ([`READINGS`]), so each stretch costs one binary search. A typed character
//! reads like a token's when its main reading, the one an input method offers it for, is a
//! reading of the token's (会 hui for 回 hui); a rare reading never counts (不 fou is not 否).
//! A common word of its own (通常, 接收; the codegen lists them from jieba's dictionary) is
//! never read as a typo.
//!
//! The readings come from a table the codegen writes with the pinyin crate, not from the crate
//! itself: linking it added 7,500 load-time relocations, and cold start (spawn, `initialize`,
//! `tools/list`) went from 1.75–2.03 ms to 1.92–2.47 ms against the build before it, 10 to
//! 20 %; with the table both measure 1.6–1.7 ms.

use super::super::generated::search_index::{
    COMMON_SOUND_ALIKES, MAIN_READINGS, MAIN_READINGS_FROM, READING_WORDS, READINGS, SYLLABLES,
};

/// Longest stretch of characters read as one word.
const LONGEST: usize = 4;

/// What a run of Chinese reads as after its sound-alike typos are fixed.
pub struct Corrected {
    pub text: String,
    /// `撤会 -> 撤回`, in run order.
    pub fixes: Vec<String>,
}

/// `pieces`: how the segmenter cut `text`, as (characters, whether the piece is a token or a
/// stop word). `None` when no stretch reads like a token.
pub fn correct(text: &str, pieces: &[(usize, bool)]) -> Option<Corrected> {
    let mut chars: Vec<char> = text.chars().collect();
    // Per character: whether it is placed, and whether a piece starts there.
    let mut placed = Vec::with_capacity(chars.len());
    let mut starts = Vec::with_capacity(chars.len() + 1);
    for &(len, known) in pieces {
        for i in 0..len {
            placed.push(known);
            starts.push(i == 0);
        }
    }
    starts.push(true);
    if placed.len() != chars.len() {
        return None;
    }
    // A stretch begins and ends where a piece does, and holds every unplaced character
    // next to it: text that reads like a token only with part of an unknown word (时用 in
    // 查询时用新的) is no typo of it.
    let boundary = |i: usize| {
        let inside_unplaced = i > 0 && i < placed.len() && !placed[i - 1] && !placed[i];
        starts[i] && !inside_unplaced
    };
    let mut fixed = vec![false; chars.len()];
    let mut fixes = Vec::new();
    for len in (2..=LONGEST.min(chars.len())).rev() {
        for start in 0..=chars.len() - len {
            let span = start..start + len;
            let unplaced = span.clone().any(|i| !placed[i]);
            let whole = boundary(start) && boundary(start + len);
            if !unplaced || !whole || span.clone().any(|i| fixed[i]) {
                continue;
            }
            // Most stretches read like no token: that lookup comes first, the text of the
            // stretch is only built for the rest.
            let Some(word) = sound_alike(&chars[span.clone()]) else {
                continue;
            };
            let before: String = chars[span.clone()].iter().collect();
            if COMMON_SOUND_ALIKES.position(&before).is_some() {
                // A real word (通常), not a typo of the token it sounds like (通畅).
                continue;
            }
            fixes.push(format!("{before} -> {word}"));
            for (i, c) in span.zip(word.chars()) {
                chars[i] = c;
                fixed[i] = true;
            }
        }
    }
    (!fixes.is_empty()).then(|| Corrected {
        text: chars.into_iter().collect(),
        fixes,
    })
}

/// The Chinese token that reads like `stretch` (by the main reading of each typed
/// character), shares a character with it in the same place, and is not it; on a tie, the one
/// sharing the most characters, then the first in token order.
fn sound_alike(stretch: &[char]) -> Option<&'static str> {
    let mut key = String::new();
    for &c in stretch {
        let reading = main_reading(c)?;
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(reading);
    }
    let words = READING_WORDS.get(READINGS.position(&key)?);
    let mut best: Option<(usize, &'static str)> = None;
    for word in words {
        let shared = word.chars().zip(stretch).filter(|(a, b)| a == *b).count();
        if shared == 0 || shared == stretch.len() {
            continue;
        }
        if best.is_none_or(|(most, _)| shared > most) {
            best = Some((shared, word));
        }
    }
    best.map(|(_, word)| word)
}

/// A character's main (toneless) reading, the one an input method offers it for, from the
/// table the codegen wrote with the pinyin crate.
fn main_reading(c: char) -> Option<&'static str> {
    let slot = (c as u32).checked_sub(MAIN_READINGS_FROM)?;
    let syllable = *MAIN_READINGS.get(usize::try_from(slot).ok()?)?;
    (syllable != u16::MAX).then(|| SYLLABLES.get(usize::from(syllable)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_read_as_an_input_method_offers_them() {
        assert_eq!(main_reading('回'), Some("hui"));
        // 会 also reads kuai; hui is the reading it is typed by.
        assert_eq!(main_reading('会'), Some("hui"));
        assert_eq!(main_reading('群'), Some("qun"));
        assert_eq!(main_reading('a'), None);
        assert_eq!(
            main_reading('\u{4DC0}'),
            None,
            "a hexagram sign, no reading"
        );
        assert_eq!(main_reading('\u{20000}'), None, "past the table");
    }

    #[test]
    fn a_typo_reads_as_the_token_it_sounds_like() {
        let fixed = correct("撤会", &[(1, false), (1, true)]).expect("撤会 sounds like 撤回");
        assert_eq!(fixed.text, "撤回");
        assert_eq!(fixed.fixes, ["撤会 -> 撤回"]);
        // Only placed text: nothing to fix.
        assert!(correct("撤回", &[(2, true)]).is_none());
    }
}
