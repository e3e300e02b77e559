#!/usr/bin/env bash
# Compare cogni's grep tool with ripgrep on a generated tree.
#
#   scripts/bench_grep.sh [FILES]     (default 50000 files, about 1 KB each)
#
# Prints the best of RUNS (default 5) wall-clock times for each, in ms, and
# the ratio cogni / rg. rg runs with the same walk rules as the tool
# (--hidden, .gitignore respected) and prints all matches to /dev/null.
set -euo pipefail

FILES="${1:-50000}"
RUNS="${RUNS:-5}"

cd "$(dirname "$0")/.."
cargo build --quiet --profile dist --example grep_bench
BIN=target/dist/examples/grep_bench
PATTERN="$("$BIN" pattern)"

DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
echo "generating $FILES files in $DIR" >&2
"$BIN" gen "$DIR" "$FILES"

# Warm the page cache so both tools read from memory.
find "$DIR" -type f -exec cat {} + >/dev/null

cogni_ms="$("$BIN" search "$DIR" "$RUNS")"
echo "cogni grep: ${cogni_ms} ms (best of $RUNS)"

if ! command -v rg >/dev/null; then
    echo "rg not installed; no comparison (apt-get install ripgrep)"
    exit 0
fi

best_rg=""
for _ in $(seq "$RUNS"); do
    start=$(date +%s%N)
    rg --hidden -n "$PATTERN" "$DIR" >/dev/null || true
    end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 ))
    if [[ -z "$best_rg" || "$ms" -lt "$best_rg" ]]; then best_rg="$ms"; fi
done
echo "rg:         ${best_rg} ms (best of $RUNS, $(rg --version | head -1))"
awk -v c="$cogni_ms" -v r="$best_rg" 'BEGIN {
    if (r <= 0) r = 1;
    printf "ratio cogni/rg: %.2f\n", c / r
}'
