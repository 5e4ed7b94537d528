#!/usr/bin/env python3
"""Time two commands pair by pair, in the same run: A, B, A, B, ...

    bench/pairs.py [--runs N] [--warm FILE]... [--before CMD] \\
        --a LABEL 'COMMAND A' --b LABEL 'COMMAND B'

Each command is split as a shell splits words and run without a shell, its
output thrown away. Before every run each --warm file is read through (a
warm page cache: some machines, VMs among them, reclaim cached pages within
seconds) and the --before command runs (untimed: removing the last run's
output, say). For each command it prints the median and the spread (min-max)
of wall time, CPU time (user + system), peak RSS, and bytes written to files
(the kernel's count for the process and its children: temporary files,
private copies, repaired copies; output to /dev/null is not counted); then
the median and spread of the ratio A/B taken pair by pair, so that a
machine whose speed drifts during the run still gives a fair ratio.
Exits 2 if a command cannot start; exit codes are printed, not judged.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def warm(files):
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass


def run(cmd):
    start = time.monotonic()
    try:
        p = subprocess.Popen(shlex.split(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    except OSError as e:
        print(f"cannot start {cmd!r}: {e}", file=sys.stderr)
        sys.exit(2)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    return {
        "wall": wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "peak": ru.ru_maxrss / 1024,  # MiB
        "disk": ru.ru_oublock * 512 / (1 << 20),  # MiB
        "code": os.waitstatus_to_exitcode(status),
    }


def spread(xs, fmt):
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}-{fmt(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warm", action="append", default=[])
    ap.add_argument("--before")
    ap.add_argument("--a", nargs=2, metavar=("LABEL", "COMMAND"), required=True)
    ap.add_argument("--b", nargs=2, metavar=("LABEL", "COMMAND"), required=True)
    a = ap.parse_args()
    got = {"a": [], "b": []}
    for _ in range(a.runs):
        for side in ("a", "b"):
            warm(a.warm)
            if a.before:
                subprocess.run(shlex.split(a.before), check=False)
            got[side].append(run(getattr(a, side)[1]))
    for side in ("a", "b"):
        label, cmd = getattr(a, side)
        rs = got[side]
        codes = sorted({r["code"] for r in rs})
        print(f"{side.upper()} {label}: {cmd}")
        print(f"   wall {spread([r['wall'] for r in rs], lambda x: f'{x:.3f}')} s, "
              f"cpu {spread([r['cpu'] for r in rs], lambda x: f'{x:.3f}')} s, "
              f"peak {spread([r['peak'] for r in rs], lambda x: f'{x:.0f}')} MiB, "
              f"written {spread([r['disk'] for r in rs], lambda x: f'{x:.0f}')} MiB, exit {codes}")
    ratio = [x["wall"] / y["wall"] for x, y in zip(got["a"], got["b"])]
    cpu = [x["cpu"] / y["cpu"] for x, y in zip(got["a"], got["b"]) if y["cpu"] > 0]
    print(f"   A/B wall {spread(ratio, lambda x: f'{x:.2f}')}", end="")
    print(f", A/B cpu {spread(cpu, lambda x: f'{x:.2f}')}" if cpu else "")


if __name__ == "__main__":
    main()
