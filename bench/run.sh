#!/usr/bin/env bash
# chatfsck benchmark: throughput against `cat | wc -l` and `jq`, peak RSS, and
# whether every injected fault is found with no false positive.
# See bench/README.md. Usage: bench/run.sh [--build] [--files N] [--mb MB]
#                                          [--runs N] [--seed S] [--regen] [--strict]
set -uo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/chatfsck-bench}
FILES=${BENCH_FILES:-3000}
MB=${BENCH_MB:-300}
RUNS=${BENCH_RUNS:-3}
SEED=${BENCH_SEED:-42}
BIN=${CHATFSCK_BIN:-$ROOT/target/release/chatfsck}
BUILD=0 REGEN=() STRICT=0

usage() {
    sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
    cat <<EOF

  --build      run \`cargo build --release\` first (done anyway when the binary is missing)
  --files N    number of files in the corpus        (BENCH_FILES, default 3000)
  --mb MB      target corpus size in MB (10^6 B)    (BENCH_MB, default 300)
  --runs N     timed runs per command, best is kept (BENCH_RUNS, default 3)
  --seed S     generator seed                       (BENCH_SEED, default 42)
  --regen      regenerate the corpus even if it is up to date
  --strict     also exit non-zero when a performance target is missed
Corpus and outputs go to \${BENCH_DIR:-/tmp/chatfsck-bench}; CHATFSCK_BIN overrides the binary.
EOF
}

while (($#)); do
    case $1 in
        --build) BUILD=1 ;;
        --files) FILES=${2:?}; shift ;;
        --mb) MB=${2:?}; shift ;;
        --runs) RUNS=${2:?}; shift ;;
        --seed) SEED=${2:?}; shift ;;
        --regen) REGEN=(--force) ;;
        --strict) STRICT=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "run.sh: unknown argument \`$1\` (see --help)" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "run.sh: $*" >&2; exit 2; }
for tool in python3 jq find xargs wc awk; do
    command -v "$tool" >/dev/null || die "\`$tool\` is required"
done
[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) is required for peak RSS"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"

mkdir -p "$BENCH_DIR" || die "cannot create $BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
CORPUS=$BENCH_DIR/corpus
WORK=$BENCH_DIR/run
mkdir -p "$WORK"

# 1. Corpus (skipped when the stamp says it is up to date) --------------------
python3 "$HERE/gen_corpus.py" --out "$BENCH_DIR" --files "$FILES" --mb "$MB" --seed "$SEED" "${REGEN[@]}" ||
    die "corpus generation failed"

# 2. Binary ------------------------------------------------------------------
if ((BUILD)) || [[ ! -x $BIN ]]; then
    echo "building chatfsck (cargo build --release)" >&2
    (cd "$ROOT" && cargo build --release) || die "cargo build --release failed"
    [[ -x $BIN ]] || die "no binary at $BIN after the build"
fi

# 3. Measurements ---------------------------------------------------------------
read -r NFILES BYTES < <(find "$CORPUS" -name '*.jsonl' -printf '%s\n' | awk '{n++; s+=$1} END {print n+0, s+0}')
NFAULTS=$(wc -l <"$BENCH_DIR/manifest.tsv")

# jq reads its input files as one stream and stops at the first parse error,
# so a torn last line would hide every later file of the batch. Files that end
# with a newline go to jq in batches; the few torn ones go one jq each.
python3 - "$CORPUS" "$WORK" <<'EOF'
import os, sys
corpus, work = sys.argv[1:3]
whole, torn = [], []
for root, dirs, files in os.walk(corpus):
    dirs.sort()
    for fn in sorted(files):
        if fn.endswith(".jsonl"):
            p = os.path.join(root, fn)
            with open(p, "rb") as f:
                f.seek(-1, 2)
                (whole if f.read(1) == b"\n" else torn).append(p)
for name, lst in (("jq-whole.list", whole), ("jq-torn.list", torn)):
    with open(os.path.join(work, name), "wb") as f:
        f.write(b"".join(p.encode() + b"\0" for p in lst))
EOF

LOAD=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?")
echo "load average before measuring: $LOAD (other work on the machine skews the times)" >&2

run_cat() { find "$CORPUS" -name '*.jsonl' -print0 | xargs -0 cat | wc -l >"$WORK/wc.out"; }
run_jq() {
    xargs -0 -r jq -c . <"$WORK/jq-whole.list" >/dev/null 2>"$WORK/jq.err"
    local rc=$?
    # Torn files fail by design (their last line); the others must not.
    xargs -0 -r -n1 jq -c . <"$WORK/jq-torn.list" >/dev/null 2>"$WORK/jq-torn.err"
    ((rc == 0)) || head -n 5 "$WORK/jq.err" >&2
    return $rc
}
RSS_MAX=0
run_chatfsck() {
    /usr/bin/time -f %M -o "$WORK/time.out" "$BIN" lint --format json "$CORPUS" \
        >"$BENCH_DIR/out.json" 2>"$WORK/chatfsck.err"
    local rc=$?
    local rss
    rss=$(tail -n1 "$WORK/time.out")
    [[ $rss =~ ^[0-9]+$ ]] && ((rss > RSS_MAX)) && RSS_MAX=$rss
    [[ $rc == 1 ]] && return 0
    echo "chatfsck exited with $rc (expected 1: the corpus has $NFAULTS faults); stderr:" >&2
    head -n 20 "$WORK/chatfsck.err" >&2
    return 1
}

# best_of NAME FUNCTION: runs FUNCTION $RUNS times, sets BEST (seconds).
best_of() {
    local name=$1 fn=$2 i t0 t1 dt times=()
    BEST=""
    for ((i = 1; i <= RUNS; i++)); do
        t0=$EPOCHREALTIME
        "$fn" || die "$name failed (run $i)"
        t1=$EPOCHREALTIME
        dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
        times+=("$dt")
        if [[ -z $BEST ]] || awk -v a="$dt" -v b="$BEST" 'BEGIN {exit !(a < b)}'; then BEST=$dt; fi
    done
    printf '  %-30s best %8.3f s   (runs: %s)\n' "$name" "$BEST" "${times[*]}"
}

# Warm the page cache so that every command reads from memory.
find "$CORPUS" -name '*.jsonl' -print0 | xargs -0 cat >/dev/null

echo
echo "corpus: $(awk -v b="$BYTES" 'BEGIN {printf "%.1f", b / 1e6}') MB in $NFILES files ($NFAULTS with an injected fault), $CORPUS"
echo "timings (wall clock, best of $RUNS):"
best_of "cat | wc -l" run_cat; T_CAT=$BEST
echo "    ($(tr -d ' ' <"$WORK/wc.out") lines)"
best_of "jq -c ." run_jq; T_JQ=$BEST
best_of "chatfsck lint --format json" run_chatfsck; T_FSCK=$BEST

read -r MBPS R_CAT R_JQ RSS_MIB < <(awk -v b="$BYTES" -v c="$T_CAT" -v j="$T_JQ" -v f="$T_FSCK" -v r="$RSS_MAX" \
    'BEGIN {printf "%.1f %.2f %.1f %.1f\n", b / 1e6 / f, f / c, j / f, r / 1024}')
verdict() { if awk "BEGIN {exit !($1)}"; then echo ok; else echo MISSED; fi; }
MISSED_TARGETS=0
V1=$(verdict "$R_CAT <= 1.5"); [[ $V1 == ok ]] || MISSED_TARGETS=1
V2=$(verdict "$R_JQ >= 10"); [[ $V2 == ok ]] || MISSED_TARGETS=1
V3=$(verdict "$RSS_MIB < 100"); [[ $V3 == ok ]] || MISSED_TARGETS=1

echo
echo "results:"
printf '  %-34s %10s\n' "chatfsck throughput" "$MBPS MB/s"
printf '  %-34s %10s   target <= 1.5   %s\n' "chatfsck / cat|wc -l" "$R_CAT" "$V1"
printf '  %-34s %10s   target >= 10    %s\n' "jq / chatfsck" "$R_JQ" "$V2"
printf '  %-34s %10s   target < 100    %s\n' "chatfsck peak RSS (MiB)" "$RSS_MIB" "$V3"

cat >"$BENCH_DIR/results.json" <<EOF
{"files": $NFILES, "bytes": $BYTES, "faults": $NFAULTS, "runs": $RUNS, "load_before": "$LOAD",
 "seconds": {"cat_wc": $T_CAT, "jq": $T_JQ, "chatfsck": $T_FSCK},
 "chatfsck_mb_per_s": $MBPS, "ratio_chatfsck_cat": $R_CAT, "ratio_jq_chatfsck": $R_JQ,
 "peak_rss_mib": $RSS_MIB}
EOF

# 4. Correctness: every injected fault found, nothing in healthy files ---------
echo
echo "correctness ($BENCH_DIR/out.json against $BENCH_DIR/manifest.tsv):"
python3 "$HERE/check.py" "$BENCH_DIR/out.json" "$BENCH_DIR/manifest.tsv" "$CORPUS" | sed 's/^/  /'
CHECK=${PIPESTATUS[0]}

echo
if ((CHECK != 0)); then
    echo "FAIL: missed faults or false positives (see above)"
    exit 1
fi
if ((STRICT && MISSED_TARGETS)); then
    echo "FAIL: a performance target was missed (--strict)"
    exit 1
fi
echo "OK: all faults found, no false positives$( ((MISSED_TARGETS)) && echo '; some performance targets missed')"
