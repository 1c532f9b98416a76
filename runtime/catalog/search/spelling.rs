//! Misspelled English words read as the catalog word they most likely mean (`sned` ->
//! send); Chinese typos are [`super::homophones`].

use super::super::generated::search_index::{NAME_PARTS, SPELLING};
use crate::catalog::facade::Strs;

/// The catalog word a misspelled word most likely means: the nearest by edit distance
/// (an adjacent swap counts once), name parts tried before other words. `None` for known
/// words. A word on its own must be five letters or more for one edit and eight for two; a
/// word of three or four letters may only have two letters swapped (`sned`) or one left out
/// inside it (`grup`, `kik`), so ordinary short words (`find`, `lock`) are not bent into
/// catalog words. A part of a name fragment (`get_grup_list`) may take one edit at any length.
pub fn correction(word: &str, known: bool, in_fragment: bool) -> Option<&'static str> {
    if known || word.len() < 3 || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let limit = match word.len() {
        _ if in_fragment && word.len() < 7 => 1,
        8.. => 2,
        5.. => 1,
        // Short words: a swap, or a letter left out inside (`grup`, `kik`).
        _ => 0,
    };
    nearest(word, &NAME_PARTS, limit).or_else(|| nearest(word, &SPELLING, limit))
}

/// The nearest word within `limit` edits; at limit 0, only a swap of two adjacent letters or
/// one letter left out.
fn nearest(word: &str, vocabulary: &Strs, limit: usize) -> Option<&'static str> {
    let narrow = limit == 0;
    let limit = limit.max(1);
    let first = word.as_bytes()[0];
    // A letter left out inside the word: one added at either end turns short words into
    // other words (`lock`, `block`; `mode`, `model`).
    let narrow_edit = |c: &str| {
        let inside = c.len() == word.len() + 1
            && c.as_bytes()[0] == first
            && c.as_bytes().last() == word.as_bytes().last();
        (c.len() == word.len() && same_letters(word, c)) || inside
    };
    vocabulary
        .iter()
        .filter(|c| c.len().abs_diff(word.len()) <= limit && c.len() >= 3)
        .filter(|c| c.bytes().all(|b| b.is_ascii_alphabetic()))
        .filter(|c| !narrow || narrow_edit(c))
        .map(|c| (strsim::osa_distance(word, c), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, c)| (*distance, c.as_bytes()[0] != first))
        .map(|(_, c)| c)
}

fn same_letters(a: &str, b: &str) -> bool {
    let mut a = a.as_bytes().to_vec();
    let mut b = b.as_bytes().to_vec();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}
