# Sourced by the bench scripts: where things are, and the release binary.
# HERE (bench/), ROOT (the repository), BENCH_DIR (generated data, kept
# between runs), BIN (CHATFSCK_BIN, or target/release/chatfsck, built when
# missing).
HERE="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
ROOT="$(dirname "$HERE")"
BENCH_DIR="${BENCH_DIR:-/tmp/chatfsck-bench}"
BIN="${CHATFSCK_BIN:-$ROOT/target/release/chatfsck}"
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release)

# The baselines of the SQLite stores read with the sqlite3 shell.
need_sqlite3() {
  command -v sqlite3 >/dev/null || { echo "sqlite3 is needed for the baseline" >&2; exit 2; }
}

# A store benchmark's timing: the store's size and the load, then
# `chatfsck lint --format json DB` against the sqlite3 command BASELINE,
# pair by pair, RUNS pairs.
#   time_store DB BASELINE
time_store() {
  printf 'store: %s (%s MB), load average %s\n' "$1" "$(du -m "$1" | cut -f1)" "$(cut -d' ' -f1-3 /proc/loadavg)"
  python3 "$HERE/pairs.py" --runs "$RUNS" --warm "$1" \
    --a "chatfsck lint" "$BIN lint --format json $1" \
    --b "sqlite3 scan" "$2"
}

# Lint DB once more into the report OUT, and stop unless chatfsck exits
# with CODE (1 when the store holds errors, 0 when only warnings).
#   lint_into DB OUT CODE
lint_into() {
  local code
  set +e; "$BIN" lint --format json "$1" > "$2"; code=$?; set -e
  [ "$code" = "$3" ] || { echo "chatfsck exited $code, expected $3" >&2; exit 2; }
}
