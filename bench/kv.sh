#!/usr/bin/env bash
# Chunk-store benchmark: `chatfsck lint` over dispatch's SQLite store with a
# million chunks (~720 MB), against `sqlite3 DB "select key, value from kv"`
# measured in the same run. Target: <= 1.5x sqlite3, peak RSS < 100 MiB,
# and every conversation generated with a msgIdx collision reported.
# `--turns 2-12` generates the many-short shape instead (conversations of
# 2-12 turns; `--chunks 920000 --turns 2-12` is about 20,000 of them).
# `--wal` reads a copy of the store in WAL mode, as dispatch leaves it
# (checkpointed on close: the `-wal` file is gone), and the script prints
# the bytes chatfsck wrote to files (temporary copies): zero is the target.
# `--wal-frames` reads one whose `-wal` holds frames the main file lacks
# (a sixteenth of the conversations written again under new ids after the
# switch, never checkpointed) and no `-shm` (an app's files copied without
# it): the baseline reads it as chatfsck does (`vfs=unix-none`, the WAL
# index in memory), and the script fails if any run changed either file.
# `--hot-journal` reads one left by a crash in the middle of a transaction
# (rollback mode, `synchronous=OFF`, a sixteenth of the conversations being
# rewritten, nothing yet written to the main file), beside its hot
# `-journal`: the baseline reads the main file alone (`immutable=1`; a
# read-only open refuses a hot journal), and the script fails if any run
# changed either file.
#   bench/kv.sh [--chunks N] [--turns LO-HI] [--wal | --wal-frames | --hot-journal] [--runs N]
set -euo pipefail
CHUNKS=1000000
RUNS=3
TURNS=""
WAL=""
while [ $# -gt 0 ]; do
  case "$1" in
    --chunks) CHUNKS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --turns) TURNS="$2"; shift 2 ;;
    --wal) WAL=1; shift ;;
    --wal-frames) WAL=frames; shift ;;
    --hot-journal) WAL=hot; shift ;;
    *) echo "usage: bench/kv.sh [--chunks N] [--turns LO-HI] [--wal | --wal-frames | --hot-journal] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
if [ -n "$TURNS" ]; then
  DB="$BENCH_DIR/kv/dispatch-$CHUNKS-turns-$TURNS.db"
  [ -f "$DB" ] || python3 "$HERE/gen_kv.py" --chunks "$CHUNKS" --turns "$TURNS" --out "$DB"
else
  DB="$BENCH_DIR/kv/dispatch-$CHUNKS.db"
  [ -f "$DB" ] || python3 "$HERE/gen_kv.py" --chunks "$CHUNKS" --out "$DB"
fi
need_sqlite3
# How the baseline and the checks open the store: the sqlite3 shell's
# own open, or, for a -wal with frames and no -shm, read-only with the WAL
# index in memory (a plain open would create the -shm, or checkpoint the
# frames into the main file and delete the -wal).
SQL_DB="$DB"
SQL_PRE=()
if [ "$WAL" = 1 ]; then
  ROLLBACK="$DB"
  DB="${ROLLBACK%.db}-wal.db"
  if [ ! -f "$DB" ]; then
    cp "$ROLLBACK" "$DB.tmp"
    sqlite3 "$DB.tmp" 'PRAGMA journal_mode=WAL;' > /dev/null
    mv "$DB.tmp" "$DB"
  fi
  SQL_DB="$DB"
elif [ "$WAL" = frames ]; then
  ROLLBACK="$DB"
  DB="${ROLLBACK%.db}-walframes.db"
  if [ ! -f "$DB" ] || [ ! -f "$DB-wal" ]; then
    rm -f "$DB" "$DB-wal" "$DB-shm" "$DB.tmp" "$DB.tmp-wal" "$DB.tmp-shm"
    cp "$ROLLBACK" "$DB.tmp"
    sqlite3 "$DB.tmp" 'PRAGMA journal_mode=WAL;' > /dev/null
    sqlite3 "$DB.tmp" '.dbconfig no_ckpt_on_close on' 'PRAGMA wal_autocheckpoint=0;' \
      "INSERT INTO kv SELECT namespace, 'conv:f' || substr(key, 6), value FROM kv
         WHERE namespace = 'conversation-store' AND substr(key, 6, 1) = 'a';" > /dev/null
    rm -f "$DB.tmp-shm"
    mv "$DB.tmp-wal" "$DB-wal"
    mv "$DB.tmp" "$DB"
  fi
  [ ! -e "$DB-shm" ] || { echo "$DB-shm exists: remove it (and the store, to generate it again)" >&2; exit 2; }
  SQL_DB="file:$DB?mode=ro&vfs=unix-none"
  SQL_PRE=('.dbconfig no_ckpt_on_close on' 'PRAGMA locking_mode=EXCLUSIVE;')
elif [ "$WAL" = hot ]; then
  ROLLBACK="$DB"
  DB="${ROLLBACK%.db}-hot.db"
  if [ ! -f "$DB" ] || [ ! -f "$DB-journal" ]; then
    rm -f "$DB" "$DB-journal" "$DB.tmp" "$DB.tmp-journal"
    cp "$ROLLBACK" "$DB.tmp"
    # The crash: the files copied while the transaction is open (its
    # pages in a cache large enough to hold them all), then rolled back.
    python3 - "$DB.tmp" "$DB" <<'PY'
import shutil, sqlite3, sys
tmp, db = sys.argv[1:]
c = sqlite3.connect(tmp, isolation_level=None)
c.execute("PRAGMA synchronous = OFF")
c.execute("PRAGMA cache_size = -2000000")
c.execute("BEGIN")
c.execute("UPDATE kv SET value = 'torn' WHERE namespace = 'conversation-store' AND substr(key, 6, 1) = 'a'")
shutil.copyfile(tmp, db)
shutil.copyfile(tmp + "-journal", db + "-journal")
c.execute("ROLLBACK")
c.close()
PY
    rm -f "$DB.tmp"
  fi
  SQL_DB="file:$DB?immutable=1"
fi
sql() { sqlite3 "$SQL_DB" "${SQL_PRE[@]}" "$@"; }
sums() { cat "$DB"* | cksum; ls "$DB"*; }
before=$(sums)
best() { sort -n | head -1; }
# Every timed run starts from a warm page cache: some machines (VMs among
# them) reclaim cached file pages within seconds, and a run that meets
# evicted pages measures the disk, not the program.
time_of() { local s e; cat "$DB" > /dev/null; s=$(date +%s.%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s.%N); echo "$e - $s" | bc; }
base=$(for _ in $(seq "$RUNS"); do time_of sql "select key, value from kv"; done | best)
# A reference, not the target: the one ordered pass lint must make (a
# conversation's chunks are contiguous only in key order), read by sqlite3
# on one thread. It walks the primary-key index and looks each row up.
ordered=$(for _ in $(seq "$RUNS"); do time_of sql "select key, value from kv where namespace = 'conversation-store' order by namespace, key"; done | best)
ours=$(for _ in $(seq "$RUNS"); do time_of "$BIN" lint --format json "$DB"; done | best)
# The same run pinned to one core: its CPU time, and how far the reader
# threads scale on this machine.
one=""
if command -v taskset >/dev/null; then
  one=$(for _ in $(seq "$RUNS"); do time_of taskset -c 0 "$BIN" lint --format json "$DB"; done | best)
fi
# Peak RSS, and the 512-byte blocks written to files (the kernel's count:
# a temporary copy of the store would show here; the report goes to a pipe).
read -r rss blocks < <( { /usr/bin/time -f '%M %O' "$BIN" lint --format json "$DB" 2>&1 >/dev/null || true; } | tail -1)
set +e; "$BIN" lint --format json "$DB" > /tmp/chatfsck-kv-out.json; code=$?; set -e
[ "$code" = 1 ] || { echo "chatfsck exited $code, expected 1 (findings)" >&2; exit 2; }
read -r convs collisions expected < <(sql "select key, value from kv where key glob 'conv:*:chunk:0000000002'" \
  | python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
found = {f["conversation"] for f in doc["findings"] if f["rule"] == "msgidx-collision"}
broken = set()
for line in sys.stdin:
    if not line.startswith("conv:"):
        continue
    key, value = line.rstrip("\n").split("|", 1)
    if json.loads(value)["msgIdx"] == 0:
        broken.add(key.split(":")[1])
print(doc["summary"]["conversations"], len(found & broken), len(broken))
' /tmp/chatfsck-kv-out.json)
size=$(du -m "$DB" | cut -f1)
printf 'store: %s (%s MB, %s conversations)\n' "$DB" "$size" "$convs"
printf '  sqlite3 select key, value   best %6.3f s\n' "$base"
printf '  sqlite3 same, in key order  best %6.3f s (%.2fx the baseline; lint must read in this order)\n' "$ordered" "$(echo "$ordered / $base" | bc -l)"
printf '  chatfsck lint --format json best %6.3f s\n' "$ours"
printf '  ratio chatfsck / sqlite3    %6.2f   (target <= 1.5)\n' "$(echo "$ours / $base" | bc -l)"
[ -n "$one" ] && printf '  chatfsck on one core        %6.3f s (%.2fx slower than on %s cores)\n' "$one" "$(echo "$one / $ours" | bc -l)" "$(nproc)"
printf '  chatfsck peak RSS           %6.1f MiB (target < 100)\n' "$(echo "$rss / 1024" | bc -l)"
printf '  chatfsck wrote to files     %6.1f MiB (journal mode %s%s)\n' "$(echo "$blocks * 512 / 1048576" | bc -l)" "$(sql 'PRAGMA journal_mode;' | tail -1)" "$([ -e "$DB-wal" ] && echo ", -wal $(du -k "$DB-wal" | cut -f1) KiB" || echo ", no -wal")$([ -e "$DB-journal" ] && echo ", -journal $(du -k "$DB-journal" | cut -f1) KiB")"
printf '  collisions found            %s/%s\n' "$collisions" "$expected"
[ "$before" = "$(sums)" ] || { echo "the store changed while it was read" >&2; exit 2; }
[ "$collisions" = "$expected" ]
