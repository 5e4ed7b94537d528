#!/usr/bin/env python3
"""A ~/.claude/projects tree damaged as crashes damage sessions.

    bench/gen_claude_tree.py --out DIR [--mb 300] [--damaged 0.2] [--corpus PATH]

The real Claude Code sessions of fixtures/corpus (every .jsonl holding a
"sessionId", sub-agent files included) are copied into project folders
(DIR/projects/project-N/session-K.jsonl) until the tree holds about MB
megabytes (bench/claude_code.sh times lint on such a tree, undamaged:
--damaged 0). Then a share of the files
(--damaged, seeded: the same tree every time) gets one of the two kinds of
damage a crash leaves in an append-only log:

- a torn tail: the last line cut at a random byte, with no newline after it
  (the process died in the middle of a write);
- a lost line: one line in the middle removed (a write that never reached
  the disk while later ones did), which leaves a record whose parent is
  gone, and often a tool call without its result or a result without its
  call.

Prints how many files of each kind were damaged. The tree is rebuilt only
when DIR/projects is missing or was made with other arguments.
"""
import argparse
import json
import os
import random
import shutil
import sys


def sessions(corpus):
    found = []
    for root, _, files in os.walk(corpus):
        for f in files:
            if f.endswith(".jsonl"):
                p = os.path.join(root, f)
                with open(p, "rb") as fh:
                    if b'"sessionId"' in fh.read():
                        found.append(p)
    return sorted(found)


def damage(path, rng, kinds):
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) < 4:
        return
    if rng.random() < 0.5:
        last = lines[-1]
        lines[-1] = last[: rng.randrange(1, max(2, len(last)))]
        data = b"\n".join(lines)
        kinds["torn tail"] += 1
    else:
        del lines[rng.randrange(1, len(lines) - 1)]
        data = b"\n".join(lines) + b"\n"
        kinds["lost line"] += 1
    with open(path, "wb") as fh:
        fh.write(data)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--damaged", type=float, default=0.2)
    ap.add_argument("--corpus", default=os.path.join(here, "..", "fixtures", "corpus"))
    a = ap.parse_args()
    tree = os.path.join(a.out, "projects")
    stamp = os.path.join(a.out, "made-with.json")
    args = {"mb": a.mb, "damaged": a.damaged}
    if os.path.isdir(tree) and os.path.exists(stamp):
        with open(stamp) as fh:
            made = json.load(fh)
        if made.get("args") == args:
            print(f"{tree}: {made['kinds']}")
            return
    found = sessions(a.corpus)
    if not found:
        sys.exit(f"no Claude Code session under {a.corpus}")
    shutil.rmtree(tree, ignore_errors=True)
    total, n = 0, 0
    while total < a.mb * 1_000_000:
        project = os.path.join(tree, f"project-{n}")
        os.makedirs(project)
        for i, s in enumerate(found, 1):
            dest = os.path.join(project, f"session-{i}.jsonl")
            shutil.copyfile(s, dest)
            total += os.path.getsize(dest)
        n += 1
    rng = random.Random(20261127)
    kinds = {"torn tail": 0, "lost line": 0}
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        for f in sorted(files):
            if rng.random() < a.damaged:
                damage(os.path.join(root, f), rng, kinds)
    with open(stamp, "w") as fh:
        json.dump({"args": args, "kinds": kinds}, fh)
    print(f"{tree}: {kinds}")


if __name__ == "__main__":
    main()
