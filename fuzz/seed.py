#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the project's fixtures.

    python3 fuzz/seed.py [--out fuzz/target/seeds]

Writes one file per seed into OUT/<target>/ (OUT is not committed: it is
regenerated from fixtures/; fuzz/run.sh starts each search from it and
from the committed corpus, fuzz/corpus/):
- lint_file, repair_file: every .jsonl/.json history under fixtures/,
  prefixed with the byte that picks the name it is saved under (the order
  of NAMES in fuzz/src/lib.rs);
- chunk_entry: the values of dispatch's kv tables;
- message_rows: gbrain's subagent_messages, one conversation per job;
- trace_messages: Phoenix span attributes, dispatch trace bodies, and the
  attributes of the OTLP fixtures' spans.
"""
import argparse
import hashlib
import json
import os
import re
import sqlite3
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "fixtures")

# Must follow NAMES in fuzz/src/lib.rs.
NAMES = [
    "session.jsonl",
    "history.json",
    "session-2025-06-01T10-00-0b1c2d3e.json",
    "api_conversation_history.json",
    "ui_messages.json",
    "rollout-2025-06-01T10-00-00-0198a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b.jsonl",
    "events.jsonl",
    "0b1c2d3e-4f50-4617-a8b9-cadbecfd0e1f.jsonl",
    "traces.jsonl",
    "conversation.json",
]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$")

# Seeds larger than this are left out: the fuzzer mutates small inputs
# best, and its -max_len cuts the rest.
MAX = 64 * 1024


def pick(path):
    name = os.path.basename(path)
    if name.startswith("session-") and name.endswith(".json"):
        return 2
    if name == "api_conversation_history.json":
        return 3
    if name == "ui_messages.json":
        return 4
    if name.startswith("rollout") or "/codex/" in path:
        return 5
    if name == "events.jsonl":
        return 6
    if UUID.match(name) or "/claude-code/" in path:
        return 7
    if name.startswith("otlp"):
        return 8
    return 0 if name.endswith(".jsonl") else 1


def put(out, target, data):
    if len(data) > MAX:
        return 0
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    return 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "fuzz", "target", "seeds"))
    a = ap.parse_args()
    n = {}

    def add(target, data):
        n[target] = n.get(target, 0) + put(a.out, target, data)

    for dirpath, _, files in os.walk(FIX):
        for f in sorted(files):
            if not f.endswith((".jsonl", ".json")):
                continue
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                body = fh.read()
            seed = bytes([pick(path)]) + body
            add("lint_file", seed)
            add("repair_file", seed)

    for db in ("dispatch/seed-000.db",):
        con = sqlite3.connect(f"file:{os.path.join(FIX, db)}?immutable=1", uri=True)
        for (v,) in con.execute("select value from kv"):
            add("chunk_entry", v.encode() if isinstance(v, str) else bytes(v))

    con = sqlite3.connect(f"file:{os.path.join(FIX, 'gbrain/gbrain.db')}?immutable=1", uri=True)
    jobs = {}
    for job, idx, role, content in con.execute(
        "select job_id, message_idx, role, content_blocks from subagent_messages order by job_id, message_idx"
    ):
        jobs.setdefault(job, []).append(f"{idx}\x1f{role}\x1f{content}")
    for rows in jobs.values():
        for mode in (b"\x00", b"\x01"):
            add("message_rows", mode + "\x1e".join(rows).encode())

    con = sqlite3.connect(f"file:{os.path.join(FIX, 'traces/phoenix.db')}?immutable=1", uri=True)
    for (attrs,) in con.execute("select attributes from spans"):
        add("trace_messages", attrs.encode())
        try:
            v = json.loads(attrs)
        except ValueError:
            continue
        for key in ("input_messages", "output_messages"):
            m = v.get("llm", {}).get(key)
            if m is not None:
                add("trace_messages", json.dumps(m).encode())
    con = sqlite3.connect(f"file:{os.path.join(FIX, 'dispatch/traces.db')}?immutable=1", uri=True)
    for (body,) in con.execute("select body from bodies"):
        add("trace_messages", body.encode())
    for f in ("otlp-genai.jsonl", "otlp-openinference.jsonl"):
        with open(os.path.join(FIX, "traces", f), "rb") as fh:
            for line in fh:
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                for rs in doc.get("resourceSpans", []):
                    for ss in rs.get("scopeSpans", []):
                        for span in ss.get("spans", []):
                            for attr in span.get("attributes", []):
                                val = attr.get("value", {}).get("stringValue")
                                if val and val[:1] in "[{":
                                    add("trace_messages", val.encode())
    for t, k in sorted(n.items()):
        print(f"{t}: {k} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
