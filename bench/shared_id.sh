#!/usr/bin/env bash
# Repair time in the records that share one id (gen_shared_id.py): a Claude
# Code session of N records with one `uuid` (exact copies, and copies with
# texts of their own), N records each naming a lost parent, a Codex
# rollout of N calls with one `call_id`, and a Gemini CLI recording with a
# `$rewindTo` after each of N turns. For each kind and each N (10k, 20k,
# 40k, 80k, 160k by default), `chatfsck repair FILE -o OUT` and `chatfsck
# lint FILE` once each, with the repair's time per record: linear repair
# keeps that figure flat as N doubles (a quadratic one doubles it). The
# copy is removed after each run (untimed).
#   bench/shared_id.sh [--records "10000 20000 …"] [--kinds "claude-copies …"]
set -euo pipefail
RECORDS="10000 20000 40000 80000 160000"
KINDS="claude-copies claude-replaced claude-dangling codex-call-id gemini-rewind"
while [ $# -gt 0 ]; do
  case "$1" in
    --records) RECORDS="$2"; shift 2 ;;
    --kinds) KINDS="$2"; shift 2 ;;
    *) echo "usage: bench/shared_id.sh [--records \"N …\"] [--kinds \"KIND …\"]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/lib.sh"
DIR="$BENCH_DIR/shared-id"
mkdir -p "$DIR"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %8s %7s %9s %9s %14s\n' kind records MB "lint s" "repair s" "repair µs/rec"
# Seconds taken by a command (its output discarded; exit 1, findings, is
# what these files give).
secs() {
  local s e code=0
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1 || code=$?
  e=$(date +%s%N)
  [ "$code" -le 1 ] || { echo "$* exited $code" >&2; exit 2; }
  echo $(( (e - s) / 1000000 )) | awk '{ printf "%.3f", $1 / 1000 }'
}
for kind in $KINDS; do
  for n in $RECORDS; do
    # A Codex rollout is found by its content; its name is a rollout's.
    f="$DIR/$kind-$n/rollout-2026-01-01T10-00-00-5b0c6a3e-2d41-4f7a-9e8b-1c2d3e4f5a6b.jsonl"
    [ -f "$f" ] || python3 "$HERE/gen_shared_id.py" --kind "$kind" --records "$n" --out "$f"
    out="$DIR/$kind-$n/out.jsonl"
    rm -f "$out"
    lint=$(secs "$BIN" lint --format json "$f")
    repair=$(secs "$BIN" repair "$f" -o "$out")
    rm -f "$out"
    printf '%-16s %8d %7s %9s %9s %14s\n' "$kind" "$n" "$(du -m "$f" | cut -f1)" "$lint" "$repair" \
      "$(awk -v s="$repair" -v n="$n" 'BEGIN { printf "%.1f", s * 1e6 / n }')"
  done
done
