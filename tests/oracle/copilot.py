#!/usr/bin/env python3
"""GitHub Copilot CLI (`@github/copilot` 1.0.102, pinned by scripts/test-all into target/tools/copilot;
CHATFSCK_COPILOT_CLI names its launcher) run offline against the loopback mock with its
bring-your-own-model settings (COPILOT_OFFLINE, COPILOT_PROVIDER_BASE_URL: OpenAI Chat Completions).

    python3 copilot.py fresh OUTDIR [--timeout S] [--no-netns]
    python3 copilot.py resume OUTDIR SESSION/events.jsonl... [--timeout S] [--no-netns] [--jobs N]

fresh: in a throw-away HOME, `copilot -p "say hello [mock:bash echo hi]" --allow-all-tools` (the mock
answers with one `bash` call, Copilot runs it and records its result) then `copilot -p "second prompt"
--continue`; copies `~/.copilot/session-state` to OUTDIR/session-state and prints one JSON line.

resume: each events.jsonl in its own throw-away HOME, copied to `.copilot/session-state/<sessionId>/`
(the session id its `session.start` names), then `copilot -p continue --resume <sessionId>
--allow-all-tools`. The launcher unpacks the client into `$XDG_CACHE_HOME/copilot` on its first run: one
copy, unpacked once into target/tools/copilot-unpacked and kept, serves every session. Prints one JSON line per file:
the client's exit code, the resume request's validity (validate_openai_chat.py), which units of the
file's history the request lacks (a unit: a user or assistant text by hash, a call by id, a result by
call id), `unanswered`: the calls of the request no tool message answers, and `results`: each tool
message's text by its call id.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mock_provider  # noqa: E402
import oracle  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.environ.get("CHATFSCK_COPILOT_CLI") or os.path.join(ROOT, "target/tools/copilot/node_modules/.bin/copilot")
PROMPTS = ["say hello [mock:bash echo hi]", "second prompt"]


def version():
    d = os.path.dirname(os.path.realpath(BIN))
    while d != os.path.dirname(d):
        f = os.path.join(d, "package.json")
        if os.path.exists(f):
            with open(f) as fh:
                p = json.load(fh)
            if p.get("name") == "@github/copilot":
                return p.get("version")
        d = os.path.dirname(d)
    return None


def setup(tmp, port, cache):
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work")
    os.makedirs(home)
    os.makedirs(work)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
           "NO_COLOR": "1", "TMPDIR": tmp, "XDG_CACHE_HOME": cache, "COPILOT_OFFLINE": "true",
           "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{port}/v1", "COPILOT_PROVIDER_API_KEY": "dummy",
           "COPILOT_MODEL": "mock-1", "COPILOT_AUTO_UPDATE": "false"}
    return home, work, env


def unpack(cache):
    """The launcher's first run unpacks the client into CACHE; later runs (side by side) only read it."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cache, "XDG_CACHE_HOME": cache,
           "COPILOT_AUTO_UPDATE": "false"}
    subprocess.run([BIN, "--version"], env=env, capture_output=True, timeout=120, check=False)


def h(s):
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def events(path):
    """Every event the file holds whole (a line that does not parse is left out)."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict):
                out.append(r)
    return out


def file_units(path):
    units = set()
    for e in events(path):
        d = e.get("data") if isinstance(e.get("data"), dict) else {}
        t = e.get("type")
        if t in ("user.message", "assistant.message") and isinstance(d.get("content"), str) and d["content"]:
            units.add(("text", h(d["content"])))
        if t == "assistant.message":
            for r in d.get("toolRequests") or []:
                if isinstance(r, dict):
                    units.add(("call", r.get("toolCallId")))
        if t == "tool.execution_complete":
            units.add(("result", d.get("toolCallId")))
    return units


def request_units(body):
    units, calls, results = set(), [], set()
    for m in (body or {}).get("messages") or []:
        if m.get("role") in ("user", "assistant"):
            c = m.get("content")
            texts = [c] if isinstance(c, str) else [b.get("text") for b in c or [] if isinstance(b, dict)]
            for t in texts:
                if t:
                    units.add(("text", h(t)))
            for c in m.get("tool_calls") or []:
                units.add(("call", c.get("id")))
                calls.append(c.get("id"))
        elif m.get("role") == "tool":
            units.add(("result", m.get("tool_call_id")))
            results.add(m.get("tool_call_id"))
    return units, [c for c in calls if c not in results]


def request_texts(body):
    out = []
    for m in (body or {}).get("messages") or []:
        c = m.get("content")
        out.extend([c] if isinstance(c, str) else [b.get("text") or "" for b in c or [] if isinstance(b, dict)])
    return out


def run_fresh(args):
    cache = tempfile.mkdtemp(prefix="copilot-cache-")
    unpack(cache)

    def start(tmp, port):
        home, work, env = setup(tmp, port, cache)
        base = [BIN, "--allow-all-tools", "-p"]
        return env, work, (base + [PROMPTS[0]], base + [PROMPTS[1], "--continue"]), \
            os.path.join(home, ".copilot", "session-state")
    code = oracle.client_fresh(args, "copilot-cli", version(), BIN, "scripts/test-all", PROMPTS, start)
    shutil.rmtree(cache, ignore_errors=True)
    return code


def session_id(path):
    for e in events(path):
        if e.get("type") == "session.start" and isinstance((e.get("data") or {}).get("sessionId"), str):
            return e["data"]["sessionId"]
    return os.path.basename(os.path.dirname(path))


def resume_one(session, out, timeout, cache, prompt="continue"):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tmp = tempfile.mkdtemp(prefix="copilot-resume-")
    try:
        sid = session_id(session)
        with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
            home, work, env = setup(tmp, mock.port, cache)
            dest = os.path.join(home, ".copilot", "session-state", sid)
            os.makedirs(dest)
            shutil.copy(session, os.path.join(dest, "events.jsonl"))
            argv = [BIN, "--allow-all-tools", "-p", prompt, "--resume", sid]
            rc, timed_out, secs = oracle.run_client(argv, env, work, timeout, out)
            shutil.copy(os.path.join(dest, "events.jsonl"), os.path.join(out, "session-after.jsonl"))
        summary, first_req = oracle.resume_request(out, session, prompt, rc, timed_out, secs)
        if first_req is None:
            summary["stderr"] = oracle.tail(os.path.join(out, "stderr.txt"))
            return summary
        got, unanswered = request_units(first_req["body"])
        sent = request_texts(first_req["body"])
        texts = {h(d["content"]): d["content"] for e in events(session)
                 for d in [e.get("data") if isinstance(e.get("data"), dict) else {}]
                 if isinstance(d.get("content"), str)}
        # Copilot sends a user message wrapped in its own context (`transformedContent`): a text inside a
        # sent text is sent.
        missing = sorted(f"{k}:{x}" for k, x in file_units(session) - got
                         if not (k == "text" and any(texts.get(x, "\0") in t for t in sent)))
        results = {m.get("tool_call_id"): m.get("content") if isinstance(m.get("content"), str) else None
                   for m in first_req["body"].get("messages") or [] if m.get("role") == "tool"}
        summary.update(units_missing=len(missing), missing=missing, unanswered=unanswered, results=results)
        return summary
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# The client unpacked once, beside the pinned install (`pkg/<platform>/<version>/` under it), and kept.
CACHE = os.path.join(ROOT, "target", "tools", "copilot-unpacked")


def run_resume(args):
    if os.path.exists(BIN) and not glob.glob(os.path.join(CACHE, "copilot", "pkg", "*", version() or "?")):
        unpack(CACHE)
    return oracle.resume_all(args, BIN, "scripts/test-all",
                             lambda session, out, timeout: resume_one(session, out, timeout, CACHE))


def main(argv):
    return oracle.client_main(argv, __doc__, __file__, run_fresh, run_resume, 120)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
