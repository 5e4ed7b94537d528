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
