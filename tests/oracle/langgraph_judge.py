#!/usr/bin/env python3
"""LangGraph as the judge of chatfsck's LangGraph stores, offline.

Runs in the venv of tests/oracle/langgraph-requirements.txt (target/tools/langgraph, installed by
scripts/test-all), against tests/oracle/mock_provider.py on 127.0.0.1 (OpenAI Chat Completions: a
user message holding `[mock:bash CMD]` is answered with one `bash` tool call, anything else "ok").

    langgraph_judge.py make DIR        write the fixtures with the real library (SqliteSaver):
                                 DIR/checkpoints.sqlite and DIR/pickled.sqlite
    langgraph_judge.py make-pg URL     the same threads with PostgresSaver into the (empty) database
                                 at URL, `torn`: the healthy thread again, its messages blob
                                 cut in half afterwards, and `unblobbed`: the healthy thread
                                 again, its latest messages blob row deleted afterwards
    langgraph_judge.py resume DB       resume every thread of DB through a prebuilt agent
                                 (`create_react_agent`) and assert: no INVALID_CHAT_HISTORY, every
                                 message of the thread's latest checkpoint still there, the call
                                 paused in `interrupt()` still paused (its resume runs the tool), the
                                 call still scheduled runs on `invoke(None)`.
    langgraph_judge.py resume --postgres URL [THREAD…]
                                 the same, with PostgresSaver, for the threads named (all by default)

The threads of checkpoints.sqlite:
  healthy    a call and its result, then an answer
  trimmed    the same, then the ToolMessage removed by a state update (`RemoveMessage`, as message
             trimming does): the AIMessage's call is an orphan, every resume raises
             INVALID_CHAT_HISTORY
  paused     the tool paused in `interrupt()`: pending, never answered
  crashed    the process died between the model's call and the tool step (the tool raised
             SystemExit): the latest checkpoint still sends the call to the tool node, pending
truncated.sqlite: the healthy thread alone, its latest checkpoint's blob cut in half afterwards
(a torn write; the library never writes one).
pickled.sqlite: one thread whose state holds a value msgpack cannot write, with
`JsonPlusSerializer(pickle_fallback=True)`: the whole checkpoint is a pickle.
"""
import json
import os
import sqlite3
import sys
import warnings
from typing import Any

# create_react_agent is deprecated in LangGraph 1.x (moved to langchain.agents) but still there.
warnings.filterwarnings("ignore")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_provider  # noqa: E402

from langchain_core.messages import HumanMessage, RemoveMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402
from langgraph.prebuilt.chat_agent_executor import AgentState  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

CRASH = "crash-now"
# The tool crashes only while the fixtures are made; a resume runs it.
MAKING = False


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    if command.startswith("approve"):
        answer = interrupt({"question": f"run `{command}`?"})
        return f"approved: {answer}"
    if command == CRASH and MAKING:
        raise SystemExit(3)
    return f"ran {command}"


class State(AgentState):
    scratch: Any


class Plain:
    """A value msgpack cannot write: LangGraph pickles it when told to."""

    def __init__(self):
        self.n = 1


def model(port):
    return ChatOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="mock", model="mock-1",
                      max_retries=0, streaming=True)


def agent(port, saver, state_schema=None):
    kw = {"state_schema": state_schema} if state_schema else {}
    return create_react_agent(model(port), [bash], checkpointer=saver, **kw)


def cfg(thread):
    return {"configurable": {"thread_id": thread}}


def threads(g):
    """The four threads of the fixtures, written through the agent `g`."""
    g.invoke({"messages": [HumanMessage("List the files. [mock:bash ls]")]}, cfg("healthy"))

    g.invoke({"messages": [HumanMessage("Show the date. [mock:bash date]")]}, cfg("trimmed"))
    tool_msgs = [x for x in g.get_state(cfg("trimmed")).values["messages"] if isinstance(x, ToolMessage)]
    g.update_state(cfg("trimmed"), {"messages": [RemoveMessage(id=t.id) for t in tool_msgs]})

    g.invoke({"messages": [HumanMessage("Clean up. [mock:bash approve rm -rf build]")]}, cfg("paused"))
    assert g.get_state(cfg("paused")).interrupts, "the paused thread has no interrupt"

    try:
        g.invoke({"messages": [HumanMessage(f"Go. [mock:bash {CRASH}]")]}, cfg("crashed"))
    except SystemExit:
        pass
    else:
        raise AssertionError("the crashing tool did not end the run")


def make_pg(url):
    """The fixtures in PostgreSQL, written by PostgresSaver into an empty database."""
    global MAKING
    MAKING = True
    import tempfile
    with tempfile.TemporaryDirectory() as tmp, mock_provider.MockServer("openai", tmp) as m:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            g = agent(m.port, saver)
            threads(g)
            g.invoke({"messages": [HumanMessage("List the files. [mock:bash ls]")]}, cfg("torn"))
            g.invoke({"messages": [HumanMessage("List the files. [mock:bash ls]")]}, cfg("unblobbed"))
    # A torn write, made after the fact (the library never writes one): the
    # latest messages blob of `torn` cut in half.
    import psycopg
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("""UPDATE checkpoint_blobs b SET blob = substring(b.blob from 1 for length(b.blob) / 2)
                     FROM (SELECT checkpoint -> 'channel_versions' ->> 'messages' AS v FROM checkpoints
                           WHERE thread_id = 'torn' ORDER BY checkpoint_id DESC LIMIT 1) l
                     WHERE b.thread_id = 'torn' AND b.channel = 'messages' AND b.version = l.v""")
        # A lost row (the library never deletes one a checkpoint names): the
        # latest messages blob of `unblobbed`. LangGraph rebuilds the channel
        # from the parent checkpoints' blob and writes.
        c.execute("""DELETE FROM checkpoint_blobs b
                     USING (SELECT checkpoint -> 'channel_versions' ->> 'messages' AS v FROM checkpoints
                            WHERE thread_id = 'unblobbed' ORDER BY checkpoint_id DESC LIMIT 1) l
                     WHERE b.thread_id = 'unblobbed' AND b.channel = 'messages' AND b.version = l.v""")


def make(out):
    global MAKING
    MAKING = True
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, "checkpoints.sqlite")
    pk = os.path.join(out, "pickled.sqlite")
    for p in (db, pk):
        if os.path.exists(p):
            os.remove(p)
    with mock_provider.MockServer("openai", os.path.join(out, ".mock")) as m:
        conn = sqlite3.connect(db, check_same_thread=False)
        saver = SqliteSaver(conn)
        threads(agent(m.port, saver))
        conn.commit()
        conn.close()

        conn = sqlite3.connect(pk, check_same_thread=False)
        saver = SqliteSaver(conn, serde=JsonPlusSerializer(pickle_fallback=True))
        g = agent(m.port, saver, State)
        g.invoke({"messages": [HumanMessage("Hello.")], "scratch": Plain()}, cfg("pickled"))
        conn.commit()
        conn.close()
    # A torn write, made after the fact (the library never writes one): the
    # healthy thread alone, its latest checkpoint cut in half.
    tr = os.path.join(out, "truncated.sqlite")
    if os.path.exists(tr):
        os.remove(tr)
    c = sqlite3.connect(db)
    c.execute("VACUUM INTO ?", (tr,))
    c.close()
    c = sqlite3.connect(tr)
    c.execute("DELETE FROM checkpoints WHERE thread_id != 'healthy'")
    c.execute("DELETE FROM writes WHERE thread_id != 'healthy'")
    c.execute("UPDATE checkpoints SET checkpoint = substr(checkpoint, 1, length(checkpoint) / 2) WHERE thread_id = 'healthy' "
              "AND checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'healthy')")
    c.commit()
    c.close()
    for p in (db, pk, tr):
        c = sqlite3.connect(p)
        c.execute("VACUUM")
        c.close()
    import shutil
    shutil.rmtree(os.path.join(out, ".mock"), ignore_errors=True)


def resume(db, pg=None, only=()):
    """Resume each thread of a (repaired) copy; print one JSON line per thread."""
    if pg:
        import tempfile
        ctx = PostgresSaver.from_conn_string(pg)
        saver = ctx.__enter__()
        with saver._cursor() as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY 1")
            threads = [r["thread_id"] for r in cur.fetchall()]
        mock_dir = tempfile.mkdtemp()
    else:
        conn = sqlite3.connect(db, check_same_thread=False)
        saver = SqliteSaver(conn)
        threads = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY 1")]
        mock_dir = os.path.join(os.path.dirname(os.path.abspath(db)), ".mock")
    if only:
        threads = [t for t in threads if t in only]
    failures = []
    with mock_provider.MockServer("openai", mock_dir) as m:
        g = agent(m.port, saver)
        for t in threads:
            try:
                before = g.get_state(cfg(t))
            except Exception as e:  # noqa: BLE001
                # The checkpointer cannot load the thread (a torn value).
                print(json.dumps({"thread": t, "ok": False, "error": type(e).__name__, "message": str(e)[:300]}),
                      flush=True)
                failures.append(f"{t}: cannot load: {type(e).__name__}")
                continue
            ids = [x.id for x in before.values.get("messages", [])]
            result = {"thread": t, "next": list(before.next), "interrupts": len(before.interrupts),
                      "loaded": len(ids)}
            try:
                if before.interrupts:
                    g.invoke(Command(resume="yes"), cfg(t))
                elif before.next:
                    g.invoke(None, cfg(t))
                else:
                    g.invoke({"messages": [HumanMessage("Go on.")]}, cfg(t))
                after = g.get_state(cfg(t)).values["messages"]
                kept = [x.id for x in after]
                lost = [i for i in ids if i not in kept]
                result.update(ok=not lost, lost=lost, messages=len(after),
                              last=after[-1].type, tool_results=[x.content for x in after if x.type == "tool"])
                if lost:
                    failures.append(f"{t}: lost {lost}")
            except Exception as e:  # noqa: BLE001
                code = getattr(e, "lc_error_code", None) or ("INVALID_CHAT_HISTORY" if "INVALID_CHAT_HISTORY" in str(e) else None)
                result.update(ok=False, error=type(e).__name__, code=code, message=str(e)[:300])
                failures.append(f"{t}: {type(e).__name__} {code}")
            print(json.dumps(result), flush=True)
    if pg:
        ctx.__exit__(None, None, None)
        import shutil
        shutil.rmtree(mock_dir, ignore_errors=True)
    else:
        conn.close()
    return failures


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "make-pg":
        make_pg(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1:3] == ["resume", "--postgres"]:
        bad = resume(None, pg=sys.argv[3], only=tuple(sys.argv[4:]))
        if bad:
            print("FAILED: " + "; ".join(bad), file=sys.stderr)
            sys.exit(1)
    elif len(sys.argv) == 3 and sys.argv[1] == "resume":
        bad = resume(sys.argv[2])
        if bad:
            print("FAILED: " + "; ".join(bad), file=sys.stderr)
            sys.exit(1)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
