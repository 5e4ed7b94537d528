"""The PySpark adapter (chatfsck.spark), on a real local Spark: a
conversation a row (mapInArrow) and a message a row (applyInArrow)."""

import json
import os
import shutil
import sys

import pytest

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("PySpark needs a Java runtime (java on PATH or JAVA_HOME)", allow_module_level=True)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import chatfsck  # noqa: E402
from chatfsck import spark as cs  # noqa: E402
from conftest import UNPARSEABLE, cli_rows, core_findings, engine_rows, sorted_findings  # noqa: E402


def _session(master, tmp):
    # Loopback only, no UI, small shuffles, a modest JVM; the workers run
    # this interpreter (where chatfsck is installed).
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return (
        SparkSession.builder.master(master)
        .appName("chatfsck-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "768m")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.local.dir", str(tmp))
        .config("spark.sql.warehouse.dir", str(tmp / "warehouse"))
        # Several Arrow batches per partition of 3,000 rows.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "700")
        .getOrCreate()
    )


@pytest.fixture(scope="module", params=["local[1]", "local[2]"])
def spark(request, tmp_path_factory):
    session = _session(request.param, tmp_path_factory.mktemp("spark"))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# What does not depend on the number of cores runs on local[2] alone.
two_cores = pytest.mark.parametrize("spark", ["local[2]"], indirect=True)


def _collect(df):
    return [r.asDict(recursive=True) for r in df.collect()]


@pytest.mark.parametrize("name", ["gen.parquet", "gen.nested.parquet"])
def test_findings_equal_the_cli_the_truth_and_the_core_whatever_the_partitions(
    spark, numbered, truth, cli_findings, name
):
    want = cli_rows(cli_findings[name])
    assert want == truth
    core = core_findings(pq.read_table(numbered[name]).drop_columns(["row"]))
    df = spark.read.parquet(str(numbered[name]))
    for parts in (df, df.repartition(7), df.coalesce(1)):
        got = _collect(cs.lint(parts, row_column="row"))
        assert engine_rows(got) == want
        # Every field, the evidence too, as the core gives them on the whole.
        assert sorted_findings(got) == core


@two_cores
def test_findings_by_id_alone_name_no_row(spark, numbered, truth):
    df = spark.read.parquet(str(numbered["gen.parquet"])).drop("row").repartition(7)
    got = _collect(cs.lint(df))
    assert {f["row"] for f in got} == {None}
    assert {(f["rule"], f["conversation"]) for f in got} == {(rule, id) for _, rule, id in truth}


@two_cores
def test_a_dataframe_without_ids_or_row_numbers_is_refused(spark, numbered):
    df = spark.read.parquet(str(numbered["gen.parquet"])).drop("row", "id")
    with pytest.raises(ValueError, match="row_column"):
        cs.lint(df)


def test_a_message_a_row_shuffled_gives_the_same_findings(spark, message_rows, truth):
    df = spark.createDataFrame(message_rows)
    shuffled = df.repartition(7).orderBy(F.rand(seed=38))
    for parts in (df, shuffled):
        got = _collect(cs.lint_messages(parts, "conversation", "idx", "message", row_column="row"))
        assert engine_rows(got) == truth


@two_cores
def test_a_message_a_row_as_structs(spark, numbered, truth):
    # The nested dataset exploded: a struct a message; the rows that do not
    # parse (null cells) have no message, so no conversation here.
    df = spark.read.parquet(str(numbered["gen.nested.parquet"]))
    msgs = df.select("id", "row", F.posexplode("messages").alias("idx", "message")).repartition(5)
    got = _collect(cs.lint_messages(msgs, "id", "idx", "message", row_column="row"))
    assert engine_rows(got) == {t for t in truth if t[1] != "corrupt-record"}


def test_repair_keeps_every_row_and_equals_the_core(spark, numbered):
    path = numbered["gen.parquet"]
    table = pq.read_table(path)
    rows, _, _ = (pa.table(b) for b in chatfsck.repair_batch(table))
    want = dict(zip(range(table.num_rows), zip(rows["messages"].to_pylist(), rows["status"].to_pylist())))
    before = dict(enumerate(table["messages"].to_pylist()))
    df = spark.read.parquet(str(path)).repartition(7)
    fixed = cs.repair(df)
    assert fixed.columns == ["id", "messages", "row", "status"]
    got = {r["row"]: (r["messages"], r["status"]) for r in _collect(fixed)}
    assert got == want
    assert {s for _, s in got.values()} == {"unchanged", "repaired", "kept"}
    # Clean rows byte for byte.
    for k, (m, s) in got.items():
        if s != "repaired":
            assert m == before[k], k
    # A second repair changes nothing.
    again = {r["row"]: (r["messages"], r["status"]) for r in _collect(cs.repair(fixed.drop("status")))}
    assert {k: m for k, (m, _) in again.items()} == {k: m for k, (m, _) in got.items()}
    assert "repaired" not in {s for _, s in again.values()}


@two_cores
def test_repair_of_a_nested_column_gives_json_text(spark, numbered):
    df = spark.read.parquet(str(numbered["gen.nested.parquet"]))
    got = {r["row"]: r for r in _collect(cs.repair(df))}
    assert len(got) == 3000
    table = pq.read_table(numbered["gen.nested.parquet"])
    rows, _, _ = (pa.table(b) for b in chatfsck.repair_batch(table))
    assert [got[k]["messages"] for k in range(3000)] == rows["messages"].to_pylist()
    assert [got[k]["status"] for k in range(3000)] == rows["status"].to_pylist()


def test_unparseable_rows_give_findings_never_a_worker_crash(spark):
    ids = [f"bad-{k}" for k in range(len(UNPARSEABLE))]
    df = spark.createDataFrame(
        pa.table({"id": ids, "messages": pa.array(UNPARSEABLE, pa.string()), "row": range(len(ids))})
    ).repartition(3)
    got = _collect(cs.lint(df, row_column="row"))
    assert {(f["row"], f["rule"], f["conversation"]) for f in got} == {
        (k, "corrupt-record", id) for k, id in enumerate(ids)
    }
    fixed = {r["row"]: r for r in _collect(cs.repair(df))}
    assert [fixed[k]["messages"] for k in range(len(ids))] == UNPARSEABLE
    assert {fixed[k]["status"] for k in range(len(ids))} == {"kept"}
    # A message a row whose text does not parse: its conversation's finding.
    msgs = spark.createDataFrame(
        pa.table(
            {
                "conversation": ["c1", "c1", "c2", "c3"],
                "idx": [0, 1, 0, 0],
                "message": [json.dumps({"role": "user", "content": "hi"}), '{"role": "assis', None, "7"],
            }
        )
    )
    got = _collect(cs.lint_messages(msgs, "conversation", "idx"))
    # c1's second message is cut, c2's is null, c3's is a number.
    assert {(f["conversation"], f["rule"]) for f in got} == {
        ("c1", "corrupt-record"), ("c2", "corrupt-record"), ("c3", "corrupt-record")
    }
