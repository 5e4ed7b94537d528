"""Shared by the bench generators: a new SQLite database with a fixture's schema."""

import os
import sqlite3


def schema(path, prefix):
    """The statements of the SQL file at `path` that start with `prefix`
    (each whole, however many lines it spans)."""
    stmts, cur = [], ""
    for line in open(path, encoding="utf-8"):
        if not cur and not line.startswith(prefix):
            continue
        cur += line
        if sqlite3.complete_statement(cur):
            stmts.append(cur)
            cur = ""
    return "".join(stmts)


def fresh_db(out, sql):
    """A new database at `out` (any old one removed) holding the schema `sql`."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    con = sqlite3.connect(out)
    con.executescript(sql)
    return con


def args(what, default, seed, kind, name):
    """The command line of a store generator: `--<what> N` (default
    `default`), `--seed`, `--out`; and the path written first, a new
    temporary file beside the output (`<out>.tmp`, renamed over it when
    the store is complete: a generator stopped halfway leaves no store
    the benchmark would take for whole). The output defaults to
    $BENCH_DIR/<kind>/<name % N>."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--" + what, type=int, default=default)
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--out")
    a = ap.parse_args()
    n = getattr(a, what)
    a.out = a.out or os.path.join(os.environ.get("BENCH_DIR", "/tmp/chatfsck-bench"), kind, name % n)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    a.tmp = a.out + ".tmp"
    if os.path.exists(a.tmp):
        os.remove(a.tmp)
    return a


def finish(con, a, journal_mode):
    """Commit the store written to `a.tmp`, leave it in `journal_mode`
    (its `-wal` checkpointed and gone when WAL), and rename it to `a.out`:
    its size in MB."""
    con.commit()
    con.execute("PRAGMA journal_mode = %s" % journal_mode)
    con.close()
    os.replace(a.tmp, a.out)
    return os.path.getsize(a.out) >> 20
