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
