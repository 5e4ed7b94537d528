#!/usr/bin/env python3
"""What the fuzz searches add up to, per target, from fuzz/ledger.tsv.

    python3 fuzz/ledger.py [--markdown]

fuzz/run.sh appends a line per search: date, commit, target, sanitizer,
executions, seconds, corpus inputs, corpus bytes, findings. A search that
ended on a finding starts the count again: the figure for a target is the
sum of the executions of its searches after its last finding (its fix
came after that line), with the span of dates and commits they ran on.
Lines starting with # are comments; "-" is a figure the record lacks
(seconds, inputs, bytes; not executions or findings).
"""
import argparse
import collections
import os
import sys

FIELDS = ["date", "commit", "target", "sanitizer", "executions", "seconds",
          "inputs", "bytes", "findings"]
TARGETS = ["lint_file", "repair_file", "chunk_entry", "message_rows", "trace_messages"]


def rows(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cells = line.split("\t")
            if len(cells) != len(FIELDS):
                sys.exit(f"{path}:{n}: {len(cells)} fields, not {len(FIELDS)}")
            r = dict(zip(FIELDS, cells))
            for k in ("executions", "seconds", "findings"):
                r[k] = None if r[k] == "-" else int(r[k])
            if r["executions"] is None or r["findings"] is None:
                sys.exit(f"{path}:{n}: executions and findings must be numbers")
            yield r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--ledger", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "ledger.tsv"))
    a = ap.parse_args()
    by = collections.OrderedDict((t, []) for t in TARGETS)
    for r in rows(a.ledger):
        by.setdefault(r["target"], []).append(r)
    out = []
    for t, rs in by.items():
        last = max((i for i, r in enumerate(rs) if r["findings"]), default=-1)
        since = rs[last + 1:]
        execs = sum(r["executions"] for r in since)
        secs = sum(r["seconds"] or 0 for r in since)
        span = f"{since[0]['date'][:10]}..{since[-1]['date'][:10]}" if since else "-"
        commits = ",".join(dict.fromkeys(r["commit"] for r in since)) or "-"
        findings = sum(r["findings"] for r in rs)
        out.append((t, execs, secs, len(since), span, commits, findings))
    if a.markdown:
        print("| target | executions since its last finding | searches | seconds | dates | commits | findings in all |")
        print("|---|---:|---:|---:|---|---|---:|")
        for t, e, s, n, span, c, f in out:
            print(f"| `{t}` | {e:,} | {n} | {s:,} | {span} | {c} | {f} |")
    else:
        for t, e, s, n, span, c, f in out:
            print(f"{t:15} {e:>12,} executions since its last finding ({n} searches, {s:,} s, {span}; {c}); {f} findings in all")


if __name__ == "__main__":
    main()
