#!/usr/bin/env bash
# Conversation datasets (issue 38): `chatfsck lint` on a generated dataset
# of about 200 MB, in JSON Lines and in Parquet (a JSON-text `messages`
# column and a nested one), against the speed of merely reading the same
# bytes: `cat FILE | wc -l` and `jq -c .messages FILE`. The dataset is the
# tests' generator (tests/common/dataset.rs) at a larger size:
#   cargo run --example gen_dataset -- OUT ROWS SEED FILLER
# Each command runs RUNS times (default 3) on a warm page cache; the best
# wall-clock time is kept. The generated files stay in $BENCH_DIR/datasets.
#   bench/datasets.sh [--rows N] [--filler BYTES] [--runs N]
set -euo pipefail
ROWS=200000
FILLER=180
RUNS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --filler) FILLER="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) echo "usage: bench/datasets.sh [--rows N] [--filler BYTES] [--runs N]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "jq is needed for the baseline" >&2; exit 2; }
DIR="$BENCH_DIR/datasets"
mkdir -p "$DIR"
for f in gen.jsonl gen.parquet gen.nested.parquet; do
  [ -s "$DIR/$f" ] || (cd "$ROOT" && cargo run -q --example gen_dataset -- "$DIR/$f" "$ROWS" 38 "$FILLER")
done
# Best of RUNS wall-clock seconds of a shell command (exit 0 or 1 only).
best() {
  local b="" s e code t
  for _ in $(seq "$RUNS"); do
    s=$(date +%s%N)
    code=0; bash -c "$1" >/dev/null 2>&1 || code=$?
    e=$(date +%s%N)
    [ "$code" -le 1 ] || { echo "$1 exited $code" >&2; exit 2; }
    t=$(( (e - s) / 1000000 ))
    if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
  done
  awk -v t="$b" 'BEGIN { printf "%.2f", t / 1000 }'
}
echo "rows $ROWS, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
J="$DIR/gen.jsonl"
cat_s=$(best "cat '$J' | wc -l")
jq_s=$(best "jq -c .messages '$J'")
printf '%-36s %8s %8s %10s %10s\n' input MB seconds "x cat|wc" "x jq"
row() { # row NAME FILE SECONDS
  printf '%-36s %8s %8s %10s %10s\n' "$1" "$(du -m "$2" | cut -f1)" "$3" \
    "$(awk -v a="$3" -v b="$cat_s" 'BEGIN { printf "%.1f", a / b }')" \
    "$(awk -v a="$3" -v b="$jq_s" 'BEGIN { printf "%.2f", a / b }')"
}
row "cat | wc -l (JSON Lines)" "$J" "$cat_s"
row "jq -c .messages (JSON Lines)" "$J" "$jq_s"
row "chatfsck lint (JSON Lines)" "$J" "$(best "'$BIN' lint --format json '$J'")"
row "chatfsck lint (Parquet, JSON text)" "$DIR/gen.parquet" "$(best "'$BIN' lint --format json '$DIR/gen.parquet'")"
row "chatfsck lint (Parquet, nested)" "$DIR/gen.nested.parquet" "$(best "'$BIN' lint --format json '$DIR/gen.nested.parquet'")"
