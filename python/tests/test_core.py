"""lint_batch against the CLI and the truth table (issue 38)."""

import json
import multiprocessing
import os
import subprocess
import sys
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import chatfsck
from conftest import batch_rows, cli_rows


@pytest.mark.parametrize("name", ["gen.parquet", "gen.nested.parquet"])
def test_findings_equal_the_cli_and_the_truth_table(data, truth, cli_findings, name):
    table = pq.read_table(data / name)
    got = pa.table(chatfsck.lint_batch(table))
    assert batch_rows(got) == cli_rows(cli_findings[name])
    assert batch_rows(got) == truth


def test_a_finding_has_the_fields_of_the_json_report(data, cli_findings):
    path = str(data / "gen.parquet")
    got = pa.table(chatfsck.lint_batch(pq.read_table(path), source=path)).to_pylist()
    want = cli_findings["gen.parquet"]["findings"]
    assert len(got) == len(want)
    key = lambda f: (f["row"] if "row" in f else f["location"]["rowid"], f["rule"])
    for g, w in zip(sorted(got, key=key), sorted(want, key=key)):
        for field in ("rule", "severity", "conversation", "message", "summary", "ids", "fixable", "applicability", "notes"):
            assert g[field] == w[field], (field, g, w)
        assert json.loads(g["evidence"]) == w["evidence"]


def test_partitions_give_the_same_findings(data):
    table = pq.read_table(data / "gen.nested.parquet")
    whole = batch_rows(pa.table(chatfsck.lint_batch(table)))
    # Seven uneven parts, each told where it starts; and a RecordBatch
    # (through __arrow_c_array__) rather than a table.
    cuts = [0, 1, 400, 401, 1500, 2222, 2999, table.num_rows]
    parts = set()
    for a, b in zip(cuts, cuts[1:]):
        batch = table.slice(a, b - a).combine_chunks().to_batches()[0] if b > a else None
        if batch is not None:
            parts |= batch_rows(pa.table(chatfsck.lint_batch(batch, first_row=a)))
    assert parts == whole


def test_rows_that_do_not_parse_are_findings_never_an_exception():
    cells = ['{"role": "user"', "null", "42", "[1, 2]", '{"a": 1}', "\u202e[", "", None]
    table = pa.table({"messages": pa.array(cells, pa.string())})
    got = pa.table(chatfsck.lint_batch(table)).to_pylist()
    assert sorted({f["row"] for f in got}) == list(range(len(cells)))
    assert {f["rule"] for f in got} == {"corrupt-record"}
    assert all(f["conversation"] == f"row {f['row']}" for f in got)


def test_a_batch_without_the_column_is_a_clear_error():
    table = pa.table({"text": ["hi"]})
    with pytest.raises(ValueError, match="no `messages` or `conversations` column"):
        chatfsck.lint_batch(table)
    with pytest.raises(ValueError, match="no `chat` column"):
        chatfsck.lint_batch(table, messages_column="chat")
    with pytest.raises(TypeError, match="expected Arrow data"):
        chatfsck.lint_batch([1, 2])


def _lint_part(args):
    path, a, b = args
    table = pq.read_table(path).slice(a, b - a)
    return batch_rows(pa.table(chatfsck.lint_batch(table, first_row=a)))


def test_safe_in_a_fork_child_after_use_in_the_parent(data):
    path = str(data / "gen.parquet")
    whole = _lint_part((path, 0, 3000))
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        parts = pool.map(_lint_part, [(path, 0, 1500), (path, 1500, 3000)], chunksize=1)
    assert parts[0] | parts[1] == whole


def test_the_gil_is_released_while_it_works(data):
    table = pq.read_table(data / "gen.nested.parquet")
    table = pa.concat_tables([table] * 8)
    inside = threading.Event()
    done = threading.Event()

    def work():
        inside.set()
        chatfsck.lint_batch(table)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    inside.wait()
    ticks = 0
    while not done.is_set():
        ticks += 1
    t.join()
    # Held, the GIL would leave this loop a handful of turns at most.
    assert ticks > 10_000, ticks


def test_no_thread_is_started_at_import_or_by_a_lint():
    code = (
        "import os, pyarrow as pa, chatfsck\n"
        "n = lambda: len(os.listdir('/proc/self/task'))\n"
        "a = n()\n"
        "chatfsck.lint_batch(pa.table({'messages': ['[]']}))\n"
        "print(a, n())\n"
    )
    before = subprocess.run([sys.executable, "-c", "import os, pyarrow; print(len(os.listdir('/proc/self/task')))"],
                            capture_output=True, text=True, check=True).stdout.split()
    after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert after == [before[0], before[0]]


def test_the_wheel_gives_the_chatfsck_command(data, cli):
    command = os.path.join(os.path.dirname(sys.executable), "chatfsck")
    p = subprocess.run([command, "lint", "--format", "json", str(data / "gen.jsonl")], capture_output=True, text=True)
    code, stdout, _ = cli("lint", "--format", "json", str(data / "gen.jsonl"))
    assert (p.returncode, json.loads(p.stdout)["findings"]) == (code, json.loads(stdout)["findings"])
    p = subprocess.run([command, "lint", str(data / "missing.jsonl")], capture_output=True, text=True)
    assert p.returncode == 2 and "missing.jsonl" in p.stderr


def test_a_row_column_names_the_rows_whatever_their_order(data):
    table = pq.read_table(data / "gen.nested.parquet")
    whole = pa.table(chatfsck.lint_batch(table)).to_pylist()
    numbered = table.append_column("row", pa.array(range(table.num_rows), pa.int64()))
    # Rows in another order, the id column gone: the row column still names
    # each row, in the findings, their names and their evidence.
    order = list(range(table.num_rows))[::-1]
    shuffled = numbered.take(order).drop_columns(["id"])
    got = pa.table(chatfsck.lint_batch(shuffled, row_column="row")).to_pylist()
    key = lambda f: (f["row"], f["rule"], f["message"] or 0)
    plain = pa.table(chatfsck.lint_batch(table.drop_columns(["id"]))).to_pylist()
    assert sorted(got, key=key) == sorted(plain, key=key)
    assert {(f["row"], f["rule"]) for f in got} == {(f["row"], f["rule"]) for f in whole}
    rows, edits, left = (pa.table(b) for b in chatfsck.repair_batch(shuffled, row_column="row"))
    assert rows["row"].to_pylist() == order
    assert set(edits["row"].to_pylist()) | set(left["row"].to_pylist()) <= {f["row"] for f in whole}


def test_a_bad_row_column_is_a_clear_error():
    table = pa.table({"messages": ["[]", "[]"], "row": pa.array([0, None], pa.int64()), "s": ["a", "b"]})
    with pytest.raises(ValueError, match="no `nope` column"):
        chatfsck.lint_batch(table, row_column="nope")
    with pytest.raises(ValueError, match="not integers"):
        chatfsck.lint_batch(table, row_column="s")
    with pytest.raises(ValueError, match="no row index at row 1"):
        chatfsck.lint_batch(table, row_column="row")
    with pytest.raises(ValueError, match="no row index at row 0"):
        chatfsck.repair_batch(pa.table({"messages": ["[]"], "row": [-1]}), row_column="row")


def test_the_adapters_import_no_engine_and_start_no_thread():
    code = (
        "import os, sys, pyarrow\n"
        "n = lambda: len(os.listdir('/proc/self/task'))\n"
        "a = n()\n"
        "import chatfsck.spark, chatfsck.ray, chatfsck.datasets\n"
        "print(a, n(), *sorted(m for m in ('pyspark', 'ray', 'datasets') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == out[1] and out[2:] == [], out
