#!/usr/bin/env bash
# Run one fuzz target the way docs/testing.md records: nightly, no
# sanitizer, one job at low priority, for SECONDS (default 600), with a
# 10-second limit per input (a hang is a finding) and the target's input
# size bound. Seeds come from ./seed.sh. cargo fuzz's output goes to
# logs/TARGET/run.out, libFuzzer's (the run itself) to logs/TARGET/fuzz-0.log;
# a finding goes to artifacts/TARGET/ (cargo fuzz's default).
#
#   fuzz/run.sh sse_framing [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
target=$1
seconds=${2:-600}
case $target in
    sse_framing | ndjson_framing) max_len=65536 ;;
    safe_command) max_len=4096 ;;
    *) max_len=16384 ;;
esac
[ -d "corpus/$target" ] || ./seed.sh > /dev/null
mkdir -p "logs/$target" "artifacts/$target"
rm -f fuzz-0.log
status=0
nice -n 10 cargo +nightly fuzz run -s none "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -max_len="$max_len" \
    -jobs=1 -workers=1 -print_final_stats=1 2>&1 | tee "logs/$target/run.out" || status=$?
# With -jobs, libFuzzer writes the run itself to fuzz-0.log in the
# working directory; keep it even when the run found something.
if [ -f fuzz-0.log ]; then
    mv fuzz-0.log "logs/$target/fuzz-0.log"
fi
grep -E "^Done|stat::|DONE|ERROR|SUMMARY|Test unit written" "logs/$target/fuzz-0.log" || true
exit "$status"
