#!/usr/bin/env python3
"""Generate an Arize Phoenix trace database for the trace benchmark.

Writes DB (default $BENCH_DIR/phoenix/phoenix.db) in Phoenix's schema (the
CREATE statements of fixtures/traces/phoenix.sql) with `--sessions`
support-bot sessions of 2-8 turns. Each turn is a trace of four spans, as
OpenInference's instrumentation records them: a CHAIN span, an LLM span that
calls a tool, the TOOL span, and an LLM span that answers. Every LLM span
holds its whole prompt (`llm.input_messages`, and the raw request again in
`input.value`), so prompts grow along a session, as they do in a real one.
Every 40th session's last answer was cut by a stream reset (no finish
reason, ERROR status with an exception event). Deterministic for a seed.
The default, 5,100 sessions, is about 102,000 spans and 820 MB;
`--sessions 2000` gives about 300 MB.
"""
import argparse
import json
import os
import random

from genlib import fresh_db, schema
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "fixtures", "traces", "phoenix.sql")

WORDS = ("the order was refunded to the card you paid with and the carrier shows the parcel left the depot "
         "on Monday so it should arrive within three business days unless customs holds it").split()
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Look up an order by id.",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
SYSTEM = ("You are the Acme support assistant. Use the tools to look up orders; never invent order data. "
          + " ".join(WORDS) * 3)


def js(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def oi(role, content=None, call=None, call_id=None):
    m = {"role": role}
    if content is not None:
        m["content"] = content
    if call:
        m["tool_calls"] = [{"tool_call": {"id": call[0], "function": {"name": "lookup_order", "arguments": call[1]}}}]
    if call_id:
        m["tool_call_id"] = call_id
    return {"message": m}


def request(messages):
    out = []
    for m in messages:
        mm = m["message"]
        o = {"role": mm["role"], "content": mm.get("content")}
        if "tool_calls" in mm:
            o["tool_calls"] = [{"id": c["tool_call"]["id"], "type": "function", "function": c["tool_call"]["function"]}
                               for c in mm["tool_calls"]]
        if "tool_call_id" in mm:
            o["tool_call_id"] = mm["tool_call_id"]
        out.append(o)
    return js({"messages": out, "model": "gpt-4o-mini", "stream": True, "tools": TOOLS})


def llm(session, inputs, outputs, finish):
    attrs = {
        "llm": {
            "input_messages": inputs,
            "output_messages": outputs,
            "model_name": "gpt-4o-mini-2024-07-18",
            "invocation_parameters": js({"model": "gpt-4o-mini", "stream": True, "temperature": 0.2}),
            "provider": "openai",
            "system": "openai",
            "tools": [{"tool": {"json_schema": js(t)}} for t in TOOLS],
        },
        "input": {"value": request(inputs), "mime_type": "application/json"},
        "openinference": {"span": {"kind": "LLM"}},
        "session": {"id": session},
    }
    if finish:
        attrs["llm"]["finish_reason"] = finish
    return attrs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=5100)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", default=os.path.join(os.environ.get("BENCH_DIR", "/tmp/chatfsck-bench"), "phoenix", "phoenix.db"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    con = fresh_db(a.out, schema(SCHEMA, "CREATE"))
    con.execute("INSERT INTO projects (id, name) VALUES (1, 'support-bot')")
    span_id = trace_id = 0
    cut = 0
    t = 1_780_000_000.0

    def stamp():
        nonlocal t
        t += rng.uniform(0.01, 2.0)
        return f"2026-07-02 {int(t) % 86400 // 3600:02d}:{int(t) % 3600 // 60:02d}:{t % 60:09.6f}+00:00"

    for s in range(1, a.sessions + 1):
        session = f"sess-{uuid.UUID(int=rng.getrandbits(128)).hex[:12]}"
        start = stamp()
        con.execute("INSERT INTO project_sessions VALUES (?, ?, ?, 1, ?, ?)", (s, session, f"cust-{s}", start, start))
        history = [oi("system", SYSTEM)]
        turns = rng.randint(2, 8)
        broken = s % 40 == 0
        cut += broken
        spans = []
        for turn in range(turns):
            trace_id += 1
            tid = uuid.UUID(int=rng.getrandbits(128)).hex
            question = text(rng, rng.randint(20, 80))
            history.append(oi("user", question))
            call = (f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}", js({"order_id": f"A-{rng.randint(1000, 9999)}"}))
            out1 = [oi("assistant", call=call)]
            result = js({"order": call[1], "status": "refunded", "notes": text(rng, rng.randint(60, 200))})
            answer = text(rng, rng.randint(40, 160))
            last = broken and turn == turns - 1
            t0 = stamp()
            con.execute("INSERT INTO traces VALUES (?, 1, ?, ?, ?, ?)", (trace_id, tid, t0, t0, s))
            chain = f"{rng.getrandbits(64):016x}"
            spans.append((trace_id, chain, None, "support_turn", "CHAIN",
                          {"input": {"value": question}, "openinference": {"span": {"kind": "CHAIN"}}, "session": {"id": session}},
                          "ERROR" if last else "OK"))
            spans.append((trace_id, f"{rng.getrandbits(64):016x}", chain, "ChatCompletion", "LLM",
                          llm(session, list(history), out1, "tool_calls"), "OK"))
            history += out1
            spans.append((trace_id, f"{rng.getrandbits(64):016x}", chain, "lookup_order", "TOOL",
                          {"tool": {"name": "lookup_order"}, "input": {"value": call[1]}, "output": {"value": result},
                           "openinference": {"span": {"kind": "TOOL"}}, "session": {"id": session}}, "OK"))
            history.append(oi("tool", result, call_id=call[0]))
            out2 = [oi("assistant", answer[: len(answer) // 2] if last else answer)]
            spans.append((trace_id, f"{rng.getrandbits(64):016x}", chain, "ChatCompletion", "LLM",
                          llm(session, list(history), out2, None if last else "stop"), "ERROR" if last else "OK"))
            history += out2
        rows = []
        for trace, sid, parent, name, kind, attrs, status in spans:
            span_id += 1
            events = []
            message = ""
            if status == "ERROR":
                message = "httpx.RemoteProtocolError: peer closed connection without sending complete message body"
                events = [{"name": "exception", "attributes": {"exception.message": message}}]
            ts = stamp()
            rows.append((span_id, trace, sid, parent, name, kind, ts, ts, js(attrs), js(events), status, message))
        con.executemany(
            "INSERT INTO spans (id, trace_rowid, span_id, parent_id, name, span_kind, start_time, end_time, attributes, "
            "events, status_code, status_message, cumulative_error_count, cumulative_llm_token_count_prompt, "
            "cumulative_llm_token_count_completion) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0)", rows)
    con.commit()
    con.close()
    print(f"{a.out}: {span_id} spans in {trace_id} traces, {a.sessions} sessions ({cut} with a cut answer), "
          f"{os.path.getsize(a.out) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
