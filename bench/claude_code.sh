#!/usr/bin/env bash
# Lint speed on a directory of Claude Code sessions laid out like
# ~/.claude/projects: the real sessions of fixtures/corpus (13 files, 4.1 MB,
# sub-agent files included) copied into project folders until the tree holds
# about TARGET_MB, then `chatfsck lint` over the whole tree, best of RUNS, with
# `cat | wc -l` over the same files as the baseline. Prints MB/s and peak RSS.
#
#   bench/claude_code.sh            # ~1 GB, best of 3
#   TARGET_MB=200 RUNS=1 bench/claude_code.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=${CORPUS:-$repo/fixtures/corpus}
dir=${BENCH_DIR:-/tmp/chatfsck-bench-claude}/projects
bin=${CHATFSCK_BIN:-$repo/target/release/chatfsck}
target_mb=${TARGET_MB:-1000}
runs=${RUNS:-3}
[ -x "$bin" ] || { echo "no $bin: cargo build --release first" >&2; exit 2; }
# The tree, laid out by gen_claude_tree.py (undamaged; rebuilt only when
# missing or made with another size).
python3 "$repo/bench/gen_claude_tree.py" --out "$(dirname "$dir")" --mb "$target_mb" \
    --damaged 0 --corpus "$corpus" >/dev/null
bytes=$(find "$dir" -type f -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
files=$(find "$dir" -type f -name '*.jsonl' | wc -l)
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $files files, $bytes bytes"
best() {
    local b=999999
    for _ in $(seq "$runs"); do
        local s e
        s=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || true
        e=$(date +%s.%N)
        b=$(echo "$e - $s" | bc -l | awk -v b="$b" '{ print ($1 < b) ? $1 : b }')
    done
    echo "$b"
}
cat_s=$(best sh -c "find '$dir' -type f -name '*.jsonl' -print0 | xargs -0 cat | wc -l")
lint_s=$(best "$bin" lint --format json "$dir")
rss=$( { /usr/bin/time -f %M "$bin" lint --format json "$dir" >/dev/null; } 2>&1 | tail -1)
code=0
"$bin" lint --format json "$dir" >/dev/null || code=$?
echo "cat | wc -l: ${cat_s}s"
echo "chatfsck lint: ${lint_s}s ($(echo "$bytes / $lint_s / 1000000" | bc) MB/s), exit $code, peak RSS ${rss} KiB"
