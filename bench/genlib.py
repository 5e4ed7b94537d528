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
