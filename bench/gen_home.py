#!/usr/bin/env python3
"""A home directory holding thousands of sessions of several apps, for
timing a run without a path (bench/discovery.sh).

    bench/gen_home.py --out DIR [--mb 600]

DIR/home gets, in the layout each app keeps on Linux:
- Claude Code: bench/gen_claude_tree.py's undamaged tree (the real
  sessions of fixtures/corpus in project folders) as ~/.claude/projects,
  half of MB;
- Codex: the corpus's real rollout (515 KB) copied as
  ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl, a quarter of MB
  (counted uncompressed); every other one compressed with `zstd -3` as
  `rollout-….jsonl.zst`, as Codex (0.137 and later) rewrites a rollout
  idle for 7 days;
- Gemini CLI, Copilot CLI, Cline: the fixtures' small sessions copied
  under new ids (a few KB each: many sessions, few bytes), about 1,500
  sessions each.
The rest of the budget goes to the small-session apps' copies. The tree is
rebuilt only when missing or made with other arguments.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import uuid

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")


def copies(src_files, mb_or_count, dest_of, by_count=False):
    """Copy src_files round-robin to dest_of(i, src) until the budget."""
    total, i = 0, 0
    while (i < mb_or_count) if by_count else (total < mb_or_count * 1_000_000):
        src = src_files[i % len(src_files)]
        dest = dest_of(i, src)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(src, dest)
        total += os.path.getsize(src)
        i += 1
    return i, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mb", type=int, default=600)
    ap.add_argument("--small", type=int, default=1500, help="sessions of each small-session app")
    a = ap.parse_args()
    home = os.path.join(a.out, "home")
    stamp = os.path.join(a.out, "home-made-with.json")
    made = {"mb": a.mb, "small": a.small, "v": 2}
    if os.path.isdir(home) and os.path.exists(stamp):
        with open(stamp) as fh:
            if json.load(fh) == made:
                print(f"{home}: up to date")
                return
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    # Claude Code: the existing generator, into ~/.claude.
    subprocess.run(
        [sys.executable, os.path.join(here, "gen_claude_tree.py"), "--out", os.path.join(home, ".claude"),
         "--mb", str(a.mb // 2), "--damaged", "0"],
        check=True, stdout=subprocess.DEVNULL)
    os.remove(os.path.join(home, ".claude", "made-with.json"))
    # Codex: the real rollout under thread ids of its own.
    rollout = os.path.join(
        root, "fixtures/corpus/codemie-ai__codemie-code/src/agents/plugins/codex/__tests__/fixtures",
        "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
    sessions = os.path.join(home, ".codex", "sessions")
    n, b = copies([rollout], a.mb // 4, lambda i, s: os.path.join(
        sessions, "2026", "05", f"{1 + i % 28:02d}",
        f"rollout-2026-05-{1 + i % 28:02d}T10-00-00-{uuid.UUID(int=i)}.jsonl"))
    # Every other rollout compressed as Codex compresses an idle one.
    zst = 0
    for i in range(0, n, 2):
        day = f"{1 + i % 28:02d}"
        plain = os.path.join(sessions, "2026", "05", day, f"rollout-2026-05-{day}T10-00-00-{uuid.UUID(int=i)}.jsonl")
        subprocess.run(["zstd", "-q", "-3", "--rm", plain, "-o", plain + ".zst"], check=True)
        zst += 1
    print(f"codex: {n} rollouts ({zst} of them .jsonl.zst), {b} bytes uncompressed")
    # Gemini CLI: the fixture's chats in project folders.
    chats = os.path.join(root, "fixtures/gemini-cli/home/.gemini/tmp/shop-api/chats")
    src = sorted(os.path.join(chats, f) for f in os.listdir(chats))
    n, b = copies(src, a.small, lambda i, s: os.path.join(
        home, ".gemini", "tmp", f"p{i // 100}", "chats", f"session-2026-05-20T09-{i % 60:02d}-{i:08x}.jsonl"),
        by_count=True)
    print(f"gemini: {n} chats, {b} bytes")
    # Copilot CLI: events.jsonl per session folder.
    state = os.path.join(root, "fixtures/copilot-cli/home/.copilot/session-state")
    src = sorted(os.path.join(state, d, "events.jsonl") for d in os.listdir(state))
    n, b = copies(src, a.small, lambda i, s: os.path.join(
        home, ".copilot", "session-state", str(uuid.UUID(int=(1 << 64) + i)), "events.jsonl"), by_count=True)
    print(f"copilot: {n} sessions, {b} bytes")
    # Cline: task folders in VS Code's global storage.
    tasks = os.path.join(root, "fixtures/cline/home/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks")
    src = sorted(os.path.join(tasks, d, "api_conversation_history.json") for d in os.listdir(tasks))
    n, b = copies(src, a.small, lambda i, s: os.path.join(
        home, ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks", str(1760000000000 + i),
        "api_conversation_history.json"), by_count=True)
    print(f"cline: {n} tasks, {b} bytes")
    with open(stamp, "w") as fh:
        json.dump(made, fh)


if __name__ == "__main__":
    main()
