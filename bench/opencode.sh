#!/usr/bin/env bash
# opencode benchmark: `chatfsck lint` over an opencode database (2,000
# sessions, about 850 MB by default; gen_opencode.py) against sqlite3
# reading the rows lint reads (`message` and `part`), pair by pair in the
# same run, with peak RSS and bytes written to files. Target: <= 2x
# sqlite3, memory bounded. Checks that every session killed mid-command
# (a tool part left `running`) is reported (orphan-tool-call), and
# nothing else.
#   bench/opencode.sh [--sessions N] [--runs N]
set -euo pipefail
SESSIONS=2000
RUNS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) SESSIONS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "usage: bench/opencode.sh [--sessions N] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
need_sqlite3
DB="$BENCH_DIR/opencode/opencode-$SESSIONS.db"
[ -f "$DB" ] || python3 "$HERE/gen_opencode.py" --sessions "$SESSIONS" --out "$DB"
time_store "$DB" "sqlite3 $DB 'select id, data from message; select id, data from part'"
OUT="$BENCH_DIR/opencode/out.json"
# Orphaned calls are warnings: exit 0.
lint_into "$DB" "$OUT" 0
python3 - "$OUT" "$DB" "$SESSIONS" <<'PY'
import json, sqlite3, sys
doc = json.load(open(sys.argv[1]))
con = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
killed = {s for (s,) in con.execute(
    "select session_id from part where json_extract(data, '$.state.status') = 'running'")}
found = {f["conversation"] for f in doc["findings"] if f["rule"] == "orphan-tool-call"}
others = [f for f in doc["findings"] if f["rule"] != "orphan-tool-call"]
print(f"  sessions {doc['summary']['conversations']}, killed sessions found {len(found & killed)}/{len(killed)}, "
      f"orphan-tool-call elsewhere {len(found - killed)}, other findings {len(others)}")
sys.exit(0 if found == killed and killed and not others and doc["summary"]["conversations"] == int(sys.argv[3]) else 1)
PY
