#!/usr/bin/env python3
"""Generate gbrain's subagent tables for the message-table benchmark.

Writes DB (default $BENCH_DIR/gbrain/gbrain.db) in the schema of
fixtures/gbrain/gbrain.sql (its CREATE statements) with `--rows` rows of
`subagent_messages` (default 1,000,000, about 760 MB) in jobs of 4-24
messages: a user task, then rounds of an assistant turn calling one or two
tools, the user message carrying their results, and a final answer; one
`subagent_tool_executions` row per call. Every 100th job lost the message
carrying its last round's results (seed 003: a `message_idx` gap, the calls
left without results, their executions complete). Deterministic for a seed.
"""
import argparse
import json
import os
import random

from genlib import fresh_db, schema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "fixtures", "gbrain", "gbrain.sql")

WORDS = ("review pages touched in the last day and write a synthesis note linking related ideas the vector "
         "index rebuild and the embedding cache notes describe the same stall").split()


def js(v):
    return json.dumps(v, separators=(",", ":"))


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_DIR", "/tmp/chatfsck-bench"), "gbrain", "gbrain.db"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    con = fresh_db(a.out, schema(SCHEMA, "CREATE TABLE subagent"))
    rows = jobs = gaps = calls = 0
    job = 1000
    while rows < a.rows:
        job += 1
        jobs += 1
        rounds = rng.randint(1, 11)
        broken = jobs % 100 == 0
        gaps += broken
        msgs, execs = [], []
        msgs.append([{"type": "text", "text": text(rng, rng.randint(10, 40))}])
        for r in range(rounds):
            uses = []
            blocks = [{"type": "text", "text": text(rng, rng.randint(5, 30))}]
            for _ in range(rng.choice((1, 1, 1, 2))):
                calls += 1
                uid = f"toolu_{calls:024x}"
                inp = {"slug": f"notes/{rng.choice(WORDS)}-{rng.randint(1, 999)}"}
                blocks.append({"type": "tool_use", "id": uid, "name": "brain_get_page", "input": inp})
                uses.append((uid, inp))
            msgs.append(blocks)
            idx = len(msgs) - 1
            results = []
            for ordinal, (uid, inp) in enumerate(uses):
                out = text(rng, rng.randint(20, 90))
                execs.append((job, idx, uid, "brain_get_page", js(inp), "complete", js({"content": out}), None, ordinal))
                results.append({"type": "tool_result", "tool_use_id": uid, "content": out})
            if broken and r == rounds - 1:
                msgs.append(None)  # never persisted: the index is skipped
            else:
                msgs.append(results)
        msgs.append([{"type": "text", "text": text(rng, rng.randint(20, 60))}])
        batch = []
        for idx, blocks in enumerate(msgs):
            if blocks is None:
                continue
            role = "assistant" if any(b["type"] == "tool_use" for b in blocks) or idx == len(msgs) - 1 else "user"
            batch.append((job, idx, role, js(blocks)))
        con.executemany("INSERT INTO subagent_messages (job_id, message_idx, role, content_blocks, model) "
                        "VALUES (?, ?, ?, ?, 'qwen/qwen3.6-35b')", batch)
        con.executemany("INSERT INTO subagent_tool_executions (job_id, message_idx, tool_use_id, tool_name, input, "
                        "status, output, error, ordinal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", execs)
        rows += len(batch)
    con.commit()
    con.close()
    print(f"{a.out}: {rows} messages in {jobs} jobs ({gaps} with a lost message), {calls} executions, "
          f"{os.path.getsize(a.out) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
