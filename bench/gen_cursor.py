#!/usr/bin/env python3
"""Generate a Cursor `state.vscdb` for the Cursor benchmark.

Writes DB (default $BENCH_DIR/cursor/state-<composers>.vscdb) in the layout
of fixtures/cursor/build.py: `cursorDiskKV` holding one `composerData:<id>`
document per chat and one `bubbleId:<id>:<bubble>` row per message (10-120
per chat, log-uniform: a user prompt, then rounds of assistant text, a
thinking block and tool bubbles whose results are file reads, greps and
terminal output), plus what bloats a real store besides the chats:
`checkpointId:` and `codeBlockDiff:` rows of file snapshots (about 40 % of
the bytes), which lint never reads. Bubbles of different chats are
interleaved as Cursor writes them, chats progressing side by side. Every
40th chat lost a bubble whose header its `fullConversationHeadersOnly`
still names (`dangling-bubble-header`). About 730 MB for 3,000 chats.
Deterministic for a seed.
"""
import json
import math
import os
import random
import sqlite3

import genlib

WORDS = ("the order service returns a cached page when the upstream times out so the retry "
         "loop in checkout never sees the error and the test for refunds passes locally but "
         "fails in ci because the clock is mocked").split()
CWD = "/home/dev/shop-api"
WS = "84c9a67ebe7054485d323a481a9cffeb"


def cj(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def code(rng, lines):
    out = []
    for i in range(lines):
        out.append("    if (order.status === \"%s\") { return retry(%d, \"%s\\n\"); }\t// %s"
                   % (rng.choice(WORDS), i, rng.choice(WORDS), words(rng, 4)))
    return "\n".join(out)


def uid(rng):
    return "%08x-%04x-4%03x-8%03x-%012x" % (rng.getrandbits(32), rng.getrandbits(16),
                                            rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))


def bubble(bid, typ, at, **extra):
    b = {"_v": 3, "type": typ, "bubbleId": bid, "createdAt": at,
         "tokenCount": {"inputTokens": 0, "outputTokens": 0}}
    b.update(extra)
    return b


def chat(rng, t):
    """The bubbles of one chat, in order."""
    n = int(math.exp(rng.uniform(math.log(10), math.log(120))))
    at = lambda k: "2026-05-%02dT%02d:%02d:%02d.000Z" % (1 + t % 28, k // 3600 % 24, k // 60 % 60, k % 60)
    out = [bubble(uid(rng), 1, at(0), text=words(rng, rng.randint(8, 60)))]
    k = 1
    while len(out) < n:
        k += 7
        out.append(bubble(uid(rng), 2, at(k), thinking={"text": words(rng, rng.randint(20, 120)),
                                                        "signature": "EpQBCkYIBxgCKkDp7Qm3"},
                          text=words(rng, rng.randint(10, 80)),
                          modelInfo={"modelName": "claude-4.5-sonnet"}))
        for _ in range(rng.choice((1, 1, 2, 3))):
            if len(out) >= n - 1:
                break
            name = rng.choice(("read_file_v2", "grep", "run_terminal_cmd"))
            params = {"targetFile": CWD + "/src/%s.ts" % rng.choice(WORDS)} if name == "read_file_v2" else \
                {"pattern": rng.choice(WORDS)} if name == "grep" else {"command": "npm test -- " + rng.choice(WORDS)}
            result = {"contents": code(rng, rng.randint(5, 150))} if name != "grep" else \
                {"matches": [CWD + "/src/%s.ts:%d: %s" % (rng.choice(WORDS), i, words(rng, 8))
                             for i in range(rng.randint(3, 60))]}
            out.append(bubble(uid(rng), 2, at(k + 1), toolFormerData={
                "tool": 40, "name": name, "toolCallId": "toolu_01" + "%022x" % rng.getrandbits(88),
                "status": "completed", "rawArgs": "", "params": cj(params), "result": cj(result)}))
        if len(out) < n:
            out.append(bubble(uid(rng), 1, at(k + 5), text=words(rng, rng.randint(5, 40))))
    return out


def main():
    a = genlib.args("composers", 3000, 7, "cursor", "state-%d.vscdb")
    rng = random.Random(a.seed)
    con = sqlite3.connect(a.tmp)
    con.executescript("""
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
        CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
        CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
    """)
    # Chats progress side by side: a window of open chats, each writing
    # its next few bubbles in turn.
    pending = list(range(a.composers))
    live = []
    broken = 0
    put = lambda k, v: con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (k, v))
    while pending or live:
        while pending and len(live) < 8:
            t = pending.pop(0)
            cid = uid(rng)
            live.append([t, cid, chat(rng, t), 0])
        i = rng.randrange(len(live))
        t, cid, bubbles, at = live[i]
        step = rng.randint(1, 6)
        for b in bubbles[at:at + step]:
            lost = t % 40 == 39 and b is bubbles[len(bubbles) // 2]
            if not lost:
                put("bubbleId:%s:%s" % (cid, b["bubbleId"]), cj(b))
            if rng.random() < 0.15:
                put("checkpointId:%s:%s" % (cid, uid(rng)),
                    cj({"files": [{"uri": CWD + "/src/%s.ts" % rng.choice(WORDS),
                                   "originalContent": code(rng, rng.randint(20, 200))}]}))
        live[i][3] = at + step
        if live[i][3] >= len(bubbles):
            headers = [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles]
            put("composerData:" + cid, cj({
                "_v": 17, "composerId": cid, "name": words(rng, 5), "createdAt": 1779268500000 + t,
                "lastUpdatedAt": 1779268560000 + t, "hasLoaded": True, "status": "completed",
                "unifiedMode": "agent", "isAgentic": True, "fullConversationHeadersOnly": headers,
                "conversationMap": {}, "text": "", "richText": "",
                "modelConfig": {"modelName": "claude-4.5-sonnet", "maxMode": False},
                "workspaceIdentifier": {"id": WS, "uri": {"fsPath": CWD, "scheme": "file"}}}))
            put("codeBlockDiff:%s:%s" % (cid, uid(rng)), cj({"diff": code(rng, rng.randint(10, 80))}))
            broken += t % 40 == 39
            live.pop(i)
    con.execute("INSERT INTO ItemTable VALUES ('composer.composerData', ?)", (cj({"allComposers": []}),))
    mb = genlib.finish(con, a, "DELETE")
    print("%s: %d chats, %d with a lost bubble, %d MB" % (a.out, a.composers, broken, mb))


if __name__ == "__main__":
    main()
