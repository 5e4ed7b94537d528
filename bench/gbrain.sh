#!/usr/bin/env bash
# Message-table benchmark: `chatfsck lint` over gbrain's subagent tables (a
# million message rows and their tool executions, about 760 MB by default;
# gen_gbrain.py) against sqlite3 reading the same rows (both tables, `select
# *`), pair by pair in the same run, with peak RSS and bytes written to
# files. Target: <= 2x sqlite3, memory bounded. Checks that every lost
# message generated is reported (index-gap).
#   bench/gbrain.sh [--rows N] [--runs N]
set -euo pipefail
ROWS=1000000
RUNS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "usage: bench/gbrain.sh [--rows N] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
need_sqlite3
DB="$BENCH_DIR/gbrain/gbrain-$ROWS.db"
[ -f "$DB" ] || python3 "$HERE/gen_gbrain.py" --rows "$ROWS" --out "$DB"
time_store "$DB" "sqlite3 $DB 'select * from subagent_messages; select * from subagent_tool_executions'"
OUT="$BENCH_DIR/gbrain/out.json"
lint_into "$DB" "$OUT" 1
python3 - "$OUT" "$DB" <<'PY'
import json, sqlite3, sys
doc = json.load(open(sys.argv[1]))
con = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
gaps = {str(j) for (j,) in con.execute(
    "select job_id from subagent_messages group by job_id having max(message_idx) + 1 != count(*)")}
found = {f["conversation"] for f in doc["findings"] if f["rule"] == "index-gap"}
print(f"  jobs {doc['summary']['conversations']}, lost messages found {len(found & gaps)}/{len(gaps)}, "
      f"index-gap elsewhere {len(found - gaps)}")
sys.exit(0 if found == gaps else 1)
PY
