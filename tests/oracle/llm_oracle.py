#!/usr/bin/env python3
"""Simon Willison's `llm` CLI (pinned by tests/oracle/llm-requirements.txt, installed by scripts/test-all into
target/tools/llm) against the loopback mock (mock_provider.py, OpenAI Chat Completions), offline.

  llm_oracle.py LLM make DB       write fixtures/llm/logs.db: one conversation per pattern, each written by the real llm
                           (a model `mock` from extra-openai-models.yaml, a `bash` tool from --functions, the mock
                           answering `[mock:bash CMD]` with a call), then the corruptions derived by SQL (README)
  llm_oracle.py LLM make-store DB   (LLM: llm 0.36, tests/oracle/llm36-requirements.txt) write fixtures/llm/store.db:
                           the same conversations written by llm 0.36 into its message store (messages, parts,
                           threads, turns; migration m023), the corruptions derived by SQL on those tables (README)
  llm_oracle.py LLM verify DB ROWID   (llm 0.32 or later) print one JSON line: of the `messages` rows after ROWID,
                           how many have the hash llm's own `message_hash` gives their content under their parent
                           (`LogStore._load_parts`, as `LogStore.verify` re-derives it), and those that do not
  llm_oracle.py LLM judge DB CID… [DB CID…]…   (a DB is an argument ending in .db)
                           continue each conversation with `llm -c --cid CID --database DB` (llm's command line, run
                           in this process: run this script with the venv's python) and print one JSON line per
                           conversation: llm's exit code, its error's last line, and the request the mock received
                           (its roles, its calls and whether each is answered, OpenAI's structural verdict)

LLM is the llm executable; it runs with LLM_USER_PATH in a temporary directory (nothing of the user's is read).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_provider import MockServer  # noqa: E402
from validate_openai_chat import validate  # noqa: E402

TOOL = "def bash(command: str) -> str:\n    return 'out of ' + command\n"


class Llm:
    def __init__(self, exe, home, port):
        self.exe = exe
        with open(os.path.join(home, "extra-openai-models.yaml"), "w") as f:
            f.write(f"- model_id: mock\n  model_name: mock-model\n  api_base: http://127.0.0.1:{port}/v1\n"
                    "  api_key_name: mock\n  can_stream: true\n  supports_tools: true\n")
        with open(os.path.join(home, "keys.json"), "w") as f:
            json.dump({"mock": "x"}, f)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "LLM_"))}
        self.env["LLM_USER_PATH"] = home

    def __call__(self, *args):
        return subprocess.run([self.exe, *args], env=self.env, capture_output=True, text=True, timeout=60)

    def ok(self, *args):
        r = self(*args)
        if r.returncode != 0:
            sys.exit(f"llm {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return r


def make(exe, out):
    with tempfile.TemporaryDirectory() as home, MockServer("openai", os.path.join(home, "rec")) as m:
        llm = Llm(exe, home, m.port)
        db = os.path.join(home, "logs.db")
        names = ["healthy", "lost-result", "lost-response", "torn-arguments", "interrupted"]
        for name in names:
            # A tool chain: call, result, answer; the conversation goes on with another chain and a plain prompt.
            llm.ok("-m", "mock", "--functions", TOOL, "-s", "Answer briefly.", f"{name}: [mock:bash ls]")
            if name != "interrupted":
                llm.ok("-c", "--functions", TOOL, "[mock:bash pwd]")
                llm.ok("-c", "Thanks.")
        llm.ok("-m", "mock", "A plain question, no tools.")
        con = sqlite3.connect(db)
        cid = {n: con.execute("SELECT id FROM conversations WHERE name LIKE ?", (n + ":%",)).fetchone()[0]
               for n in names}

        def responses(name):
            return [r[0] for r in con.execute(
                "SELECT id FROM responses WHERE conversation_id = ? ORDER BY rowid", (cid[name],))]
        # The result of the second call is lost: its call is unanswered in the middle of the conversation.
        con.execute("DELETE FROM tool_results WHERE response_id = ?", (responses("lost-result")[3],))
        # The response that made the second call is lost: its result answers nothing.
        r = responses("lost-response")[2]
        con.execute("DELETE FROM tool_calls WHERE response_id = ?", (r,))
        con.execute("DELETE FROM tool_responses WHERE response_id = ?", (r,))
        con.execute("DELETE FROM responses WHERE id = ?", (r,))
        # A torn write of the first call's arguments.
        con.execute("UPDATE tool_calls SET arguments = substr(arguments, 1, 10) WHERE response_id = ?",
                    (responses("torn-arguments")[0],))
        # Killed while the tool ran: the call is logged, the response carrying its result never was.
        r = responses("interrupted")[1]
        con.execute("DELETE FROM tool_results WHERE response_id = ?", (r,))
        con.execute("DELETE FROM tool_responses WHERE response_id = ?", (r,))
        con.execute("DELETE FROM responses WHERE id = ?", (r,))
        con.commit()
        con.execute("VACUUM")
        con.close()
        shutil.copy(db, out)


def make_store(exe, out):
    # llm 0.36 logs only into its message store: a thread per conversation (`threads.tip_message_hash`), its
    # messages content-addressed (`messages.hash`, `parent_hash`), their parts (`parts`), one `turns` row per call.
    with tempfile.TemporaryDirectory() as home, MockServer("openai", os.path.join(home, "rec")) as m:
        llm = Llm(exe, home, m.port)
        db = os.path.join(home, "logs.db")
        names = ["healthy", "lost-result", "lost-call", "torn-arguments", "interrupted", "broken-chain",
                 "missing-tip"]
        for name in names:
            llm.ok("-m", "mock", "--functions", TOOL, "-s", "Answer briefly.", f"{name}: [mock:bash ls]")
            llm.ok("-c", "--functions", TOOL, "[mock:bash pwd]")
            llm.ok("-c", "Thanks.")
        llm.ok("-m", "mock", "A plain question, no tools.")
        con = sqlite3.connect(db)
        tid = {n: con.execute("SELECT id FROM threads WHERE name LIKE ?", (n + ":%",)).fetchone()[0] for n in names}

        def chain(name):
            # The thread's messages, root first: (hash, role, part types), as `LogStore.load_chain` walks them.
            h = con.execute("SELECT tip_message_hash FROM threads WHERE id = ?", (tid[name],)).fetchone()[0]
            out = []
            while h is not None:
                role, parent = con.execute("SELECT role, parent_hash FROM messages WHERE hash = ?", (h,)).fetchone()
                types = [t for (t,) in con.execute(
                    "SELECT type FROM parts WHERE message_hash = ? ORDER BY position", (h,))]
                out.append((h, role, types))
                h = parent
            return out[::-1]

        def tools(name):
            return [h for h, role, types in chain(name) if role == "tool"]

        def calls(name):
            return [h for h, role, types in chain(name) if role == "assistant" and "tool_call" in types]
        # The result of the second call is lost: its `tool_result` part is gone, the `tool` message is empty.
        con.execute("DELETE FROM parts WHERE message_hash = ? AND type = 'tool_result'", (tools("lost-result")[1],))
        # The second call is lost: its `tool_call` part is gone, its result answers nothing.
        con.execute("DELETE FROM parts WHERE message_hash = ? AND type = 'tool_call'", (calls("lost-call")[1],))
        # A torn write of the first call's part: its payload cut to 20 characters.
        con.execute("UPDATE parts SET payload = substr(payload, 1, 20) WHERE message_hash = ? AND type = 'tool_call'",
                    (calls("torn-arguments")[0],))
        # Killed while the second tool ran: the call is the thread's tip, its result and the rest never logged.
        c = chain("interrupted")
        at = [h for h, _, _ in c].index(calls("interrupted")[1])
        con.execute("UPDATE threads SET tip_message_hash = ? WHERE id = ?", (c[at][0], tid["interrupted"]))
        for h, _, _ in reversed(c[at + 1:]):
            con.execute("DELETE FROM turns WHERE tip_message_hash = ? OR parent_message_hash = ?", (h, h))
            con.execute("DELETE FROM turn_search WHERE turn_id NOT IN (SELECT id FROM turns)")
            con.execute("DELETE FROM parts WHERE message_hash = ?", (h,))
            con.execute("DELETE FROM messages WHERE hash = ?", (h,))
        # A message in the middle of the chain is lost (its parts with it): the next one's `parent_hash` names
        # nothing. The first answer, after the first tool result.
        c = chain("broken-chain")
        lost = [h for h, role, types in c if role == "assistant" and types == ["text"]][0]
        con.execute("DELETE FROM parts WHERE message_hash = ?", (lost,))
        con.execute("DELETE FROM messages WHERE hash = ?", (lost,))
        # The thread's tip names a message that is not stored (its last message lost).
        c = chain("missing-tip")
        con.execute("DELETE FROM parts WHERE message_hash = ?", (c[-1][0],))
        con.execute("DELETE FROM messages WHERE hash = ?", (c[-1][0],))
        con.commit()
        con.execute("VACUUM")
        con.close()
        shutil.copy(db, out)


def judge(exe, args):
    # In this process, through llm's own command line (click's runner): llm and its plugins are imported once,
    # not once per conversation. `exe` is the llm of the venv this script runs in.
    from click.testing import CliRunner
    with tempfile.TemporaryDirectory() as home, MockServer("openai", os.path.join(home, "rec")) as m:
        llm = Llm(exe, home, m.port)
        os.environ.update(llm.env)
        for k in [k for k in os.environ if k.startswith("OPENAI")]:
            del os.environ[k]
        from llm.cli import cli
        rec = m.rec
        db = None
        for cid in args:
            if cid.endswith(".db"):
                db = cid
                continue
            before = rec.n
            r = CliRunner().invoke(cli, ["-c", "--cid", cid, "--database", db, "One more question."])
            err = repr(r.exception) if r.exception and not isinstance(r.exception, SystemExit) else r.output
            out = {"db": db, "cid": cid, "code": r.exit_code, "error": (err.strip().splitlines() or [""])[-1]}
            if rec.n > before:
                with open(os.path.join(rec.out, f"{before:03d}-POST-v1_chat_completions.json"), "rb") as f:
                    raw = f.read()
                body = json.loads(raw)
                msgs = body["messages"]
                out["roles"] = [mm["role"] for mm in msgs]
                out["calls"] = [c["id"] for mm in msgs for c in mm.get("tool_calls") or []]
                out["results"] = [mm["tool_call_id"] for mm in msgs if mm["role"] == "tool"]
                out["texts"] = [mm["content"] for mm in msgs if isinstance(mm.get("content"), str)]
                v = validate(raw)
                out["valid"] = v["valid"]
                out["errors"] = [e.get("code") for e in v["errors"]]
            print(json.dumps(out), flush=True)


def verify(db_path, after):
    import sqlite_utils
    from llm.logs import LogStore, _load, message_hash
    from llm.parts import Message
    db = sqlite_utils.Database(db_path)
    store = LogStore(db)
    ok, bad = 0, []
    for r in db.query("SELECT rowid, hash, parent_hash, role, provider_metadata FROM messages WHERE rowid > ?",
                      [after]):
        parts = store._load_parts([r["hash"]]).get(r["hash"], [])
        m = Message(role=r["role"], parts=parts, provider_metadata=_load(r["provider_metadata"]))
        if message_hash(m, r["parent_hash"]) == r["hash"]:
            ok += 1
        else:
            bad.append(r["hash"])
    print(json.dumps({"verified": ok, "broken": bad}))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[2] == "make":
        make(sys.argv[1], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[2] == "make-store":
        make_store(sys.argv[1], sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[2] == "verify":
        verify(sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) >= 4 and sys.argv[2] == "judge":
        judge(sys.argv[1], sys.argv[3:])
    else:
        sys.exit(__doc__)
