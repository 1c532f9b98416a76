#!/usr/bin/env bash
# Fuzzing: builds the cargo-fuzz targets in fuzz/ and runs each for a bounded time, starting
# from its committed seed corpus (fuzz/corpus/<target>/); fails if any target crashes, and
# prints the executions per target. Needs only the stable toolchain and a C++ compiler
# (libFuzzer is C++); cargo-fuzz is installed from crates.io if it is missing.
#
#   FUZZ_SECONDS    seconds per target (default 20)
#   FUZZ_TARGETS    space-separated targets to run (default: all of them)
#   FUZZ_SANITIZER  none (default) or address; see below
#
# New inputs a run finds go to a scratch corpus outside the tree, so the committed seeds stay
# as they are; a crashing input is saved under fuzz/artifacts/<target>/ and its report shown.
#
# Sanitizer: the targets and the code they reach are safe Rust, so AddressSanitizer would only
# watch the unsafe code inside dependencies, at about twice the build time and half the
# speed. The default is none; coverage instrumentation, debug assertions and overflow checks
# stay on. `address` needs -Zsanitizer, which stable rustc accepts with RUSTC_BOOTSTRAP=1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TERM_COLOR=never

CARGO_FUZZ_VERSION=0.13.2
seconds="${FUZZ_SECONDS:-20}"
sanitizer="${FUZZ_SANITIZER:-none}"

case "$seconds" in
    '' | *[!0-9]*) echo "FUZZ_SECONDS must be a whole number of seconds (got '$seconds')" >&2; exit 2 ;;
esac
case "$sanitizer" in
    none) ;;
    address) export RUSTC_BOOTSTRAP=1 ;;
    *) echo "FUZZ_SANITIZER must be none or address (got '$sanitizer')" >&2; exit 2 ;;
esac
if ! command -v c++ >/dev/null 2>&1; then
    echo "libFuzzer needs a C++ compiler: install g++ (Debian: apt-get install g++)" >&2
    exit 1
fi
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

# cargo fuzz has no --locked; this fails the same way when fuzz/Cargo.lock is out of date.
cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null

# Release as fuzz/Cargo.toml sets it (the big dependencies unoptimised, the hot crates and
# libFuzzer optimised) with 16 codegen units instead of cargo-fuzz's 1: about half the cold
# build of optimising everything, still thousands of executions a second.
build=(--sanitizer "$sanitizer" --debug-assertions --codegen-units 16)
started=$SECONDS
cargo fuzz build "${build[@]}"
echo "fuzz: built every target in $((SECONDS - started)) s"

targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

failed=()
summary=()
for target in $targets; do
    seeds="fuzz/corpus/$target"
    if [ ! -d "$seeds" ]; then
        echo "fuzz: $target has no seed corpus at $seeds" >&2
        exit 1
    fi
    log="$scratch/$target.log"
    mkdir -p "$scratch/$target" "fuzz/artifacts/$target"
    # The first corpus directory receives what the run finds; the seeds are only read.
    if cargo fuzz run "${build[@]}" "$target" "$scratch/$target" "$seeds" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        failed+=("$target")
        # The panic message, then the end of the report (the input's Debug dump is one very
        # long line, cut short here; the input itself is in fuzz/artifacts/).
        echo "fuzz: $target failed:" >&2
        grep -m 1 -A 3 -E 'panicked at|ERROR: libFuzzer' "$log" | cut -c 1-400 >&2 || true
        tail -n 30 "$log" | cut -c 1-400 >&2
    fi
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    # libFuzzer's last status line: coverage counters, features and corpus size.
    status="$(grep -E '^#[0-9]+' "$log" | tail -n 1 | grep -oE '(cov|ft|corp): [^ ]+' | tr '\n' ' ')"
    summary+=("$(printf '%-20s %-6s %10s executions in %ss  %s' \
        "$target" "$result" "${runs:-?}" "$seconds" "$status")")
done

echo "fuzz: results ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
printf '  %s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: crashes in ${failed[*]}; inputs are under fuzz/artifacts/<target>/, replay one" \
        "with: cargo fuzz run ${build[*]} <target> <input>" >&2
    exit 1
fi
