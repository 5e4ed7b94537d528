#!/usr/bin/env bash
# Cursor benchmark: `chatfsck lint` over a Cursor `state.vscdb` (3,000 chats
# and their bubbles among checkpoint and diff rows, about 850 MB by
# default; gen_cursor.py) against sqlite3 reading the rows lint reads (the
# `composerData:` and `bubbleId:` rows of `cursorDiskKV`), pair by pair in
# the same run, with peak RSS and bytes written to files. Target: <= 2x
# sqlite3, memory bounded. Checks that every lost bubble generated is
# reported (dangling-bubble-header), and nothing else.
#   bench/cursor.sh [--composers N] [--runs N]
set -euo pipefail
COMPOSERS=3000
RUNS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --composers) COMPOSERS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "usage: bench/cursor.sh [--composers N] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
need_sqlite3
DB="$BENCH_DIR/cursor/state-$COMPOSERS.vscdb"
[ -f "$DB" ] || python3 "$HERE/gen_cursor.py" --composers "$COMPOSERS" --out "$DB"
time_store "$DB" "sqlite3 $DB \"select key, value from cursorDiskKV where key glob 'composerData:*' or key glob 'bubbleId:*'\""
OUT="$BENCH_DIR/cursor/out.json"
lint_into "$DB" "$OUT" 1
python3 - "$OUT" "$COMPOSERS" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
lost = len(range(39, int(sys.argv[2]), 40))
found = {f["conversation"] for f in doc["findings"] if f["rule"] == "dangling-bubble-header"}
others = [f for f in doc["findings"] if f["rule"] != "dangling-bubble-header"]
print(f"  chats {doc['summary']['conversations']}, lost bubbles found {len(found)}/{lost}, other findings {len(others)}")
sys.exit(0 if len(found) == lost and not others and doc["summary"]["conversations"] == int(sys.argv[2]) else 1)
PY
