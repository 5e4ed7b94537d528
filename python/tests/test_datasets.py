"""The Hugging Face datasets adapter (chatfsck.datasets)."""

import pytest

datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is not installed")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import chatfsck  # noqa: E402
from chatfsck.datasets import lint, repair  # noqa: E402
from conftest import UNPARSEABLE, batch_rows, cli_rows, core_findings, sorted_findings  # noqa: E402


@pytest.mark.parametrize("name", ["gen.parquet", "gen.nested.parquet"])
def test_findings_equal_the_cli_whatever_the_processes(data, truth, cli_findings, name, tmp_path):
    ds = datasets.Dataset.from_parquet(str(data / name), cache_dir=str(tmp_path))
    want = cli_rows(cli_findings[name])
    assert want == truth
    one = lint(ds, num_proc=None, batch_size=1000).data.table
    two = lint(ds, num_proc=2, batch_size=333).data.table
    assert batch_rows(one) == want
    assert batch_rows(two) == want


def test_a_selection_names_rows_by_their_index_in_it(data, truth, tmp_path):
    ds = datasets.Dataset.from_parquet(str(data / "gen.parquet"), cache_dir=str(tmp_path))
    odd = ds.select(range(1, len(ds), 2))
    want = {((row - 1) // 2, rule, id) for row, rule, id in truth if row % 2 == 1}
    assert batch_rows(lint(odd, num_proc=2).data.table) == want


def test_findings_equal_the_core_evidence_and_all(data, tmp_path):
    ds = datasets.Dataset.from_parquet(str(data / "gen.nested.parquet"), cache_dir=str(tmp_path))
    got = lint(ds, num_proc=2, batch_size=333).data.table.to_pylist()
    assert sorted_findings(got) == core_findings(pq.read_table(data / "gen.nested.parquet"))


def test_repair_keeps_every_row_and_equals_the_core(data, tmp_path):
    table = pq.read_table(data / "gen.parquet")
    rows, _, _ = (pa.table(b) for b in chatfsck.repair_batch(table))
    ds = datasets.Dataset.from_parquet(str(data / "gen.parquet"), cache_dir=str(tmp_path))
    fixed = repair(ds, num_proc=2, batch_size=333)
    assert fixed.column_names == ["id", "messages", "status"]
    assert fixed["id"] == table["id"].to_pylist()
    assert fixed["messages"] == rows["messages"].to_pylist()
    assert fixed["status"] == rows["status"].to_pylist()
    before = table["messages"].to_pylist()
    for k, (m, s) in enumerate(zip(fixed["messages"], fixed["status"])):
        if s != "repaired":
            assert m == before[k], k
    again = repair(fixed.remove_columns(["status"]), num_proc=2, batch_size=500)
    assert again["messages"] == fixed["messages"]
    assert "repaired" not in set(again["status"])


def test_unparseable_rows_give_findings_never_a_worker_crash(tmp_path):
    ids = [f"bad-{k}" for k in range(len(UNPARSEABLE))]
    ds = datasets.Dataset.from_dict({"id": ids, "messages": UNPARSEABLE})
    got = lint(ds, num_proc=2, batch_size=3).data.table
    assert batch_rows(got) == {(k, "corrupt-record", id) for k, id in enumerate(ids)}
    fixed = repair(ds, num_proc=2, batch_size=3)
    assert fixed["messages"] == UNPARSEABLE
    assert set(fixed["status"]) == {"kept"}
