#!/usr/bin/env bash
# Resume one session file in the real client, offline, and print the oracle's summary line.
#
#   tests/oracle/resume.sh SESSION.jsonl claude|codex [OUTDIR]
#
# CLIENTS_PREFIX  where install.sh put the pinned clients (default: target/tools/clients of this
#                 repo; install with tests/oracle/install.sh)
# OUTDIR          keeps request.json, validation.json, stdout/stderr, session-after.jsonl
#                 (default: a temporary directory, removed afterwards)
# Exit 0 when the run completed, whatever the client did; the verdict is in the JSON line
# (rc, valid, errors, units_sent/units_present). Non-zero when the oracle could not run.
set -euo pipefail
[ $# -ge 2 ] && [ $# -le 3 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
session=$1 kind=$2
case $kind in claude | codex) ;; *) echo "client must be claude or codex, not '$kind'" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${CLIENTS_PREFIX:-$repo/target/tools/clients}
case $prefix in /*) ;; *) prefix=$repo/$prefix ;; esac
if [ $# -eq 3 ]; then
    out=$3
else
    out=$(mktemp -d "${TMPDIR:-/tmp}/chatfsck-oracle.XXXXXX")
    trap 'rm -rf "$out"' EXIT
fi
# the oracle prints the summary line itself (also $out/summary.json); exit 3 = it could not run the client
CLIENTS_PREFIX=$prefix "$repo/tests/oracle/$kind-resume" "$session" "$out"
