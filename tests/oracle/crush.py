#!/usr/bin/env python3
"""Crush's session loader, re-implemented as the judge of crush.db copies.

Crush (charmbracelet/crush) cannot run here: its npm package downloads its
binary from GitHub at install, and its Go modules come from
proxy.golang.org (docs/clients.md). This script does, for every session of
a `crush.db`, what Crush at charmbracelet/crush@37f36e93 does when it loads
the session to send it, and no more:

  * `ListMessagesBySession`: the rows `ORDER BY created_at` (then rowid,
    as SQLite returns rows of one second);
  * `unmarshalParts` (internal/message/message.go:581-655): a `parts` that
    is not a JSON array of `{"type", "data"}` objects of a known type
    fails the whole `List`: the session does not load;
  * `getSessionMessages` (internal/agent/agent.go:1689-1709): with a
    `summary_message_id`, the summary (as a user message) and what follows;
  * `preparePrompt` (agent.go:1527-1605) and `ToAIMessage`
    (internal/message/content.go:532-649): rows with no part and assistant
    rows with no text, reasoning or call are skipped; a tool result whose
    call no row holds is dropped; a call no row answers gets the synthetic
    error result right after its message.

The request is written as OpenAI Chat Completions and judged by
validate_openai_chat.py, plus three checks a provider makes that it does
not: a call's name is not empty (crush#659), its arguments are a JSON object
(crush#2720), and no call is answered twice (Anthropic).

Usage: crush.py DB [DB…]  — one JSON line per session:
  {"db", "session", "loads", "error", "valid", "errors", "messages", "calls", "results"}
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_openai_chat import validate  # noqa: E402

KNOWN = {"reasoning", "text", "image_url", "binary", "tool_call", "tool_result", "finish", "shell_command"}
SYNTHETIC = ("tool call was interrupted and did not produce a result, you may retry this call if "
             "the result is still needed")


class LoadError(Exception):
    pass


def unmarshal(text):
    try:
        items = json.loads(text)
    except ValueError as e:
        raise LoadError("parts: %s" % e)
    if not isinstance(items, list):
        raise LoadError("parts is not an array")
    parts = []
    for it in items:
        if not isinstance(it, dict):
            raise LoadError("a part is not an object")
        t = it.get("type")
        if t not in KNOWN:
            raise LoadError("unknown part type: %s" % t)
        if "data" not in it:
            raise LoadError("a part has no data")
        d = it["data"] if isinstance(it["data"], dict) else {}
        parts.append((t, d))
    return parts


def first(parts, kind, key):
    for t, d in parts:
        if t == kind:
            return d.get(key) or ""
    return ""


def load(conn, session):
    has_summary = any(r[1] == "summary_message_id" for r in conn.execute("PRAGMA table_info(sessions)"))
    rows = conn.execute("SELECT id, role, parts FROM messages WHERE session_id = ? "
                        "ORDER BY created_at, rowid", (session,)).fetchall()
    msgs = [(mid, role, unmarshal(parts)) for mid, role, parts in rows]
    if has_summary:
        s = conn.execute("SELECT summary_message_id FROM sessions WHERE id = ?", (session,)).fetchone()
        ids = [m[0] for m in msgs]
        if s and s[0] and s[0] in ids:
            i = ids.index(s[0])
            msgs = msgs[i:]
            msgs[0] = (msgs[0][0], "user", msgs[0][2])
    return msgs


def request(msgs):
    calls = {d.get("id") for _, role, parts in msgs if role == "assistant"
             for t, d in parts if t == "tool_call"}
    results = {d.get("tool_call_id") for _, role, parts in msgs if role == "tool"
               for t, d in parts if t == "tool_result"}
    out = []
    for _, role, parts in msgs:
        if not parts:
            continue
        tcs = [d for t, d in parts if t == "tool_call"]
        text = (first(parts, "text", "text") or "").strip()
        if role == "assistant":
            if not tcs and not first(parts, "text", "text") and not first(parts, "reasoning", "thinking"):
                continue
            m = {"role": "assistant", "content": text or None}
            if tcs:
                m["tool_calls"] = [{"id": d.get("id", ""), "type": "function",
                                    "function": {"name": d.get("name", ""), "arguments": d.get("input", "")}}
                                   for d in tcs]
            out.append(m)
            for d in tcs:
                if d.get("id") not in results:
                    out.append({"role": "tool", "tool_call_id": d.get("id", ""), "content": SYNTHETIC})
        elif role == "tool":
            for t, d in parts:
                if t == "tool_result" and d.get("tool_call_id") in calls:
                    out.append({"role": "tool", "tool_call_id": d.get("tool_call_id", ""),
                                "content": d.get("content", "") or "[media]"})
        elif role == "user":
            for t, d in parts:
                if t == "shell_command":
                    text = (text + "\n\n" if text else "") + "$ " + d.get("command", "")
            out.append({"role": "user", "content": text or "[file]"})
    out.append({"role": "user", "content": "continue"})
    return {"model": "mock-model", "messages": out}


def provider_checks(body):
    errors = []
    # Anthropic refuses a call answered twice (Crush's Anthropic provider
    # sends consecutive tool messages as one user turn of tool_result
    # blocks); the chat validator does not check it.
    seen = set()
    for i, m in enumerate(body["messages"]):
        if m["role"] == "tool":
            if m["tool_call_id"] in seen:
                errors.append("duplicate_tool_result @messages.%d" % i)
            seen.add(m["tool_call_id"])
    for i, m in enumerate(body["messages"]):
        for j, c in enumerate(m.get("tool_calls") or []):
            f = c["function"]
            if not f["name"]:
                errors.append("empty_tool_name @messages.%d.tool_calls.%d" % (i, j))
            try:
                ok = isinstance(json.loads(f["arguments"]), dict)
            except ValueError:
                ok = False
            if not ok:
                errors.append("arguments_json @messages.%d.tool_calls.%d" % (i, j))
    return errors


def judge(db):
    conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    for (session,) in conn.execute("SELECT DISTINCT session_id FROM messages ORDER BY 1").fetchall():
        line = {"db": db, "session": session}
        try:
            msgs = load(conn, session)
        except LoadError as e:
            line.update(loads=False, error=str(e), valid=False, errors=[])
            print(json.dumps(line))
            continue
        body = request(msgs)
        v = validate(json.dumps(body).encode())
        errors = ["%s @%s" % (e.get("code"), e.get("path")) if isinstance(e, dict) else str(e)
                  for e in v["errors"]] + provider_checks(body)
        line.update(loads=True, error=None, valid=not errors, errors=errors,
                    messages=len(body["messages"]),
                    calls=sorted(c["id"] for m in body["messages"] for c in m.get("tool_calls") or []),
                    results=sorted(m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"))
        print(json.dumps(line))


if __name__ == "__main__":
    for path in sys.argv[1:]:
        judge(path)
