#!/usr/bin/env bash
# Repair benchmark: `chatfsck repair` against `chatfsck lint` on the same
# input, pair by pair in the same run, with peak RSS and bytes written to
# files: a directory of OpenAI JSONL sessions (gen_corpus.py, 3000 files,
# ~300 MB by default), a ~/.claude/projects tree of the real Claude Code
# sessions with a fifth of its files damaged as crashes damage them
# (gen_claude_tree.py, ~300 MB), and dispatch's chunk store (gen_kv.py, a
# million chunks, ~720 MB). Target: repair <= 2x lint, memory bounded. The
# tree repairs are also timed against copying the tree and flushing it to
# disk, what writing any copy costs. The repaired copy is removed before
# each run (untimed).
#   bench/repair.sh [--files N] [--mb MB] [--claude-mb MB] [--chunks N] [--runs N]
set -euo pipefail
FILES=3000
MB=300
CLAUDE_MB=300
CHUNKS=1000000
RUNS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --files) FILES="$2"; shift 2 ;;
    --mb) MB="$2"; shift 2 ;;
    --claude-mb) CLAUDE_MB="$2"; shift 2 ;;
    --chunks) CHUNKS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "usage: bench/repair.sh [--files N] [--mb MB] [--claude-mb MB] [--chunks N] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
python3 "$HERE/gen_corpus.py" --out "$BENCH_DIR" --files "$FILES" --mb "$MB" > /dev/null
CORPUS="$BENCH_DIR/corpus"
python3 "$HERE/gen_claude_tree.py" --out "$BENCH_DIR/claude" --mb "$CLAUDE_MB"
CLAUDE="$BENCH_DIR/claude/projects"
DB="$BENCH_DIR/kv/dispatch-$CHUNKS.db"
[ -f "$DB" ] || python3 "$HERE/gen_kv.py" --chunks "$CHUNKS" --out "$DB"
OUT="$BENCH_DIR/repaired"
# The last run's copy is moved aside before each run and removed between
# the calls, then the script waits: on ext4, creating thousands of files
# right after deleting thousands makes the inode allocator step over the
# recently deleted ones (recently_deleted(), for about 30 s), which timed
# the file system's bookkeeping, not the repair (3-10x on this VM).
TRASH="$BENCH_DIR/trash"
rm -rf "$OUT" "$TRASH"
mkdir -p "$TRASH"
BEFORE="sh -c 'if [ -e $OUT ]; then mv $OUT $TRASH/\$(date +%s%N); fi'"
settle() { rm -rf "$OUT" "$TRASH"; mkdir -p "$TRASH"; sync; sleep 35; }
settle
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
# A tree's repair against its lint, then against the floor of any tree
# repair: writing the same files and flushing them to disk once, as
# `repair DIR -o OUTDIR` does (cp, then syncfs).
tree() {
  printf '%s: %s (%s MB, %s files)\n' "$1" "$2" "$(du -sm "$2" | cut -f1)" "$(find "$2" -type f | wc -l)"
  python3 "$HERE/pairs.py" --runs "$RUNS" --before "$BEFORE" \
    --a "chatfsck repair" "$BIN repair $2 -o $OUT" \
    --b "chatfsck lint" "$BIN lint --format json $2"
  settle
  python3 "$HERE/pairs.py" --runs "$RUNS" --before "$BEFORE" \
    --a "chatfsck repair" "$BIN repair $2 -o $OUT" \
    --b "cp -r + sync -f" "sh -c 'cp -r $2 $OUT && sync -f $OUT'"
  settle
}
tree "OpenAI JSONL corpus" "$CORPUS"
tree "Claude Code tree" "$CLAUDE"
printf 'store: %s (%s MB)\n' "$DB" "$(du -m "$DB" | cut -f1)"
python3 "$HERE/pairs.py" --runs "$RUNS" --warm "$DB" --before "$BEFORE" \
  --a "chatfsck repair" "$BIN repair $DB -o $OUT" \
  --b "chatfsck lint" "$BIN lint --format json $DB"
rm -rf "$OUT" "$TRASH"
