#!/usr/bin/env python3
"""Judge of a Mistral Vibe session directory, where the client cannot run
(mistral-vibe 3.0.3 needs Python 3.12: docs/clients.md).

    python3 tests/oracle/vibe_judge.py SESSION_DIR...

Prints one JSON line per directory:
  {"session": DIR, "loads": bool, "error": str|null, "messages": n,
   "request_valid": bool, "request_errors": [...]}

`loads` re-does every check 3.0.3's `UnifiedSessionStore._load` makes
(`mistralai_vibe_local_harness/vibe/_storage.py`, line numbers of that file),
with the client's own hashing rules as read there, implemented here apart
from chatfsck: `CURRENT` and the manifest are canonical JSON
(`_read_document_bytes`, 5037), the store minor is at most 10, the manifest
hashes to `manifest_sha256` (2512), each document to its reference (5022),
each chunk to its name (2132), and the journal segment passes `_read_journal`
(4598: a torn last line skipped; every other record a known type of version 1,
hashing to its `record_sha256` without that field, in sequence, chained by
`previous_record_sha256`).

The request is the checkpoint's context messages as an OpenAI-shaped chat
request (what Mistral's API takes), checked by validate_openai_chat.py.
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_openai_chat import validate  # noqa: E402

MINOR = 10
RECORD_TYPES = {
    "action_intent", "action_result", "callback_registered", "callback_resolved",
    "command_reserved", "core_input", "process_notification_submitted",
    "process_operation_dispatched", "process_state_changed", "projection_advanced",
    "projection_delta", "receipt_failed", "receipt_succeeded", "session_relocated",
}
FIELD = b',"record_sha256":"'


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha(data):
    return hashlib.sha256(data).hexdigest()


class Refused(Exception):
    pass


def body(path):
    data = open(path, "rb").read()
    if not data.endswith(b"\n"):
        raise Refused(f"not newline terminated: {os.path.basename(path)}")
    return data[:-1]


def document(path):
    b = body(path)
    v = json.loads(b)
    if canonical(v) != b:
        raise Refused(f"stored JSON document is not canonical: {os.path.basename(path)}")
    return v, b


def referenced(gen, ref):
    name = ref.get("path", "")
    if name in ("", ".", "..") or "/" in name or "\\" in name:
        raise Refused("generation record path must be one file name")
    b = body(os.path.join(gen, name))
    if sha(b) != ref.get("sha256"):
        raise Refused(f"stored record digest mismatch: {name}")
    return json.loads(b)


def chunk(root, digest):
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise Refused("invalid chunk digest")
    b = body(os.path.join(root, "chunks", digest + ".json"))
    if sha(b) != digest:
        raise Refused(f"stored chunk digest mismatch: {digest}")
    items = json.loads(b)
    if not isinstance(items, list):
        raise Refused(f"stored chunk is not a transcript run: {digest}")
    return items


def journal(path, first):
    data = open(path, "rb").read()
    lines = data.splitlines(keepends=True)
    expected, previous, n = first, None, 0
    for index, line in enumerate(lines):
        if not line.endswith(b"\n"):
            if index == len(lines) - 1:
                break
            raise Refused("recovery journal has an unterminated interior record")
        raw = line[:-1]
        try:
            record = json.loads(raw)
        except ValueError:
            raise Refused(f"invalid recovery journal record {expected}")
        if (not isinstance(record, dict) or record.get("type") not in RECORD_TYPES
                or record.get("recovery_journal_record_version") != 1):
            raise Refused(f"invalid recovery journal record {expected}")
        start = raw.rfind(FIELD)
        stored = record.get("record_sha256")
        end = start + len(FIELD) + 64
        if start < 0 or raw[end:end + 1] != b'"' or sha(raw[:start] + raw[end + 1:]) != stored:
            raise Refused("recovery journal record digest mismatch")
        if record.get("sequence") != expected:
            raise Refused("recovery journal sequence gap")
        if record.get("previous_record_sha256") != previous:
            raise Refused("recovery journal digest chain mismatch")
        expected, previous, n = expected + 1, stored, n + 1
    return n


def load(root):
    current, _ = document(os.path.join(root, "CURRENT"))
    minor = current.get("store_format_minor", 1)
    if minor > MINOR:
        raise Refused(f"requires a newer reader (minor {minor})")
    if current.get("store_format") != "mistral.vibe.unified-session-store/v1":
        raise Refused("not a unified session store")
    if current.get("session_id") != os.path.basename(os.path.abspath(root)):
        raise Refused("CURRENT names another session")
    gen = os.path.join(root, "generations", current["generation"])
    manifest, mbytes = document(os.path.join(gen, "manifest.json"))
    if sha(mbytes) != current["manifest_sha256"]:
        raise Refused("manifest digest mismatch")
    if (manifest["generation"] != current["generation"]
            or manifest["snapshot_sequence"] != current["snapshot_sequence"]
            or manifest["session_id"] != current["session_id"]):
        raise Refused("CURRENT and manifest disagree")
    checkpoint = referenced(gen, manifest["checkpoint"])
    messages = checkpoint.get("context", {}).get("messages", [])
    if manifest["checkpoint"].get("chunks") is not None:
        messages = [m for d in manifest["checkpoint"]["chunks"] for m in chunk(root, d)]
    for key in ("runtime_state", "projection_state"):
        referenced(gen, manifest[key])
        for d in manifest[key].get("chunks") or ():
            chunk(root, d)
    segment = manifest["recovery_journal_segment"]
    if segment["first_sequence"] != manifest["snapshot_sequence"] + 1:
        raise Refused("journal segment must begin after the snapshot sequence")
    journal(os.path.join(root, segment["path"]), segment["first_sequence"])
    return messages


def request(messages):
    out = []
    for item in messages:
        m = item.get("message", {})
        role = m.get("role")
        texts = "".join(b.get("text", "") for b in m.get("content", [])
                        if isinstance(b, dict) and b.get("type") == "text")
        if role == "assistant":
            calls = [{"id": p["id"], "type": "function",
                      "function": {"name": p["name"], "arguments": p["arguments"]["raw"]}}
                     for p in m.get("content", []) if p.get("type") == "tool_call"]
            msg = {"role": "assistant", "content": texts or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": m.get("tool_call_id"), "content": texts})
        else:
            out.append({"role": role, "content": texts})
    out.append({"role": "user", "content": "continue"})
    return {"model": "mistral-medium-latest", "messages": out}


def judge(root):
    summary = {"session": root, "loads": False, "error": None, "messages": 0,
               "request_valid": False, "request_errors": []}
    try:
        messages = load(root)
    except (Refused, OSError, ValueError, KeyError, TypeError) as e:
        summary["error"] = f"{type(e).__name__}: {e}"
        return summary
    summary["loads"] = True
    summary["messages"] = len(messages)
    result = validate(json.dumps(request(messages)))
    summary["request_valid"] = result["valid"]
    summary["request_errors"] = [e.get("code", str(e)) if isinstance(e, dict) else str(e)
                                 for e in result["errors"]]
    return summary


def main():
    for root in sys.argv[1:]:
        print(json.dumps(judge(root)), flush=True)


if __name__ == "__main__":
    main()
