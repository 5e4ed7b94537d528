"""repair_batch against the CLI's repair of the same rows (issue 38)."""

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq

import chatfsck


def _damaged(data):
    with open(data / "gen.truth.tsv", newline="") as f:
        return {int(r["line"]) - 1: r["pattern"] for r in csv.DictReader(f, delimiter="\t")}


def test_repair_keeps_every_row_and_equals_the_cli(data, cli, tmp_path):
    table = pq.read_table(data / "gen.parquet")
    rows, edits, left = (pa.table(b) for b in chatfsck.repair_batch(table))
    damaged = _damaged(data)
    assert rows.num_rows == table.num_rows
    assert rows["row"].to_pylist() == list(range(table.num_rows))
    before = table["messages"].to_pylist()
    after = rows["messages"].to_pylist()
    status = rows["status"].to_pylist()
    for k in range(table.num_rows):
        pattern = damaged.get(k)
        if pattern is None:
            assert (status[k], after[k]) == ("unchanged", before[k]), k
        elif pattern in ("unparseable", "duplicate-id"):
            assert (status[k], after[k]) == ("kept", before[k]), (k, pattern)
        else:
            assert status[k] == "repaired", (k, pattern)
    assert set(edits["row"].to_pylist()) == {k for k, s in enumerate(status) if s == "repaired"}
    assert set(left["rule"].to_pylist()) <= {"corrupt-record", "duplicate-tool-call-id"}
    # The CLI's repair of the same rows in JSON Lines.
    out = tmp_path / "out.jsonl"
    code, _, stderr = cli("repair", str(data / "gen.jsonl"), "-o", str(out))
    assert code == 0, stderr
    for k, line in enumerate(out.read_text().splitlines()):
        if status[k] == "repaired":
            assert json.loads(after[k]) == json.loads(line)["messages"], k


def test_a_second_repair_changes_nothing(data):
    table = pq.read_table(data / "gen.nested.parquet")
    rows, _, _ = (pa.table(b) for b in chatfsck.repair_batch(table))
    again = pa.table({"id": table["id"], "messages": rows["messages"]})
    rows2, edits2, _ = (pa.table(b) for b in chatfsck.repair_batch(again))
    assert edits2.num_rows == 0
    assert rows2["messages"].to_pylist() == rows["messages"].to_pylist()
    assert "repaired" not in rows2["status"].to_pylist()
    # And what the repair leaves, lint still finds; nothing else.
    found = pa.table(chatfsck.lint_batch(again))
    assert set(found["rule"].to_pylist()) <= {"corrupt-record", "duplicate-tool-call-id"}


def test_unparseable_rows_are_kept_never_an_exception():
    cells = ['{"role": "user"', None, "[1, 2]", "[\n  {\"role\": \"user\", \"content\": \"hi\"}\n]", "\u202e"]
    table = pa.table({"messages": pa.array(cells, pa.string())})
    rows, edits, _ = (pa.table(b) for b in chatfsck.repair_batch(table))
    assert rows["messages"].to_pylist() == cells
    assert edits.num_rows == 0
    assert rows["status"].to_pylist() == ["kept", "kept", "kept", "unchanged", "kept"]
