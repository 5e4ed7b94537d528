"""The Ray Data adapter (chatfsck.ray), on a real local Ray of 2 CPUs."""

import os
import secrets

import pytest

# Token authentication on, with a token of this run's own in the
# environment (so nothing is written to ~/.ray): set before Ray is
# imported, which reads it then.
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
ray = pytest.importorskip("ray", reason="Ray is not installed")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import ray.data  # noqa: E402

import chatfsck  # noqa: E402
from chatfsck import ray as cr  # noqa: E402
from conftest import UNPARSEABLE, cli_rows, core_findings, engine_rows, sorted_findings  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # A local Ray of 2 CPUs on the loopback address, no dashboard; its
    # files in a temporary folder (a short path: Ray's sockets live there).
    temp = tmp_path_factory.mktemp("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
        _temp_dir=str(temp),
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def _table(ds):
    return pa.concat_tables(ray.get(ds.to_arrow_refs()))


@pytest.mark.parametrize("name", ["gen.parquet", "gen.nested.parquet"])
def test_findings_equal_the_cli_the_truth_and_the_core_whatever_the_blocks(
    cluster, numbered, truth, cli_findings, name
):
    want = cli_rows(cli_findings[name])
    assert want == truth
    table = pq.read_table(numbered[name])
    core = core_findings(table.drop_columns(["row"]))
    for blocks in (1, 3, 8):
        ds = ray.data.from_arrow(table).repartition(blocks)
        got = _table(cr.lint(ds, row_column="row", batch_size=500))
        assert engine_rows(got) == want, blocks
        assert sorted_findings(got.to_pylist()) == core, blocks
    # Read by Ray itself, a block a row group.
    got = _table(cr.lint(ray.data.read_parquet(str(numbered[name])), row_column="row"))
    assert engine_rows(got) == want


def test_findings_by_id_alone_name_no_row(cluster, data, truth):
    ds = ray.data.from_arrow(pq.read_table(data / "gen.parquet")).repartition(4)
    got = _table(cr.lint(ds)).to_pylist()
    assert {f["row"] for f in got} == {None}
    assert {(f["rule"], f["conversation"]) for f in got} == {(rule, id) for _, rule, id in truth}
    with pytest.raises(ValueError, match="row_column"):
        cr.lint(ray.data.from_arrow(pa.table({"messages": ["[]"]})))


def test_repair_keeps_every_row_and_equals_the_core(cluster, numbered):
    table = pq.read_table(numbered["gen.parquet"])
    rows, _, _ = (pa.table(b) for b in chatfsck.repair_batch(table))
    want = dict(zip(range(table.num_rows), zip(rows["messages"].to_pylist(), rows["status"].to_pylist())))
    before = dict(enumerate(table["messages"].to_pylist()))
    fixed = _table(cr.repair(ray.data.from_arrow(table).repartition(5), batch_size=300))
    assert fixed.column_names == ["id", "messages", "row", "status"]
    got = {r["row"]: (r["messages"], r["status"]) for r in fixed.to_pylist()}
    assert got == want
    assert {s for _, s in got.values()} == {"unchanged", "repaired", "kept"}
    for k, (m, s) in got.items():
        if s != "repaired":
            assert m == before[k], k
    again = _table(cr.repair(ray.data.from_arrow(fixed.drop_columns(["status"])).repartition(3)))
    again = {r["row"]: (r["messages"], r["status"]) for r in again.to_pylist()}
    assert {k: m for k, (m, _) in again.items()} == {k: m for k, (m, _) in got.items()}
    assert "repaired" not in {s for _, s in again.values()}


def test_unparseable_rows_give_findings_never_a_worker_crash(cluster):
    ids = [f"bad-{k}" for k in range(len(UNPARSEABLE))]
    table = pa.table({"id": ids, "messages": pa.array(UNPARSEABLE, pa.string()), "row": range(len(ids))})
    ds = ray.data.from_arrow(table).repartition(3)
    got = _table(cr.lint(ds, row_column="row", batch_size=2))
    assert engine_rows(got) == {(k, "corrupt-record", id) for k, id in enumerate(ids)}
    fixed = {r["row"]: r for r in _table(cr.repair(ds, batch_size=2)).to_pylist()}
    assert [fixed[k]["messages"] for k in range(len(ids))] == UNPARSEABLE
    assert {fixed[k]["status"] for k in range(len(ids))} == {"kept"}
