#!/usr/bin/env bash
# The engines' adapters (issue 38): each engine's lint of a generated
# conversation dataset against the CLI's on the same rows, per core and on
# both cores, in one run:
#   - `chatfsck lint --format json FILE` (the release binary);
#   - PySpark (chatfsck.spark.lint: mapInArrow), local[1] and local[2];
#   - Ray Data (chatfsck.ray.lint: map_batches), num_cpus 1 and 2;
#   - Hugging Face datasets (chatfsck.datasets.lint: map), 1 and 2 processes.
# "Per core" pins the whole run to CPU 0 (`taskset -c 0`: the CLI's reader
# threads, Spark's JVM and Python workers, Ray's daemons and workers all
# share it); "2 cores" to CPUs 0-1. An engine's time is its job's, the
# session already up (bench/engines.py), reading the Parquet file
# included; the CLI's is the whole command. Best of RUNS (default 3), on
# the JSON-text and the nested Parquet file. Per-core throughput is rows
# per CPU second: the CPU time of every process of the run (the CLI's
# threads; the engine's JVM, daemons and workers), which a busy machine
# disturbs far less than wall time; "x CLI" is the engine's rows per CPU
# second over the CLI's at the same cores. worker_MiB: the largest peak
# RSS of the engine's Python workers (where the adapter holds a batch).
#
# The Python side is the venv of the Python package's tests
# (target/tools/python-pkg, with the engines: scripts/test-all
# --install-only), or ENGINES_VENV; the extension module is built into it
# in release (`maturin develop --release`; tests/python.rs builds it again
# in debug). Java must be on PATH for Spark.
#   bench/engines.sh [--rows N] [--filler BYTES] [--runs N] [--engines LIST] [--cores 1,2]
set -euo pipefail
ROWS=200000
FILLER=180
RUNS=3
ENGINES=spark,ray,datasets
CORES=1,2
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --filler) FILLER="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --engines) ENGINES="$2"; shift 2 ;;
    --cores) CORES="$2"; shift 2 ;;
    *) echo "usage: bench/engines.sh [--rows N] [--filler BYTES] [--runs N] [--engines LIST] [--cores 1,2]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
VENV="${ENGINES_VENV:-$ROOT/target/tools/python-pkg}"
[ -x "$VENV/bin/python" ] || { echo "no venv at $VENV (scripts/test-all --install-only makes it)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "two cores are needed" >&2; exit 2; }
(cd "$ROOT" && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" "$VENV/bin/maturin" develop --release --locked --quiet \
  --manifest-path python/Cargo.toml >/dev/null 2>&1)
DIR="$BENCH_DIR/engines-$ROWS-$FILLER"
mkdir -p "$DIR"
for f in gen.parquet gen.nested.parquet; do
  [ -s "$DIR/$f" ] || (cd "$ROOT" && cargo run -q --release --example gen_dataset -- "$DIR/$f" "$ROWS" 38 "$FILLER")
done
# The CLI on CPUS, RUNS times: the best wall-clock seconds and the least
# CPU seconds (user + system, every thread).
cli() { # cli CPUS FILE
  local w="" c="" code out
  for _ in $(seq "$RUNS"); do
    out=$(mktemp)
    # (GNU time writes "Command exited with non-zero status 1" first.)
    code=0; taskset -c "$1" /usr/bin/time -f '%e %U %S' -o "$out" "$BIN" lint --format json "$2" >/dev/null 2>&1 || code=$?
    [ "$code" -le 1 ] || { echo "chatfsck exited $code" >&2; exit 2; }
    read -r w c < <(awk -v w="$w" -v c="$c" '{ cpu = $2 + $3
      if (w == "" || $1 < w) w = $1; if (c == "" || cpu < c) c = cpu; printf "%.3f %.3f\n", w, c }' <(tail -1 "$out"))
    rm -f "$out"
  done
  echo "$w $c"
}
rate() { awk -v n="$ROWS" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
echo "rows $ROWS, filler $FILLER, runs $RUNS, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
line() { printf '%-20s %-9s %5s %8s %8s %12s %8s %9s %10s\n' "$@"; }
line file engine cores wall_s cpu_s rows/cpu_s "x CLI" findings worker_MiB
for f in gen.parquet gen.nested.parquet; do
  file="$DIR/$f"
  want=$("$BIN" lint --format json "$file" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["findings"]))' || true)
  declare -A base=()
  for cores in ${CORES//,/ }; do
    cpus=$([ "$cores" = 1 ] && echo 0 || echo 0,1)
    read -r w c < <(cli "$cpus" "$file")
    base[$cores]=$c
    line "$f" cli "$cores" "$w" "$c" "$(rate "$c")" 1.00 "$want"
  done
  for engine in ${ENGINES//,/ }; do
    for cores in ${CORES//,/ }; do
      cpus=$([ "$cores" = 1 ] && echo 0 || echo 0,1)
      read -r _ _ w c n m < <(cd "$DIR" && taskset -c "$cpus" "$VENV/bin/python" "$HERE/engines.py" "$engine" "$cores" "$file" "$RUNS" 2>/dev/null | tail -1)
      [ "$n" = "$want" ] || { echo "$engine on $cores cores found $n findings, the CLI $want" >&2; exit 2; }
      line "$f" "$engine" "$cores" "$w" "$c" "$(rate "$c")" \
        "$(awk -v a="${base[$cores]}" -v b="$c" 'BEGIN { printf "%.2f", a / b }')" "$n" "$m"
    done
  done
done
