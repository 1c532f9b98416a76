//! Pointer-free tables for the generated search index.
//!
//! A `static` array of `&str` is an array of pointers, and in a position-independent binary
//! the dynamic loader rewrites every one of them at start-up: each page of such a table
//! becomes a private copy (a page fault and 4 KiB of memory) before `main` runs, whether or
//! not the process ever searches. The tables here keep their strings end to end in one text
//! and their slices end to end in one array, found by offset, so the data itself holds no
//! pointers, stays in read-only memory and is read only when a search needs it.

/// Strings stored end to end: entry `i` is `text[ends[i - 1]..ends[i]]` (`0..ends[0]` for the
/// first).
pub struct Strs {
    text: &'static str,
    ends: &'static [u32],
}

impl Strs {
    /// `ends` must rise and fall on character boundaries of `text`, the last one at its end
    /// (the codegen writes both).
    pub const fn new(text: &'static str, ends: &'static [u32]) -> Self {
        Strs { text, ends }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, index: usize) -> &'static str {
        let (start, end) = span(self.ends, index);
        &self.text[start..end]
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'static str> + Clone + '_ {
        (0..self.len()).map(|index| self.get(index))
    }

    /// Where `wanted` is in a table sorted by byte order (as the codegen sorts them).
    pub fn position(&self, wanted: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.get(middle).cmp(wanted) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }
}

/// Slices stored end to end: entry `i` is `items[ends[i - 1]..ends[i]]`.
pub struct Lists<T: 'static> {
    items: &'static [T],
    ends: &'static [u32],
}

impl<T> Lists<T> {
    /// `ends` must rise, the last one at `items.len()` (the codegen writes both).
    pub const fn new(items: &'static [T], ends: &'static [u32]) -> Self {
        Lists { items, ends }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, index: usize) -> &'static [T] {
        let (start, end) = span(self.ends, index);
        &self.items[start..end]
    }
}

/// Lists of strings: entry `i` is the words `ends[i - 1]..ends[i]` of `words`.
pub struct StrLists {
    words: Strs,
    ends: &'static [u32],
}

impl StrLists {
    pub const fn new(words: Strs, ends: &'static [u32]) -> Self {
        StrLists { words, ends }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, index: usize) -> impl ExactSizeIterator<Item = &'static str> + Clone + '_ {
        let (start, end) = span(self.ends, index);
        (start..end).map(|word| self.words.get(word))
    }
}

fn span(ends: &[u32], index: usize) -> (usize, usize) {
    let start = match index {
        0 => 0,
        _ => ends[index - 1] as usize,
    };
    (start, ends[index] as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    static WORDS: Strs = Strs::new("ban群禁言kick", &[3, 12, 16]);

    #[test]
    fn strings_come_back_from_their_offsets() {
        assert_eq!(WORDS.iter().collect::<Vec<_>>(), ["ban", "群禁言", "kick"]);
        assert_eq!(WORDS.get(1), "群禁言");
        assert_eq!(WORDS.len(), 3);
        assert!(Strs::new("", &[]).is_empty());
    }

    #[test]
    fn a_sorted_table_is_searched_by_bytes() {
        let sorted = Strs::new("abcde", &[1, 2, 4, 5]);
        assert_eq!(sorted.position("a"), Some(0));
        assert_eq!(sorted.position("b"), Some(1));
        assert_eq!(sorted.position("cd"), Some(2));
        assert_eq!(sorted.position("e"), Some(3));
        assert_eq!(sorted.position("c"), None);
        assert_eq!(sorted.position("z"), None);
        assert_eq!(Strs::new("", &[]).position("a"), None);
    }

    #[test]
    fn lists_split_one_array_and_may_be_empty() {
        let lists = Lists::new(&[1u8, 2, 3], &[2, 2, 3]);
        assert_eq!(lists.get(0), [1, 2]);
        assert!(lists.get(1).is_empty());
        assert_eq!(lists.get(2), [3]);
        let words = StrLists::new(Strs::new("setgroupban", &[3, 8, 11]), &[2, 2, 3]);
        assert_eq!(words.get(0).collect::<Vec<_>>(), ["set", "group"]);
        assert_eq!(words.get(1).len(), 0);
        assert_eq!(words.get(2).collect::<Vec<_>>(), ["ban"]);
    }
}
