#!/usr/bin/env bash
# Trace benchmark: `chatfsck lint` over an Arize Phoenix database (about
# 102,000 spans, 820 MB by default; gen_phoenix.py) against sqlite3 reading
# the same rows (`select * from spans`), pair by pair in the same run, with
# peak RSS and bytes written to files (temporary copies, sort spills).
# Target: <= 2x sqlite3, memory bounded. Checks that every cut answer
# generated is reported (truncated-response).
#   bench/phoenix.sh [--sessions N] [--runs N]
set -euo pipefail
SESSIONS=5100
RUNS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --sessions) SESSIONS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "usage: bench/phoenix.sh [--sessions N] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
need_sqlite3
DB="$BENCH_DIR/phoenix/phoenix-$SESSIONS.db"
[ -f "$DB" ] || python3 "$HERE/gen_phoenix.py" --sessions "$SESSIONS" --out "$DB"
time_store "$DB" "sqlite3 $DB 'select * from spans'"
OUT="$BENCH_DIR/phoenix/out.json"
lint_into "$DB" "$OUT" 1
python3 - "$OUT" "$SESSIONS" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
cut = int(sys.argv[2]) // 40
found = {f["conversation"].split("/turn-")[0] for f in doc["findings"] if f["rule"] == "truncated-response"}
others = [f for f in doc["findings"] if f["rule"] != "truncated-response"]
print(f"  requests {doc['summary']['conversations']}, cut answers found {len(found)}/{cut}, other findings {len(others)}")
sys.exit(0 if len(found) == cut and not others else 1)
PY
