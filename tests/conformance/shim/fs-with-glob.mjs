// node:fs with a small recursive globSync for the patterns the runner uses ("*", "**", "?").
import * as fs from "node:fs";
import * as path from "node:path";

export * from "node:fs";
export default fs.default ?? fs;

function toRegExp(pattern) {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*" && pattern[i + 1] === "*") {
      out += ".*";
      i++;
      if (pattern[i + 1] === "/") i++;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

function walk(dir, base, found) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const rel = base ? `${base}/${entry.name}` : entry.name;
    found.push(rel);
    if (entry.isDirectory()) walk(path.join(dir, entry.name), rel, found);
  }
}

export function globSync(patterns, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const list = Array.isArray(patterns) ? patterns : [patterns];
  const all = [];
  walk(cwd, "", all);
  const result = new Set();
  for (const pattern of list) {
    const re = toRegExp(pattern.replace(/\\/g, "/"));
    for (const rel of all) if (re.test(rel)) result.add(rel);
  }
  return [...result];
}
