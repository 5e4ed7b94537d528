#!/usr/bin/env bash
# Build the fuzz targets, replay every regression input, then search each
# target for a bounded time or number of executions, from the committed
# corpus; record the run in fuzz/ledger.tsv.
#
#   fuzz/run.sh [--ci | --seconds N | --runs N] [--jobs N | --fork N]
#               [--timeout S] [--sanitizer address|none] [--seed N]
#               [--cap-kib K] [TARGET...]
#
# CI runs `fuzz/run.sh --ci`: every target replays its regression inputs,
# its seeds (fuzz/seed.py, from fixtures/) and its committed corpus
# (fuzz/corpus/TARGET), and stops; it does not search. A search is not
# repeatable, even from a fixed -seed: two runs of one build from seed 1
# part after a few hundred executions (coverage steers the search, and
# varies from process to process: hash tables are keyed at random per
# process), so a gate built on one fails by luck.
#
# Searches accumulate instead. Each starts from the committed corpus plus
# the seeds, and when it ends (its budget spent, a finding, or Ctrl-C) the
# script
#   - minimises what the search holds into fuzz/corpus/TARGET (libFuzzer's
#     -merge=1: the fewest, smallest inputs that keep its coverage), capped
#     at --cap-kib KiB (default 4096) by dropping the largest inputs, and
#   - appends a line to fuzz/ledger.tsv: date, commit, target, sanitizer,
#     executions, seconds, corpus inputs and bytes, findings.
# Commit both. `python3 fuzz/ledger.py` sums each target's executions since
# its last finding: the figure to report.
#
# On two cores, beside other work at the lowest priority (libFuzzer's fork
# mode: a process per job, the corpus merged between jobs):
#   nice -n 19 fuzz/run.sh --sanitizer none --fork 2 --timeout 60 \
#       --seconds 3600 repair_file
# --timeout: an input running longer is a hang (default 10 s); raise it
# when the run shares the machine, where a slow input waits for a core.
# --sanitizer none builds without AddressSanitizer (its own target
# directory, target/sanitizer-none): 3-7 times the executions per second.
# ASan checks the unsafe code (the bundled SQLite, SIMD scanners); the
# contract checks and panics are the same in both builds.
# A crash or contract violation stops the run with exit 1; libFuzzer
# writes the input to fuzz/artifacts/TARGET/: add it to
# fuzz/regressions/TARGET/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."

budget=()
ci=0
jobs=1
fork=0
timeout=10
sanitizer=address
seed=()
cap_kib=4096
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) ci=1; shift ;;
        --seconds) budget=(-max_total_time="$2"); shift 2 ;;
        --runs) budget=(-runs="$2"); shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --fork) fork="$2"; shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        --sanitizer) sanitizer="$2"; shift 2 ;;
        --seed) seed=(-seed="$2"); shift 2 ;;
        --cap-kib) cap_kib="$2"; shift 2 ;;
        -h|--help) sed -n 2,41p "$0"; exit 0 ;;
        -*) echo "fuzz/run.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(lint_file repair_file chunk_entry message_rows trace_messages)

# cargo-fuzz drives libFuzzer through rustc's -Zsanitizer and
# -Cinstrument-coverage flags: nightly flags, which the stable toolchain
# accepts with RUSTC_BOOTSTRAP=1.
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --version 0.13.2
fi
# Reports must not colour their output: the targets check that no control
# character reaches it.
export NO_COLOR=1

rm -rf fuzz/target/seeds
python3 fuzz/seed.py --out fuzz/target/seeds
cd fuzz
case "$sanitizer" in
    address) dir=target ;;
    none) dir=target/sanitizer-none ;;
    *) echo "fuzz/run.sh: --sanitizer is address or none" >&2; exit 2 ;;
esac
cargo fuzz build -O -s "$sanitizer" --target-dir "$dir"
# The targets run as built: `cargo fuzz run` would rebuild them first
# whenever a source changed since, in the middle of a long run.
bin="$dir/$(rustc -vV | sed -n 's/^host: //p')/release"
# A failing input, as a log shows it: the panic, and the input itself in
# base64 (a CI machine's artifacts/ is gone once it stops).
report_failure() {
    local t=$1 log=$2 status=$3
    tail -40 "$log" >&2
    grep -m3 -A2 -E "panicked at|^==[0-9]+==ERROR" "$log" >&2 || true
    for a in artifacts/"$t"/*; do
        [ -f "$a" ] || continue
        echo "== failing input $a ($(wc -c <"$a") bytes), in base64:" >&2
        base64 -w 0 "$a" >&2
        echo >&2
    done
    echo "fuzz/run.sh: $t failed (exit $status):" artifacts/"$t"/* >&2
}
# Replay inputs (no search): every one must pass.
replay() {
    local t=$1 what=$2 dir=$3 log="artifacts/$1.replay.log" status=0
    echo "== $t: replaying $(ls "$dir" | wc -l) $what"
    mkdir -p "artifacts/$t"
    "$bin/$t" -runs=0 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="artifacts/$t/" "$dir" >"$log" 2>&1 || status=$?
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | tail -1 || true
    if [ "$status" != 0 ] || compgen -G "artifacts/$t/*" >/dev/null; then
        report_failure "$t" "$log" "$status"
        exit 1
    fi
}
for t in "${targets[@]}"; do
    if [ -d "regressions/$t" ]; then
        replay "$t" "regression inputs" "regressions/$t"
    fi
done
if [ "$ci" = 1 ]; then
    for t in "${targets[@]}"; do
        replay "$t" "seed inputs" "target/seeds/$t"
        if [ -d "corpus/$t" ]; then
            replay "$t" "inputs of the committed corpus" "corpus/$t"
        fi
    done
    # The targets' own check of a report (tests/contract/scan.rs) is tested
    # in the root suite, which includes it: no build of its own here.
    exit 0
fi
parallel=()
# Parallel jobs write their output to fuzz-N.log files instead.
[ "$jobs" = 1 ] || parallel=(-jobs="$jobs" -workers="$jobs")
if [ "$fork" != 0 ]; then
    if [ "$jobs" != 1 ]; then
        echo "fuzz/run.sh: --jobs and --fork are two ways to run in parallel: give one" >&2
        exit 2
    fi
    parallel=(-fork="$fork")
    # Each job's inputs, corpus and log are files in libFuzzer's temporary
    # directory, written and removed a job at a time: keep them in memory.
    if [ -d /dev/shm ]; then export TMPDIR=/dev/shm; fi
fi
[ ${#budget[@]} != 0 ] || budget=(-max_total_time=45)
commit=$(git rev-parse --short=12 HEAD)
git diff --quiet HEAD -- ':(top,exclude)fuzz/corpus' ':(top,exclude)fuzz/ledger.tsv' || commit="$commit+changes"
# Minimise the search's corpus into the committed one, capped; append the
# run to the ledger. Runs when the search ends, whatever ended it.
record() {
    local t=$1 log=$2 secs=$3 work=$4 execs findings min
    # The largest count the run printed: a single process's final stats,
    # or in fork mode the parent's cumulative "#N:" lines (a job that
    # crashes prints its own stats, a count of that job alone).
    execs=$({
        sed -n 's/^stat::number_of_executed_units: *//p' "$log"
        grep -oE '^#[0-9]+' "$log" | tr -d '#'
        echo 0
    } | sort -n | tail -1)
    findings=$(find "artifacts/$t" -maxdepth 1 -type f | wc -l)
    min=target/min/$t
    rm -rf "$min"
    mkdir -p "$min"
    "$bin/$t" -merge=1 -timeout="$timeout" -rss_limit_mb=2048 "$min" "$work" \
        >"artifacts/$t.merge.log" 2>&1 || { tail -5 "artifacts/$t.merge.log" >&2; return 1; }
    # Over the cap, drop the largest inputs first (the merge already
    # prefers small ones).
    local total=0 f size
    while IFS=' ' read -r size f; do
        if [ $((total + size)) -gt $((cap_kib * 1024)) ]; then rm -f "$f"; else total=$((total + size)); fi
    done < <(find "$min" -type f -printf '%s %p\n' | sort -n)
    rm -rf "corpus/$t"
    mkdir -p corpus
    mv "$min" "corpus/$t"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$t" \
        "$sanitizer" "$execs" "$secs" "$(find "corpus/$t" -type f | wc -l)" "$total" "$findings" >>ledger.tsv
    echo "== $t: $execs executions in $secs s, $findings finding(s); corpus/$t: $(find "corpus/$t" -type f | wc -l) inputs, $total bytes; ledger.tsv updated"
}
for t in "${targets[@]}"; do
    echo "== $t: fuzzing (${budget[*]})"
    mkdir -p "artifacts/$t"
    # The search works on a scratch corpus: the committed one and the seeds.
    work=target/work/$t
    rm -rf "$work"
    mkdir -p "$work"
    if [ -d "corpus/$t" ]; then cp -a "corpus/$t/." "$work/"; fi
    if [ -d "target/seeds/$t" ]; then cp -a "target/seeds/$t/." "$work/"; fi
    # -max_len: histories are large, but damage is local; 16 KiB reaches
    # every parser state the fixtures show. -timeout: a hang is a bug.
    log="artifacts/$t.log"
    status=0
    start=$(date +%s)
    # Ctrl-C ends the search, not the script: the corpus and the ledger
    # still get the run.
    trap 'true' INT
    "$bin/$t" "$work" \
        "${budget[@]}" "${seed[@]}" -max_len=16384 -timeout="$timeout" -rss_limit_mb=2048 \
        "${parallel[@]}" -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || status=$?
    trap - INT
    grep -E '^(#[0-9]+[[:space:]]+DONE|INFO: fuzzed for|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
    record "$t" "$log" $(($(date +%s) - start)) "$work"
    # A failing input (crash, contract violation, timeout, leak) is written
    # under artifacts/; any other failure is the fuzzer's own (Ctrl-C: 130
    # or libFuzzer's own 72 on an interrupt is not one).
    if compgen -G "artifacts/$t/*" >/dev/null; then
        report_failure "$t" "$log" "$status"
        exit 1
    fi
    case "$status" in 0 | 72 | 130) ;; *) report_failure "$t" "$log" "$status"; exit 1 ;; esac
done
