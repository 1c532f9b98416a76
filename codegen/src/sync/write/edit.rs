//! Edits of one spec file's text at located spans (the codegen's line:column index), so
//! everything the sync does not own (comments, other fields, our examples and returnsSchema)
//! stays byte for byte as it was. Each edit re-reads the index of the current text.

use crate::locate::Locations;

pub struct Doc {
    lines: Vec<String>,
}

impl Doc {
    pub fn new(text: &str) -> Self {
        Doc {
            lines: text.lines().map(str::to_string).collect(),
        }
    }

    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        text.push('\n');
        text
    }

    fn locations(&self) -> Locations {
        Locations::index(&self.text())
    }

    fn indent(line: &str) -> usize {
        line.len() - line.trim_start_matches(' ').len()
    }

    /// True when the key at `(line, column)` starts its own line (block style), so its line
    /// can be rewritten without touching a neighbour.
    fn block_key(&self, (line, column): (usize, usize), key: &str) -> bool {
        self.lines.get(line - 1).is_some_and(|text| {
            let before = text.get(..column - 1).unwrap_or("");
            before
                .trim_start_matches(' ')
                .trim_start_matches("- ")
                .trim()
                .is_empty()
                && text[column - 1..].starts_with(&format!("{key}:"))
        })
    }

    /// The lines after `line` that belong to it (deeper indentation, or blank).
    fn extent(&self, line: usize, indent: usize) -> usize {
        let mut end = line;
        while end < self.lines.len() {
            let next = &self.lines[end];
            if !next.trim().is_empty() && Self::indent(next) <= indent {
                break;
            }
            end += 1;
        }
        while end > line && self.lines[end - 1].trim().is_empty() {
            end -= 1;
        }
        end
    }

    /// Sets `path` (`params[2].required`) to `value` (YAML flow text), inserting the key after
    /// the `after` sibling when it is absent. False when the spot is not plain block YAML.
    pub fn set(&mut self, path: &str, value: &str, after: &[&str]) -> bool {
        let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
        let at = self.locations();
        if let Some(spot) = at.get(path) {
            if !self.block_key(spot, key) {
                return false;
            }
            let (line, column) = spot;
            let end = self.extent(line, column - 1);
            let prefix = self.lines[line - 1][..column - 1].to_string();
            self.lines
                .splice(line - 1..end, [format!("{prefix}{key}: {value}")]);
            return true;
        }
        let join = |k: &str| {
            if parent.is_empty() {
                k.to_string()
            } else {
                format!("{parent}.{k}")
            }
        };
        let Some((sibling, spot)) = after
            .iter()
            .rev()
            .find_map(|k| at.get(&join(k)).map(|spot| (*k, spot)))
        else {
            return false;
        };
        if !self.block_key(spot, sibling) {
            return false;
        }
        let (line, column) = spot;
        let end = self.extent(line, column - 1);
        self.lines
            .insert(end, format!("{}{key}: {value}", " ".repeat(column - 1)));
        true
    }

    /// Removes `path` and its value; true when it was absent already or removed.
    pub fn remove(&mut self, path: &str) -> bool {
        let key = path.rsplit_once('.').map_or(path, |(_, k)| k);
        let Some(spot) = self.locations().get(path) else {
            return true;
        };
        if !self.block_key(spot, key) || self.lines[spot.0 - 1][..spot.1 - 1].contains('-') {
            return false;
        }
        let end = self.extent(spot.0, spot.1 - 1);
        self.lines.drain(spot.0 - 1..end);
        true
    }

    /// Removes list item `path` (`params[3]`) with all its lines.
    pub fn remove_item(&mut self, path: &str) -> bool {
        let Some((line, _)) = self.locations().get(path) else {
            return false;
        };
        let dash = Self::indent(&self.lines[line - 1]);
        if !self.lines[line - 1][dash..].starts_with("- ") {
            return false;
        }
        let end = self.extent(line, dash);
        self.lines.drain(line - 1..end);
        true
    }

    /// Appends `block` (whole lines) as the last item of the top-level list `key`, creating
    /// the key before `before` (the first of them the file has) when it is missing.
    pub fn append_item(&mut self, key: &str, block: &str, before: &[&str]) -> bool {
        let at = self.locations();
        let new_lines = block.lines().map(str::to_string);
        if let Some((line, column)) = at.get(key) {
            if column != 1 {
                return false;
            }
            let end = self.extent(line, 0);
            self.lines.splice(end..end, new_lines);
            return true;
        }
        let Some((line, _)) = before.iter().find_map(|k| at.get(k)) else {
            return false;
        };
        let lines: Vec<String> = std::iter::once(format!("{key}:"))
            .chain(new_lines)
            .collect();
        self.lines.splice(line - 1..line - 1, lines);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# a comment we keep\nname: x\nparams:\n  - name: a\n    type: uint\n    required: true  \n    description: 群号\n  - { name: b, type: string, description: 流式写法 }\nreturns:\n  description: d\n  schema: {type: \"null\"}\n";

    #[test]
    fn edits_touch_only_their_lines() {
        let mut doc = Doc::new(FILE);
        assert!(doc.set("params[0].type", "int", &[]));
        assert!(doc.set("params[0].minimum", "5", &["name", "type", "required"]));
        assert!(doc.remove("params[0].required"));
        assert!(
            !doc.set("params[1].type", "int", &[]),
            "flow items are left for a person"
        );
        let text = doc.text();
        assert_eq!(
            text,
            "# a comment we keep\nname: x\nparams:\n  - name: a\n    type: int\n    minimum: 5\n    description: 群号\n  - { name: b, type: string, description: 流式写法 }\nreturns:\n  description: d\n  schema: {type: \"null\"}\n"
        );
    }

    #[test]
    fn items_are_appended_and_removed_whole() {
        let mut doc = Doc::new(FILE);
        assert!(doc.append_item(
            "params",
            "  - name: c\n    type: bool\n    description: 新\n",
            &[]
        ));
        assert!(doc.remove_item("params[0]"));
        assert_eq!(
            doc.text(),
            "# a comment we keep\nname: x\nparams:\n  - { name: b, type: string, description: 流式写法 }\n  - name: c\n    type: bool\n    description: 新\nreturns:\n  description: d\n  schema: {type: \"null\"}\n"
        );
        let mut bare = Doc::new("name: y\nreturns:\n  description: d\n");
        assert!(bare.append_item("params", "  - name: c\n", &["invariants", "returns"]));
        assert_eq!(
            bare.text(),
            "name: y\nparams:\n  - name: c\nreturns:\n  description: d\n"
        );
    }
}
