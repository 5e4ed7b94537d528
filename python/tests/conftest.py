"""What the tests share: the generated dataset tests/python.rs writes, its
truth table, and the CLI built beside it (their paths come in the
environment; a run without them is an error, never a skip)."""

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through tests/python.rs")
    return value


@pytest.fixture(scope="session")
def data():
    return Path(_env("CHATFSCK_PY_DATA"))


@pytest.fixture(scope="session")
def cli():
    """Run the built CLI; its exit code and JSON document."""
    binary = _env("CHATFSCK_BIN")

    def run(*args):
        p = subprocess.run([binary, *args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(scope="session")
def truth(data):
    """(row from 0, rule, id) of every damaged row of the truth table."""
    with open(data / "gen.truth.tsv", newline="") as f:
        return {(int(r["line"]) - 1, r["rule"], r["id"]) for r in csv.DictReader(f, delimiter="\t")}


def cli_rows(doc):
    """(row, rule, conversation) of every finding of a `lint --format json`."""
    return {(f["location"]["rowid"], f["rule"], f["conversation"]) for f in doc["findings"]}


def batch_rows(table):
    """(row, rule, conversation) of every finding of `lint_batch`'s result."""
    return set(zip(table["row"].to_pylist(), table["rule"].to_pylist(), table["conversation"].to_pylist()))


@pytest.fixture(scope="session")
def cli_findings(cli, data):
    """The CLI's findings on each Parquet form, by file name."""
    out = {}
    for name in ("gen.parquet", "gen.nested.parquet"):
        code, stdout, stderr = cli("lint", "--format", "json", str(data / name))
        assert code == 1, stderr
        out[name] = json.loads(stdout)
    return out


def engine_rows(table):
    """(row, rule, conversation) of every finding of an engine's findings
    (a pyarrow table, or a list of dicts)."""
    if isinstance(table, list):
        return {(f["row"], f["rule"], f["conversation"]) for f in table}
    return batch_rows(table)


def core_findings(table):
    """Every field of every finding of the core on the whole table, as a
    sorted list of tuples (row and message as plain ints): what an engine's
    findings must equal, evidence and all."""
    import pyarrow as pa

    import chatfsck

    return sorted_findings(pa.table(chatfsck.lint_batch(table)).to_pylist())


def sorted_findings(rows):
    fields = ("row", "conversation", "rule", "severity", "message", "summary", "ids",
              "fixable", "applicability", "notes", "evidence")
    return sorted(tuple(tuple(r[f]) if isinstance(r[f], list) else r[f] for f in fields) for r in rows)


@pytest.fixture(scope="session")
def numbered(data, tmp_path_factory):
    """The generated Parquet files with a `row` column (each row's index in
    the file), as an engine's user adds one before any shuffle; by name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = {}
    where = tmp_path_factory.mktemp("numbered")
    for name in ("gen.parquet", "gen.nested.parquet"):
        table = pq.read_table(data / name)
        table = table.append_column("row", pa.array(range(table.num_rows), pa.int64()))
        pq.write_table(table, where / name, row_group_size=1000)
        out[name] = where / name
    return out


@pytest.fixture(scope="session")
def message_rows(data):
    """The JSON-text dataset with a message a row: `conversation` (the
    row's id), `idx` (the message's place), `message` (its JSON text) and
    `row`; a row that does not parse is one message of its cut text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(data / "gen.parquet")
    cols = {"conversation": [], "idx": [], "message": [], "row": []}
    for row, (id, text) in enumerate(zip(table["id"].to_pylist(), table["messages"].to_pylist())):
        try:
            messages = [json.dumps(m, ensure_ascii=False) for m in json.loads(text)]
        except ValueError:
            messages = [text]
        for idx, m in enumerate(messages):
            for k, v in zip(cols, (id, idx, m, row)):
                cols[k].append(v)
    return pa.table(cols)


# Garbage the engines must turn into findings, never a worker's crash.
UNPARSEABLE = ['{"role": "user"', "null", "42", "[1, 2]", '{"a": 1}', "\u202e[", "", None]
