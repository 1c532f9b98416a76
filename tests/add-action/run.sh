#!/usr/bin/env bash
# The add-an-action promise (README "Adding an action"): a copy of this checkout gets one new,
# valid action YAML, is built, and the suites that read the catalog must still pass. Only the
# snapshots README names may change, and they are accepted in the copy (INSTA_UPDATE=always)
# so a changed count or list shows up as a failing assertion, never as a snapshot diff.
#
# Cost: the copy reuses this checkout's compiled registry dependencies (target/debug without
# its test and example executables, ~2 GB), so it compiles the two workspace crates and the
# selected test binaries once more; see README "Adding an action" for the measured minutes.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
export CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0
start=$SECONDS

if [ ! -d target/debug/deps ]; then
    echo "tests/add-action: build this checkout first (cargo build --all-targets --examples)" >&2
    exit 1
fi
copy="$(mktemp -d "${TMPDIR:-/tmp}/snowluma-add-action.XXXXXX")"
trap 'rm -rf "$copy"' EXIT

# The tracked and untracked (not ignored) files, as a fresh clone with local edits would have;
# or, with ADD_ACTION_REV=<commit>, that commit's tree (to show that an older tree fails).
if [ -n "${ADD_ACTION_REV:-}" ]; then
    git archive "$ADD_ACTION_REV" | tar -xf - -C "$copy"
else
    git ls-files -z --cached --others --exclude-standard \
        | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$copy"
fi
# Compiled dependencies only: test binaries and examples are rebuilt anyway (the crate changes).
# A file that a concurrent cargo run replaces while we copy is only rebuilt, so a vanished
# file is not an error.
mkdir -p "$copy/target/debug/deps"
cp -a target/debug/build target/debug/.fingerprint "$copy/target/debug/" 2>/dev/null || true
find target/debug/deps -maxdepth 1 -type f \( ! -perm -u+x -o -name '*.so' \) \
    -exec cp -a -t "$copy/target/debug/deps/" {} + 2>/dev/null || true
# Cargo judges path crates fresh by mtime: extracted files keep their old times, which are older
# than the copied artifacts, so the copy's crates (and build script) would count as built.
find "$copy" -path "$copy/target" -prune -o -type f -exec touch {} +
# A repository of its own, so what the build and the tests change shows in `git status`.
git -C "$copy" init -q
git -C "$copy" add -A
git -C "$copy" -c user.name=add-action -c user.email=add-action@localhost commit -qm base
echo "tests/add-action: copied the checkout and its dependencies in $((SECONDS - start)) s"

# A new read-only action in an existing category, written as a user would: one YAML file.
new_action=get_add_action_probe
cat > "$copy/spec/actions/info/$new_action.yaml" <<'YAML'
name: "get_add_action_probe"
category: info
summary: 测试用的新增只读动作 (probe action added by the add-an-action CI test)
read_only: true
keywords: [探针, probe]
returns:
  description: |-
    成功时 data 为 {ok} 一个布尔值。
  schema:
    type: object
    properties:
      ok:
        type: boolean
        description: 是否成功
    required: [ok]
examples:
  - summary: 调用探针动作
    params: {}
YAML

cd "$copy"
cargo build --locked
cargo build --locked --example fake_snowluma
git diff --quiet -- generated/ && {
    echo "tests/add-action: cargo build did not regenerate generated/ for the new action" >&2
    exit 1
}
echo "tests/add-action: built in $((SECONDS - start)) s"

# The suites that read the catalog: codegen (fixtures, freshness, upstream sync), the catalog
# as data, the docs tools over stdio in both generations, typed tools, search, the CLI, and
# the python client.
INSTA_UPDATE=always cargo test --locked -p snowluma-mcp-codegen
INSTA_UPDATE=always cargo test --locked -p snowluma-mcp --lib \
    --test catalog --test stdio_rmcp_client --test stdio_protocol --test action_tools \
    --test search_quality --test cli --test parity
bash "$repo/scripts/python-env.sh"
"$repo/.venv/bin/python" -m pytest -q tests/python/test_mcp_client.py \
    tests/python/test_toolsets_client.py

# Which snapshots a new action may change (README "Adding an action" names them): the counts
# (list_categories, runtime_info_docs_*, the catalog-sync report's kept examples) and, for an
# action in `info`, that category's listing.
allowed="codegen/tests/snapshots/upstream_sync__dev_884db94_report.snap
tests/snapshots/stdio_rmcp_client__list_actions_info.snap
tests/snapshots/stdio_rmcp_client__list_categories.snap
tests/snapshots/stdio_rmcp_client__runtime_info_docs_legacy.snap
tests/snapshots/stdio_rmcp_client__runtime_info_docs_modern.snap"
changed="$(git status --porcelain --untracked-files=all | sed 's/^...//' | grep -E '\.snap' | sort || true)"
unexpected="$(comm -23 <(echo "$changed") <(echo "$allowed") | sed '/^$/d')"
if [ -n "$unexpected" ]; then
    echo "tests/add-action: a new action changed snapshots README does not name:" >&2
    echo "$unexpected" >&2
    exit 1
fi
if ! grep -q stdio_rmcp_client__list_categories.snap <<<"$changed"; then
    echo "tests/add-action: list_categories.snap did not change; were the snapshot tests run?" >&2
    exit 1
fi
echo "tests/add-action: ok in $((SECONDS - start)) s"
