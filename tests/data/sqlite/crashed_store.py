#!/usr/bin/env python3
"""A dispatch chunk store caught by a crash in the middle of a transaction.

    crashed_store.py DIR NAME CONVS TURNS CACHE EVERY SYNC MAIN

Writes DIR/NAME (CONVS conversations of TURNS chunks, rollback-journal
mode) and DIR/NAME-journal: the state a crash leaves while a transaction
rewrites every EVERY-th row to 'torn', with `PRAGMA cache_size = CACHE`
and `PRAGMA synchronous = SYNC`. MAIN is `crash` (the main file as the
crash left it: pages a small cache spilled are torn) or `before` (the
main file as it was before the transaction: a crash after the journal
was synced and before any page reached the main file).

Run in a process of its own: SQLite spills a cache when the pages of
every connection of the process fill their sum (the bundled library's
page caches share one pool), so in a test binary whose other tests hold
connections, the spill would depend on them.
"""
import os
import shutil
import sqlite3
import sys
import tempfile

out, name, convs, turns, cache, every, sync, main = sys.argv[1:]
convs, turns, cache, every = int(convs), int(turns), int(cache), int(every)
assert main in ("crash", "before")
with tempfile.TemporaryDirectory() as work:
    src = os.path.join(work, "src.db")
    conn = sqlite3.connect(src, isolation_level=None)
    conn.execute(
        "CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, "
        "value TEXT NOT NULL, PRIMARY KEY (namespace, key))"
    )
    text = "words of a long enough chunk " * 8
    conn.execute("BEGIN")
    for c in range(convs):
        for seq in range(1, turns + 1):
            role = "user" if seq % 2 == 1 else "assistant"
            value = (
                '{"chunk":{"type":"text","text":"%s%d"},"role":"%s","msgIdx":%d,"chunkIdx":0}'
                % (text, seq, role, seq - 1)
            )
            conn.execute(
                "INSERT INTO kv VALUES ('conversation-store', ?, ?)",
                ("conv:%08x:chunk:%010d" % (c, seq), value),
            )
    conn.execute("COMMIT")
    conn.execute("PRAGMA cache_size = %d" % cache)
    conn.execute("PRAGMA synchronous = %s" % sync)
    conn.execute("BEGIN")
    conn.execute("UPDATE kv SET value = 'torn' WHERE rowid %% %d = 0" % every)
    db = os.path.join(out, name)
    shutil.copyfile(src, db)
    shutil.copyfile(src + "-journal", db + "-journal")
    conn.execute("ROLLBACK")
    conn.close()
    if main == "before":
        shutil.copyfile(src, db)
