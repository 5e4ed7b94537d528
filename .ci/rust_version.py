#!/usr/bin/env python3
"""Check `rust-version` in Cargo.toml (the Rust the README promises).

It must be no older than the `rust-version` of any dependency that a build
of chatfsck compiles (normal and build dependencies, from Cargo.lock; dev
dependencies only build the tests), and no newer than the toolchain that
runs this. Clippy's incompatible_msrv lint holds chatfsck's own code to
it. Prints the figures; exits 1 on a mismatch.
"""
import json
import subprocess
import sys


def version(s):
    """(major, minor, patch), a missing patch being 0."""
    parts = [int(x) for x in s.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--locked", "--format-version", "1"],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    root = meta["resolve"]["root"]
    declared = packages[root].get("rust_version")
    if not declared:
        print("Cargo.toml declares no rust-version", file=sys.stderr)
        return 1
    # Every package a build of chatfsck compiles: follow normal and build
    # edges only.
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if kinds - {"dev"}:
                todo.append(dep["pkg"])
    needs = max(
        ((version(packages[p]["rust_version"]), packages[p]["name"])
         for p in seen - {root} if packages[p].get("rust_version")),
        default=((0,), "none"),
    )
    rustc = subprocess.run(["rustc", "--version"], check=True, capture_output=True, text=True).stdout
    toolchain = version(rustc.split()[1].split("-")[0])
    print(f"rust-version {declared}; dependencies need {'.'.join(map(str, needs[0]))} "
          f"({needs[1]}); toolchain {'.'.join(map(str, toolchain))}")
    ok = True
    if version(declared) < needs[0]:
        print(f"rust-version {declared} is older than {needs[1]}'s", file=sys.stderr)
        ok = False
    if version(declared) > toolchain:
        print(f"rust-version {declared} is newer than this toolchain", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
