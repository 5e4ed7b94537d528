"""The Hugging Face datasets adapter (chatfsck.datasets)."""

import pytest

datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is not installed")

from chatfsck.datasets import lint  # noqa: E402
from conftest import batch_rows, cli_rows  # noqa: E402


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
