//! Which files of one runtime module import which: a small reader of `use super::…`,
//! `super::…::` and `crate::<module>::…` paths, enough to find import circles between the
//! files of a directory. It is not a Rust parser: comments and string and char literals are
//! blanked first, inline modules (`mod tests { … }`) are tracked by their braces so that their
//! `super::` means the file itself, and a `{…}` group after a path is read one level deep.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The files of one directory that take part (every `.rs` file but the directory's face,
/// `mod.rs`, which declares and re-exports its children by definition), with the siblings
/// each one imports.
pub struct DirGraph {
    /// The directory, relative to `runtime/` (`server`, `server/http`).
    pub dir: String,
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

/// One graph per directory under `runtime` that holds more than one file.
pub fn graphs(runtime: &Path) -> Vec<DirGraph> {
    let mut dirs = Vec::new();
    collect_dirs(runtime, &mut dirs);
    let mut graphs = Vec::new();
    for dir in dirs {
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .filter(|p| p.file_stem().is_some_and(|s| s != "mod"))
            .collect();
        let names: BTreeSet<String> = files.iter().map(|p| stem(p)).collect();
        // Child directories are modules of this one too (`http/` for `http`).
        let children: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| stem(&p))
            .collect();
        let relative = dir
            .strip_prefix(runtime)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if relative.is_empty() {
            // Top-level modules: tests/architecture.rs orders them by layer instead.
            continue;
        }
        let crate_prefix = format!("crate::{}::", relative.replace('/', "::"));
        // What the module's face re-exports from a child: `super::HubShared` in a sibling is
        // an import of `hub.rs` when the face says `use hub::HubShared`.
        let face = [dir.join("mod.rs"), dir.with_extension("rs")]
            .into_iter()
            .find(|f| f.is_file())
            .map(|f| blank_literals(&std::fs::read_to_string(f).unwrap()))
            .unwrap_or_default();
        let reexports = reexports(&face);
        let mut edges = BTreeMap::new();
        for file in &files {
            let me = stem(file);
            let text = blank_literals(&std::fs::read_to_string(file).unwrap());
            let imported: BTreeSet<String> = imports(&text, &crate_prefix)
                .into_iter()
                .map(|name| reexports.get(&name).cloned().unwrap_or(name))
                .filter(|name| *name != me && (names.contains(name) || children.contains(name)))
                .collect();
            edges.insert(me, imported);
        }
        graphs.push(DirGraph {
            dir: relative,
            edges,
        });
    }
    graphs
}

/// `use child::{A, b::C as D};` lines of a module's face: each imported name and the child
/// it comes from.
fn reexports(face: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for statement in face.split(';') {
        let statement = statement.trim();
        let Some(path) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
            .or_else(|| statement.strip_prefix("pub(super) use "))
            .or_else(|| statement.strip_prefix("use "))
        else {
            continue;
        };
        let Some((child, rest)) = path.split_once("::") else {
            continue;
        };
        let names = rest.trim_start_matches('{').trim_end_matches('}');
        for entry in names.split(',') {
            let entry = entry.trim();
            let name = match entry.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => entry.rsplit("::").next().unwrap_or(entry),
            };
            if !name.is_empty() && name != "self" && name != "*" {
                found.insert(name.to_string(), child.trim().to_string());
            }
        }
    }
    found
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_dirs(&path, out);
        }
    }
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Every circle in `graph`, each as the files in import order, the first repeated at the
/// end; each circle is reported once.
pub fn circles(graph: &DirGraph) -> Vec<Vec<String>> {
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for start in graph.edges.keys() {
        let mut path = vec![start.clone()];
        walk(graph, start, &mut path, &mut found);
    }
    found.into_iter().collect()
}

fn walk(graph: &DirGraph, start: &str, path: &mut Vec<String>, found: &mut BTreeSet<Vec<String>>) {
    let last = path.last().unwrap().clone();
    for next in graph.edges.get(&last).into_iter().flatten() {
        if next == start {
            // Reported from its smallest file, so each circle appears once.
            if path.iter().min().map(String::as_str) == Some(start) {
                let mut circle = path.clone();
                circle.push(start.to_string());
                found.insert(circle);
            }
        } else if !path.contains(next) {
            path.push(next.clone());
            walk(graph, start, path, found);
            path.pop();
        }
    }
}

/// The sibling names a file's code refers to through `super::` (at the file's own level) or
/// through `crate_prefix` (`crate::server::`).
fn imports(text: &str, crate_prefix: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    // The brace depth at which each open inline module started.
    let mut inline_modules: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        match bytes[i] {
            b'{' => {
                depth += 1;
                i += 1;
                continue;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if inline_modules.last() == Some(&depth) {
                    inline_modules.pop();
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        let at_word_start = i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != b':';
        if at_word_start && let Some(after) = inline_module_start(rest) {
            inline_modules.push(depth);
            depth += 1;
            i += after;
            continue;
        }
        if at_word_start && rest.starts_with("super::") {
            let mut supers = 0;
            let mut path = rest;
            while let Some(tail) = path.strip_prefix("super::") {
                supers += 1;
                path = tail;
            }
            // Inside `mod tests { … }` one more `super` reaches the siblings.
            if supers == inline_modules.len() + 1 {
                names.extend(path_heads(path));
            }
            i += rest.len() - path.len();
            continue;
        }
        if at_word_start && let Some(path) = rest.strip_prefix(crate_prefix) {
            names.extend(path_heads(path));
            i += crate_prefix.len();
            continue;
        }
        i += 1;
    }
    names
}

/// `mod name {` at the start of `text`: the length up to and including the brace.
fn inline_module_start(text: &str) -> Option<usize> {
    let after_mod = text.strip_prefix("mod ")?;
    let name_len = after_mod.bytes().take_while(|b| is_ident(*b)).count();
    let after_name = &after_mod[name_len..];
    let spaces = after_name.len() - after_name.trim_start().len();
    (name_len > 0 && after_name.trim_start().starts_with('{')).then_some(4 + name_len + spaces + 1)
}

/// The first segment of a path, or of each entry of a `{…}` group.
fn path_heads(path: &str) -> Vec<String> {
    if let Some(group) = path.strip_prefix('{') {
        let mut heads = Vec::new();
        let mut nesting = 0;
        let mut entry_start = true;
        for (offset, b) in group.bytes().enumerate() {
            match b {
                b'{' => nesting += 1,
                b'}' if nesting == 0 => break,
                b'}' => nesting -= 1,
                b',' if nesting == 0 => entry_start = true,
                b if entry_start && is_ident(b) => {
                    let head: String = group[offset..]
                        .bytes()
                        .take_while(|b| is_ident(*b))
                        .map(char::from)
                        .collect();
                    heads.push(head);
                    entry_start = false;
                }
                _ => {}
            }
        }
        return heads;
    }
    let head: String = path
        .bytes()
        .take_while(|b| is_ident(*b))
        .map(char::from)
        .collect();
    vec![head]
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `text` with comments and the contents of string and char literals replaced by spaces,
/// so that neither a brace nor a path inside them counts.
pub fn blank_literals(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|b| *b == b'\n')
                .map_or(bytes.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = find(bytes, i + 2, b"*/").map_or(bytes.len(), |p| p + 2);
            blank(&mut out, i, end);
            i = end;
        } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#"))
            && (i == 0 || !is_ident(bytes[i - 1]))
        {
            let hashes = rest[1..].iter().take_while(|b| **b == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut closing = vec![b'"'];
            closing.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let end = find(bytes, start, &closing).map_or(bytes.len(), |p| p + closing.len());
            blank(&mut out, start, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(bytes.len()));
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '{'); a lifetime ('a) has no closing quote after it.
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|b| *b == b'\'').map(|p| p + 3)
            } else {
                let width = (1..=4)
                    .find(|w| rest.len() > *w && std::str::from_utf8(&rest[1..1 + w]).is_ok())
                    .unwrap_or(1);
                (rest.get(1 + width) == Some(&b'\'')).then_some(width + 2)
            };
            match len {
                Some(len) => {
                    blank(&mut out, i + 1, i + len - 1);
                    i += len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}
