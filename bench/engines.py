"""One engine's lint of a generated conversation dataset (bench/engines.sh):
the best of RUNS wall-clock seconds of the engine's job, the session
already up, reading the Parquet file included; the least CPU seconds its
processes spent in one run (all of them: the engine's JVM, daemons and
workers); and the findings' count.

    python bench/engines.py ENGINE CORES FILE RUNS

ENGINE: spark (local[CORES], mapInArrow into a no-op sink), ray
(num_cpus=CORES, read_parquet then map_batches, materialized) or datasets
(Dataset.from_parquet outside the timing, then map with num_proc=CORES,
caching off). Run it under `taskset` with CORES cores: the engine's
processes (JVM, Python workers, Ray's daemons) inherit the CPU mask.
Prints one line: ENGINE CORES WALL CPU FINDINGS WORKER_PEAK_MIB (the
largest peak RSS of the engine's Python workers, where the adapter runs;
0 for datasets in one process).
"""

import os
import secrets
import sys
import tempfile
import time


def tree_cpu():
    """CPU seconds of this process and all its descendants (Spark's JVM and
    Python workers, Ray's daemons and workers, datasets' processes), the
    children they reaped included: /proc's utime, stime, cutime, cstime."""
    parent, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(pid)] = int(fields[1])
        cpu[int(pid)] = sum(int(x) for x in fields[11:15]) / tick
    mine, grew = {os.getpid()}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in mine} - mine
        grew = bool(more)
        mine |= more
    return sum(cpu.get(p, 0.0) for p in mine)


def workers_peak_mib():
    """The largest peak RSS (VmHWM) of this process's descendant Python
    processes: Spark's Python workers, Ray's workers, where the adapters
    run (the JVM and Ray's daemons left out)."""
    peak = 0
    me = os.getpid()
    parent = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    mine, grew = {me}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in mine} - mine
        grew = bool(more)
        mine |= more
    for pid in mine - {me}:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")[0]
            with open(f"/proc/{pid}/status") as f:
                hwm = next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
        except OSError:
            continue
        if b"python" in cmd or cmd.startswith(b"ray::"):
            peak = max(peak, hwm)
    return peak / 1024


def best(runs, job):
    """The best run's wall-clock seconds and the CPU seconds the process
    tree spent in it (the run with the least CPU, for the CPU figure)."""
    walls, cpus, out = [], [], None
    for _ in range(runs):
        start, cpu = time.perf_counter(), tree_cpu()
        out = job()
        walls.append(time.perf_counter() - start)
        cpus.append(tree_cpu() - cpu)
    return (min(walls), min(cpus)), out


def spark(cores, path, runs):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from chatfsck import spark as cs

    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")

    def job():
        found = cs.lint(session.read.parquet(path))
        found.write.format("noop").mode("overwrite").save()
        return None

    seconds, _ = best(runs, job)
    global PEAK
    PEAK = workers_peak_mib()
    count = cs.lint(session.read.parquet(path)).count()
    session.stop()
    return seconds, count


def ray_(cores, path, runs):
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    import ray
    import ray.data

    from chatfsck import ray as cr

    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as temp:
        ray.init(
            num_cpus=cores, include_dashboard=False, log_to_driver=False,
            _node_ip_address="127.0.0.1", _temp_dir=temp,
        )
        ray.data.DataContext.get_current().enable_progress_bars = False

        def job():
            return cr.lint(ray.data.read_parquet(path)).materialize().count()

        seconds, count = best(runs, job)
        global PEAK
        PEAK = workers_peak_mib()
        ray.shutdown()
    return seconds, count


def datasets_(cores, path, runs):
    import datasets

    from chatfsck.datasets import lint

    datasets.disable_caching()
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory() as cache:
        ds = datasets.Dataset.from_parquet(path, cache_dir=cache)
        seconds, found = best(runs, lambda: lint(ds, num_proc=cores if cores > 1 else None))
    return seconds, len(found)


# The largest peak RSS of the engine's Python workers, MiB (0: none ran).
PEAK = 0


def main():
    engine, cores, path, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    run = {"spark": spark, "ray": ray_, "datasets": datasets_}[engine]
    (wall, cpu), count = run(cores, path, runs)
    print(engine, cores, f"{wall:.3f}", f"{cpu:.3f}", count, f"{PEAK:.0f}", flush=True)
    # Ray and Spark leave threads behind; end now that the figure is out.
    os._exit(0)


if __name__ == "__main__":
    main()
