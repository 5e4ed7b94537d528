#!/usr/bin/env python3
"""Generate an opencode database for the opencode benchmark.

Writes DB (default $BENCH_DIR/opencode/opencode-<sessions>.db) with the
schema opencode 1.18.33 creates (fixtures/opencode/schema-1.18.33.ddl) and
the message and part shapes of fixtures/opencode/build.py: `--sessions`
sessions (default 2,000) of 2-40 turns, each a user prompt, then rounds of
an assistant message (step-start, text, one to three tool parts whose
outputs are file reads and terminal output, step-finish) and a final
answer. Sessions progress side by side, as when several are open, so
their rows interleave. Every 50th session was killed while a command ran, if its last turn
called a tool: that tool part is `running`, with no output
(`orphan-tool-call`).
About 850 MB for 2,000 sessions. Deterministic for a seed.
"""
import importlib.util
import math
import os
import random
import sqlite3

import genlib

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "opencode")
spec = importlib.util.spec_from_file_location("opencode_fixture", os.path.join(FIX, "build.py"))
oc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oc)

WORDS = ("the order service returns a cached page when the upstream times out so the retry "
         "loop in checkout never sees the error and the test for refunds passes locally but "
         "fails in ci because the clock is mocked").split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def body(rng, n):
    return ["    if (order.status === \"%s\") { return retry(%d); } // %s" % (rng.choice(WORDS), i, words(rng, 5))
            for i in range(n)]


def session(rng, k, t):
    """(session id, title, slug, time, messages) as the fixture's builders
    give them, and whether it was killed mid-command."""
    sid = oc.desc_id("ses", t, "%014d" % k)
    killed = k % 50 == 49
    msgs = []
    turns = int(math.exp(rng.uniform(math.log(2), math.log(40))))
    for turn in range(turns):
        u = oc.ids("msg", t, 0)
        msgs.append(oc.user_msg(u, sid, t, words(rng, rng.randint(5, 40))))
        t += 1000
        for step in range(rng.randint(1, 4)):
            last_step = step == 3 or rng.random() < 0.3
            a = oc.ids("msg", t, 0)
            parts = [(oc.ids("prt", t, 1), oc.step_start()),
                     (oc.ids("prt", t, 2), {"type": "text", "text": words(rng, rng.randint(5, 60)),
                                            "time": {"start": t, "end": t + 5}})]
            if last_step:
                parts.append((oc.ids("prt", t, 3), oc.step_finish("stop")))
                msgs.append((a, sid, t, t + 900, oc.asst_info(u, t, t + 900, "stop"), parts))
                t += 1000
                break
            for c in range(rng.randint(1, 3)):
                call = "toolu_01%022x" % rng.getrandbits(88)
                if rng.random() < 0.6:
                    part = oc.read_done(call, "src/%s.ts" % rng.choice(WORDS), body(rng, rng.randint(5, 150)), t)
                else:
                    out = "\n".join(words(rng, 12) for _ in range(rng.randint(3, 80)))
                    part = {"type": "tool", "tool": "bash", "callID": call,
                            "state": {"status": "completed", "input": {"command": "npm test", "description": "Run tests"},
                                      "output": out, "metadata": {"output": out, "exit": 0}, "title": "npm test",
                                      "time": {"start": t, "end": t + 400}}}
                parts.append((oc.ids("prt", t, 3 + c), part))
            kill = killed and turn == turns - 1
            if kill:
                parts[-1] = (parts[-1][0], {"type": "tool", "tool": "bash", "callID": "toolu_01%022x" % rng.getrandbits(88),
                                            "state": {"status": "running", "input": {"command": "npm test"},
                                                      "title": "npm test", "time": {"start": t}}})
                msgs.append((a, sid, t, t + 900, oc.asst_info(u, t, None, None), parts))
                return (sid, words(rng, 4), "slug-%d" % k, msgs[0][2], msgs), True
            parts.append((oc.ids("prt", t, 9), oc.step_finish("tool-calls")))
            msgs.append((a, sid, t, t + 900, oc.asst_info(u, t, t + 900, "tool-calls"), parts))
            t += 1000
    return (sid, words(rng, 4), "slug-%d" % k, msgs[0][2], msgs), False


def main():
    a = genlib.args("sessions", 2000, 11, "opencode", "opencode-%d.db")
    rng = random.Random(a.seed)
    con = sqlite3.connect(a.tmp)
    with open(os.path.join(FIX, "schema-1.18.33.ddl"), encoding="utf-8") as f:
        con.executescript(f.read())
    con.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
    for i, m in enumerate(oc.MIGRATIONS):
        con.execute("INSERT INTO migration VALUES (?, ?)", (m, 1763000000000 + i))
    con.execute("INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES (?,?,?,?,?,?)",
                (oc.PROJECT, oc.CWD, "git", 1763000000000, 1763000000000, "[]"))
    # Sessions open side by side: each writes a few messages in turn.
    pending, live, killed = list(range(a.sessions)), [], 0
    while pending or live:
        while pending and len(live) < 6:
            k = pending.pop(0)
            (sid, title, slug, t, msgs), was_killed = session(rng, k, 1779268000000 + k * 3600000)
            killed += was_killed
            last = max(m[3] for m in msgs)
            con.execute("INSERT INTO session (id, project_id, slug, directory, path, title, version, time_created,"
                        " time_updated, agent, model) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        (sid, oc.PROJECT, slug, oc.CWD, "", title, "1.18.33", t, last, "build",
                         oc.cj({"id": oc.MODEL["modelID"], "providerID": oc.MODEL["providerID"]})))
            live.append([sid, msgs, 0])
        i = rng.randrange(len(live))
        sid, msgs, at = live[i]
        for mid, _, created, updated, info, parts in msgs[at:at + rng.randint(1, 4)]:
            con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, sid, created, updated, oc.cj(info)))
            for pid, part in parts:
                con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, sid, created, updated, oc.cj(part)))
            at += 1
        live[i][2] = at
        if at >= len(msgs):
            live.pop(i)
    mb = genlib.finish(con, a, "WAL")
    print("%s: %d sessions, %d killed mid-command, %d MB" % (a.out, a.sessions, killed, mb))


if __name__ == "__main__":
    main()
