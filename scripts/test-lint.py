#!/usr/bin/env python3
"""Keeps the test suite honest: fails on a test that cannot fail, and on a negative proved by
sleeping.

1. Every `#[test]` / `#[tokio::test]` function must assert something: an assertion macro
   (`assert!`, `assert_eq!`, `prop_assert!`, insta's `assert_*snapshot!`, `panic!`, `.expect(`
   on a `Result` or `Option` that carries the check) or a call to a helper that does, found by
   name in the scanned files (helpers calling helpers count too).
2. A `sleep` outside a polling loop followed within a few lines by an assertion: "give it time,
   then check" proves a negative by hoping, and a positive only on an idle machine. Wait for the
   event itself (a poll with a generous bound, a barrier, a marker request), or for a later
   event that proves the earlier one is over.

Exceptions live in scripts/test-lint-allow.txt, one `path::function  reason` a line; an entry
that matches nothing is itself an error, so the list cannot rot.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["tests", "runtime", "codegen/src", "codegen/tests", "examples"]
ALLOW = ROOT / "scripts" / "test-lint-allow.txt"

TEST_ATTR = re.compile(r"#\[(?:tokio::)?test(?:\([^)]*\))?\]")
FN = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")
ASSERTS = re.compile(
    r"\b(?:assert\w*!|debug_assert\w*!|prop_assert\w*!|panic!|unreachable!|"
    r"insta::assert_\w+!|assert_\w+_snapshot!)|\.expect\(|\.expect_err\(|\.unwrap_err\("
)
CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\s*(?:::<[^>]*>)?\(")
SLEEP = re.compile(r"\bsleep\(")
LOOP = re.compile(r"\b(?:for|while|loop)\b")
SLEEP_WINDOW = 6


def blank_literals(text: str) -> str:
    """Comments, string and char literals blanked (newlines kept), so braces and assertion words
    inside them do not count and line numbers hold."""
    out, i, n = [], 0, len(text)

    def blank(chunk: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in chunk)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(blank(text[i:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(blank(text[i:end]))
            i = end
        elif raw := re.match(r'b?r(#*)"', text[i:]):
            close = '"' + raw[1]
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + blank(text[i + 2 : end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + blank(text[i + 2 : j + 1]))
            i = j + 1
        elif c == "'" and (char := re.match(r"'(?:\\.|\\u\{[0-9a-fA-F]+\}|[^'\\])'", text[i:])):
            out.append("' '" + " " * (char.end() - 3))
            i += char.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text: str):
    """(name, is_test, body, first_line) for every fn with a braced body."""
    found = []
    for match in FN.finditer(text):
        open_brace = text.find("{", match.end())
        semicolon = text.find(";", match.end())
        if open_brace < 0 or (0 <= semicolon < open_brace):
            continue  # a declaration without a body
        depth, i = 0, open_brace
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        body = text[open_brace : i + 1]
        head = text[max(0, match.start() - 200) : match.start()]
        attrs = head[head.rfind("}") + 1 :] if "}" in head else head
        is_test = bool(TEST_ATTR.search(attrs)) and "#[ignore" not in attrs
        line = text.count("\n", 0, match.start()) + 1
        found.append((match[1], is_test, body, line))
    return found


def sleeps_outside_loops(lines: list[str]):
    """Indexes of lines that sleep outside any `for`/`while`/`loop` block (a sleep inside one is
    a poll, which waits on its condition)."""
    stack: list[bool] = []
    for i, text in enumerate(lines):
        if SLEEP.search(text) and not any(stack):
            yield i
        opens_loop = bool(LOOP.search(text))
        for c in text:
            if c == "{":
                stack.append(opens_loop)
                opens_loop = False
            elif c == "}" and stack:
                stack.pop()


def main() -> int:
    files = [p for d in SCANNED for p in sorted((ROOT / d).rglob("*.rs")) if "target" not in p.parts]
    parsed = {p: functions(blank_literals(p.read_text(encoding="utf-8"))) for p in files}

    bodies: dict[str, list[str]] = {}
    for fns in parsed.values():
        for name, _, body, _ in fns:
            bodies.setdefault(name, []).append(body)
    asserting = {name for name, bs in bodies.items() if any(ASSERTS.search(b) for b in bs)}
    changed = True
    while changed:
        changed = False
        for name, bs in bodies.items():
            if name in asserting:
                continue
            if any(call in asserting for b in bs for call in CALL.findall(b)):
                asserting.add(name)
                changed = True

    # Helpers that sleep outside a loop and check nothing (`settle()`): calling one is a sleep.
    sleepers = {
        name
        for fns in parsed.values()
        for name, is_test, body, _ in fns
        if not is_test and not ASSERTS.search(body) and any(sleeps_outside_loops(body.splitlines()))
    }
    global SLEEP
    if sleepers:
        SLEEP = re.compile(r"\bsleep\(|\b(?:" + "|".join(sorted(sleepers)) + r")\(")

    allowed = {}
    if ALLOW.exists():
        for raw in ALLOW.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key, _, reason = line.partition(" ")
            if not reason.strip():
                print(f"{ALLOW.relative_to(ROOT)}: `{key}` needs a reason", file=sys.stderr)
                return 1
            allowed[key] = reason.strip()
    used = set()
    problems = []
    for path, fns in parsed.items():
        rel = path.relative_to(ROOT).as_posix()
        for name, is_test, body, line in fns:
            key = f"{rel}::{name}"
            if is_test and not (ASSERTS.search(body) or any(c in asserting for c in CALL.findall(body))):
                if key in allowed:
                    used.add(key)
                else:
                    problems.append(f"{rel}:{line}: test `{name}` asserts nothing")
            if not is_test and name not in asserting:
                continue
            lines = body.splitlines()
            for i in sleeps_outside_loops(lines):
                window = lines[i + 1 : i + 1 + SLEEP_WINDOW]
                hit = next((w for w in window if "assert" in w), None)
                if hit:
                    if key in allowed:
                        used.add(key)
                    else:
                        problems.append(
                            f"{rel}:{line + i}: `{name}` sleeps, then asserts: {hit.strip()}"
                        )
    for key in sorted(set(allowed) - used):
        problems.append(f"{ALLOW.relative_to(ROOT)}: `{key}` matches nothing; remove it")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(
            f"test-lint: {len(problems)} problem(s); see scripts/test-lint.py for the rules",
            file=sys.stderr,
        )
        return 1
    print(f"test-lint: {sum(f[1] for fns in parsed.values() for f in fns)} tests checked, no problem")
    return 0


if __name__ == "__main__":
    sys.exit(main())
