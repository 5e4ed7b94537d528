#!/usr/bin/env python3
"""One session whose records share one id, or each lose their parent.

    bench/gen_shared_id.py --kind KIND --records N --out FILE

What a hostile (or badly merged) file makes repair do N times over, for
bench/shared_id.sh. The same arguments give the same bytes. KIND is one of:

- claude-copies: a Claude Code session whose N records after the prompt
  are exact copies of one reply (one `uuid`): `duplicate-uuid`, each later
  copy removed;
- claude-replaced: the same, each copy with a text of its own:
  `duplicate-uuid` with different content, the earlier kept under a new
  uuid where the repair can;
- claude-dangling: N replies after the prompt, each naming a parent no
  record has, 1 s after the one before (`dangling-parent`, bridged:
  each re-linked);
- codex-call-id: a Codex rollout of one `function_call` and its output
  written N times (one `call_id`): `duplicate-tool-call-id`, each repeated
  call removed, then each output that answers none;
- gemini-rewind: a Gemini CLI recording of N user/model turns, a
  `$rewindTo` after each model turn taking it back (the rewound calls'
  results stay: `orphan-tool-result`).

The file is written to FILE.tmp and renamed over FILE once complete.
"""
import argparse
import datetime
import json
import os

SESSION = "5b0c6a3e-2d41-4f7a-9e8b-1c2d3e4f5a6b"


def ts(ms):
    """An ISO timestamp `ms` milliseconds after 2026-01-01T10:00:00Z."""
    t = datetime.datetime(2026, 1, 1, 10) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def uuid(n):
    return "00000000-0000-4000-8000-%012x" % n


def claude(kind, n):
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/u/repo",
            "sessionId": SESSION, "version": "2.1.330"}
    prompt = dict(base, parentUuid=None, type="user", uuid=uuid(0), timestamp=ts(0),
                  message={"role": "user", "content": "Summarise the repository."})
    yield prompt
    for i in range(1, n + 1):
        text = "Here is the summary." if kind == "claude-copies" else "Summary, draft %d." % i
        rec = dict(base, type="assistant", timestamp=ts(0 if kind != "claude-dangling" else i * 1000),
                   message={"id": "msg_%08d" % (1 if kind == "claude-copies" else i),
                            "role": "assistant", "model": "claude-sonnet-4-5",
                            "content": [{"type": "text", "text": text}]})
        if kind == "claude-dangling":
            rec.update(parentUuid=uuid(10_000_000 + i), uuid=uuid(i))
        else:
            rec.update(parentUuid=uuid(0), uuid=uuid(1))
        yield rec


def codex(n):
    meta = {"id": SESSION, "timestamp": ts(0), "cwd": "/home/u/repo", "originator": "codex_cli_rs",
            "cli_version": "0.169.0", "model_provider": "openai"}
    yield {"timestamp": ts(0), "type": "session_meta", "payload": meta}
    yield {"timestamp": ts(1), "type": "response_item",
           "payload": {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "List the files."}]}}
    for i in range(n):
        yield {"timestamp": ts(2 + 2 * i), "type": "response_item",
               "payload": {"type": "function_call", "name": "exec_command",
                           "arguments": json.dumps({"cmd": "ls"}), "call_id": "call_same"}}
        yield {"timestamp": ts(3 + 2 * i), "type": "response_item",
               "payload": {"type": "function_call_output", "call_id": "call_same",
                           "output": "a.txt"}}


def gemini(n):
    yield {"sessionId": SESSION, "projectHash": "ab" * 32, "startTime": ts(0),
           "lastUpdated": ts(0), "kind": "main"}
    for i in range(n):
        yield {"id": uuid(2 * i), "timestamp": ts(4 * i), "type": "user",
               "content": [{"text": "Find caller %d." % i}]}
        call = "grep_search_%d" % i
        yield {"id": uuid(2 * i + 1), "timestamp": ts(4 * i + 1), "type": "gemini", "content": "",
               "toolCalls": [{"id": call, "name": "grep_search", "args": {"pattern": "f%d" % i}}]}
        yield {"$rewindTo": uuid(2 * i + 1)}
        yield {"id": uuid(10_000_000 + i), "timestamp": ts(4 * i + 2), "type": "user",
               "content": [{"functionResponse": {"id": call, "name": "grep_search",
                                                 "response": {"output": "none"}}}]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", required=True,
                    choices=["claude-copies", "claude-replaced", "claude-dangling",
                             "codex-call-id", "gemini-rewind"])
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.kind.startswith("claude"):
        recs = claude(a.kind, a.records)
    elif a.kind == "codex-call-id":
        recs = codex(a.records)
    else:
        recs = gemini(a.records)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
