#!/usr/bin/env bash
# A run without a path on a home with thousands of sessions of several
# apps (bench/gen_home.py: Claude Code, Codex, half of its rollouts
# `.jsonl.zst`, Gemini CLI, Copilot CLI, Cline), against `cat | wc -l` over
# the files it reads (`zstdcat` for the compressed ones); and, in the same
# run, a plain Claude Code tree of the same size (as bench/claude_code.sh)
# against `cat | wc -l` over its files. Discovery must cost nothing: the
# home's ratio should be no worse than the plain tree's. Best of RUNS.
#
#   bench/discovery.sh                # ~600 MB home, best of 3
#   MB=200 SMALL=500 RUNS=1 bench/discovery.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
base=${BENCH_DIR:-/tmp/chatfsck-bench-discovery}
bin=${CHATFSCK_BIN:-$repo/target/release/chatfsck}
mb=${MB:-600}
small=${SMALL:-1500}
runs=${RUNS:-3}
[ -x "$bin" ] || { echo "no $bin: cargo build --release first" >&2; exit 2; }
python3 "$repo/bench/gen_home.py" --out "$base" --mb "$mb" --small "$small"
python3 "$repo/bench/gen_claude_tree.py" --out "$base/plain" --mb "$mb" --damaged 0 >/dev/null
home=$base/home
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
nopath() { env -i PATH="$PATH" HOME="$home" "$bin" lint --format json; }
# The files the run reads, from its own report.
nopath > "$base/out.json" || true
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
with open(sys.argv[2], "wb") as f:
    for x in d["files"]:
        f.write(x["path"].encode() + b"\0")
for a in d["discovery"]:
    print("  %s: %d files, %d sessions, %d unread" % (a["app"], a["found"], a["sessions"], len(a["unread"])))
' "$base/out.json" "$base/files.list"
bytes=$(du -cb --files0-from="$base/files.list" | tail -1 | cut -f1)
files=$(tr -cd '\0' < "$base/files.list" | wc -c)
zst_files=$(grep -zc '[.]zst$' "$base/files.list" || true)
plain_bytes=$(find "$base/plain/projects" -type f -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
plain_files=$(find "$base/plain/projects" -type f -name '*.jsonl' | wc -l)
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "home: $files files ($zst_files .zst), $bytes bytes on disk; plain Claude Code tree: $plain_files files, $plain_bytes bytes"
export -f nopath; export bin home
# The plain files through cat, the compressed ones through zstdcat.
home_cat=$(best sh -c "{ grep -zv '[.]zst\$' '$base/files.list' | xargs -0 cat; grep -z '[.]zst\$' '$base/files.list' | xargs -0 -r zstdcat; } | wc -l")
home_lint=$(best bash -c nopath)
plain_cat=$(best sh -c "find '$base/plain/projects' -type f -name '*.jsonl' -print0 | xargs -0 cat | wc -l")
plain_lint=$(best "$bin" lint --format json "$base/plain/projects")
# lint exits 1 when it finds an error: not a failure of this script.
rss=$( { /usr/bin/time -f %M env -i PATH="$PATH" HOME="$home" "$bin" lint --format json >/dev/null || true; } 2>&1 | tail -1)
ratio() { echo "scale=2; $1 / $2" | bc -l; }
echo "home, no path:  cat | wc -l ${home_cat}s, chatfsck lint ${home_lint}s: $(ratio "$home_lint" "$home_cat")x cat, peak RSS ${rss} KiB"
echo "plain tree:     cat | wc -l ${plain_cat}s, chatfsck lint ${plain_lint}s: $(ratio "$plain_lint" "$plain_cat")x cat"
