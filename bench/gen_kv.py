#!/usr/bin/env python3
"""Generate a dispatch conversation store for the chunk-store benchmark.

Writes DB (default $BENCH_DIR/kv/dispatch.db) with `--chunks` chunk rows
(default 1,000,000, about 720 MB) spread over conversations of 50-400
chunks (the few-long shape), or with `--turns 2-12` over conversations of
2-12 turns of six chunks each (the many-short shape: `--chunks 920000
--turns 2-12` gives about 20,000 conversations), in dispatch's exact layout (kv(namespace, key, value), namespace
`conversation-store`, keys `conv:<id>:chunk:<10 digits>`, values
`{"chunk":…,"role":…,"msgIdx":…,"chunkIdx":…}`) plus the per-conversation
`:seq` and `:cwd` keys. Deterministic for a given seed. Conversations reuse
msgIdx harmlessly except every 50th, which carries seed 000's collision.
"""
import argparse
import json
import os
import random
import sqlite3
import uuid

WORDS = ("the cache hit rate is computed from cachedTokens over inputTokens and shown in three places "
         "with different rounding so the percentages disagree; let me read the metrics package first").split()


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def conversation(rng, cid, n_chunks, broken):
    rows = []
    seq = 0

    def add(role, msg_idx, chunk_idx, chunk):
        nonlocal seq
        seq += 1
        value = json.dumps({"chunk": chunk, "role": role, "msgIdx": msg_idx, "chunkIdx": chunk_idx},
                           separators=(",", ":"))
        rows.append((f"conv:{cid}:chunk:{seq:010d}", value))

    call = 0
    while seq < n_chunks:
        # One turn appended at once: user 0, assistant 1 (thinking, text,
        # tool call), tool 2, assistant 3. Broken ones restart at 0 per message.
        idx = (lambda i: 0) if broken else (lambda i: i)
        add("user", idx(0), 0, {"type": "text", "text": text(rng, rng.randint(10, 60))})
        add("assistant", idx(1), 0, {"type": "thinking", "text": text(rng, rng.randint(40, 120))})
        add("assistant", idx(1), 1, {"type": "text", "text": text(rng, rng.randint(20, 80))})
        call += 1
        cid_call = f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}"
        add("assistant", idx(1), 2, {"type": "tool-call", "toolCallId": cid_call, "toolName": "run_shell",
                                     "input": {"command": f"grep -rn '{rng.choice(WORDS)}' packages/ | head -{call}"}})
        add("tool", idx(2), 0, {"type": "tool-result", "toolCallId": cid_call, "toolName": "run_shell",
                                "content": "\n".join(f"packages/m{i}/src/x.ts:{i}: {text(rng, 12)}" for i in range(rng.randint(3, 12))),
                                "isError": False})
        add("assistant", idx(3), 0, {"type": "text", "text": text(rng, rng.randint(20, 90))})
    rows.append((f"conv:{cid}:seq", str(seq)))
    rows.append((f"conv:{cid}:cwd", "/home/dev/dispatch"))
    return rows, seq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--conversation-chunks", type=int, default=0,
                    help="every conversation this many chunks (default: 50-400 each); "
                         "with --chunks, one conversation of N chunks measures memory per conversation")
    ap.add_argument("--turns", metavar="LO-HI",
                    help="conversations of LO-HI turns (six chunks each) instead of 50-400 chunks")
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_DIR", "/tmp/chatfsck-bench"), "kv", "dispatch.db"))
    a = ap.parse_args()
    turns = tuple(int(x) for x in a.turns.split("-")) if a.turns else None
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    if os.path.exists(a.out):
        os.remove(a.out)
    rng = random.Random(a.seed)
    con = sqlite3.connect(a.out)
    con.execute("CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (namespace, key))")
    total = 0
    n = 0
    broken = 0
    while total < a.chunks:
        cid = str(uuid.UUID(int=rng.getrandbits(128)))
        if a.conversation_chunks:
            wanted = a.conversation_chunks
        else:
            wanted = 6 * rng.randint(*turns) if turns else rng.randint(50, 400)
        size = min(wanted, a.chunks - total)
        is_broken = n % 50 == 0
        rows, seq = conversation(rng, cid, max(size, 6), is_broken)
        con.executemany("INSERT INTO kv VALUES ('conversation-store', ?, ?)", rows)
        total += seq
        n += 1
        broken += is_broken
    con.commit()
    con.close()
    print(f"{a.out}: {total} chunks in {n} conversations ({broken} with msgIdx collisions), "
          f"{os.path.getsize(a.out) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
