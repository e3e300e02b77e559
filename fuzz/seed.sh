#!/usr/bin/env bash
# Build the fuzz targets' seed corpora under fuzz/corpus/ (not committed)
# from the repository's fixtures and fuzz/seeds/. See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")"
root=..
corpus=corpus

seed() { # target name < bytes
    mkdir -p "$corpus/$1"
    cat > "$corpus/$1/seed-$2"
}

# Framing targets: one byte for the line limit (0xff: the real limit, 0x45:
# 1005 bytes, 0x08: 8 bytes), two bytes seeding the cut into reads, the body.
for f in "$root"/tests/fixtures/{sse,anthropic,responses}/*.txt; do
    name=$(basename "$(dirname "$f")")-$(basename "$f" .txt)
    for limit in '\xff' '\x45' '\x08'; do
        { printf "$limit\\x01\\x02"; cat "$f"; } | seed sse_framing "$name-$(printf %s "$limit" | tr -d '\\')"
    done
done
for f in "$root"/tests/fixtures/ollama/*.ndjson; do
    name=$(basename "$f" .ndjson)
    for limit in '\xff' '\x45' '\x08'; do
        { printf "$limit\\x03\\x04"; cat "$f"; } | seed ndjson_framing "$name-$(printf %s "$limit" | tr -d '\\')"
    done
done

# Wire parsers: the captured bodies as they are.
for f in "$root"/tests/fixtures/sse/*.txt; do seed wire_chat_completions "$(basename "$f")" < "$f"; done
for f in "$root"/tests/fixtures/responses/*.txt; do seed wire_responses "$(basename "$f")" < "$f"; done
for f in "$root"/tests/fixtures/anthropic/*.txt; do seed wire_anthropic "$(basename "$f")" < "$f"; done
for f in "$root"/tests/fixtures/ollama/*.ndjson; do seed wire_ollama "$(basename "$f")" < "$f"; done

# apply_patch: every fixture's patch.
for d in "$root"/tests/fixtures/apply_patch/*/; do
    [ -f "$d/patch.txt" ] && seed apply_patch_parser "$(basename "$d")" < "$d/patch.txt"
done

# Known-safe commands: one script per line.
n=0
while IFS= read -r line; do
    n=$((n + 1))
    printf %s "$line" | seed safe_command "$n"
done < seeds/safe_command.txt

# Task files and config.
seed task_file example < "$root/examples/tasks.toml"
seed task_file small < seeds/task_file.toml
seed config example < "$root/cogni.toml.example"

for d in "$corpus"/*/; do echo "$(basename "$d"): $(ls "$d" | wc -l) seeds"; done
