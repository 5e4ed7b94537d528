#!/usr/bin/env python3
"""pi (`@mariozechner/pi-coding-agent`, pinned in package.json) run offline against the loopback mock
(OpenAI Chat Completions, a custom provider in models.json).

    python3 pi.py fresh OUTDIR [--timeout S] [--no-netns]
    python3 pi.py resume OUTDIR SESSION.jsonl... [--timeout S] [--no-netns]

fresh: in a throw-away HOME, `pi -p "say hello [mock:bash echo hi]"` (the mock answers with one `bash`
call, pi runs it and writes its result) then `pi -p --continue "second prompt"`; copies the sessions
directory to OUTDIR/sessions and prints one JSON line.

resume: each SESSION in its own throw-away HOME (the header's `cwd` pointed at the run's work dir, pi
refuses a session whose cwd is gone), `pi -p --session FILE continue`; one run after the other, in one
process (batched: one python start, one mock per file). Prints one JSON line per file: the client's exit
code, the resume request's validity (validate_openai_chat.py), and which units of the file's history the
request lacks (a unit: a user or assistant text by hash, a tool call by id, a tool result by call id;
assistant replies pi does not send by design, `stopReason` error or aborted, are not counted).
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mock_provider  # noqa: E402
import oracle  # noqa: E402

PI_PKG = "@mariozechner/pi-coding-agent"
PI_BIN = os.path.join(oracle.PREFIX, "node_modules", PI_PKG, "dist/cli.js")
# The provider and model the client runs as (CHATFSCK_PI_ORACLE_PROVIDER / _MODEL name others, still served by
# the mock: pi shapes a request by the provider's name, e.g. `deepseek`'s replayed `reasoning_content`).
PROVIDER = os.environ.get("CHATFSCK_PI_ORACLE_PROVIDER") or "mock"
MODEL_ID = os.environ.get("CHATFSCK_PI_ORACLE_MODEL") or "mock-model"
MODEL = ["--provider", PROVIDER, "--model", MODEL_ID]
PROMPTS = ["say hello [mock:bash echo hi]", "second prompt"]


def setup(tmp, port):
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work")
    agent = os.path.join(home, ".pi", "agent")
    os.makedirs(agent)
    os.makedirs(work)
    with open(os.path.join(agent, "models.json"), "w") as f:
        model = {"id": MODEL_ID}
        if MODEL_ID != "mock-model":
            model["reasoning"] = True
        json.dump({"providers": {PROVIDER: {"baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions",
                                            "apiKey": "sk-test", "models": [model]}}}, f)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
           "NO_COLOR": "1", "TMPDIR": tmp, "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    return home, work, agent, env


def h(s):
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def texts(content):
    if isinstance(content, str):
        return [content] if content else []
    return [b.get("text") for b in content or [] if isinstance(b, dict) and b.get("type") == "text" and b.get("text")]


def file_units(path):
    """Units of every message entry of the file that parses (what a whole resume would carry)."""
    units = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if not isinstance(e, dict) or e.get("type") != "message":
                continue
            m = e.get("message") or {}
            role = m.get("role")
            if role == "assistant" and m.get("stopReason") in ("error", "aborted"):
                continue
            if role in ("user", "assistant"):
                units.update(("text", h(t)) for t in texts(m.get("content")))
                for b in m.get("content") or []:
                    if isinstance(b, dict) and b.get("type") == "toolCall":
                        units.add(("call", b.get("id")))
            elif role == "toolResult":
                units.add(("result", m.get("toolCallId")))
    return units


def request_units(body):
    units = set()
    for m in (body or {}).get("messages") or []:
        if m.get("role") in ("user", "assistant"):
            units.update(("text", h(t)) for t in texts(m.get("content")))
            for c in m.get("tool_calls") or []:
                units.add(("call", c.get("id")))
        elif m.get("role") == "tool":
            units.add(("result", m.get("tool_call_id")))
    return units


def run_fresh(args):
    def start(tmp, port):
        home, work, agent, env = setup(tmp, port)
        return env, work, ([oracle.NODE, PI_BIN, "-p"] + MODEL + [PROMPTS[0]],
                           [oracle.NODE, PI_BIN, "-p", "--continue"] + MODEL + [PROMPTS[1]]), \
            os.path.join(agent, "sessions")
    return oracle.client_fresh(args, "pi", oracle.pkg_version(PI_PKG), PI_BIN, "install.sh", PROMPTS, start)


def resume_one(session, out, timeout, prompt="continue"):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tmp = tempfile.mkdtemp(prefix="pi-resume-")
    try:
        with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
            home, work, agent, env = setup(tmp, mock.port)
            sdir = os.path.join(agent, "sessions", "--" + work.lstrip("/").replace("/", "-") + "--")
            os.makedirs(sdir)
            dest = os.path.join(sdir, os.path.basename(session))
            with open(session, "rb") as f:
                data = f.read()
            first, nl, rest = data.partition(b"\n")
            try:
                header = json.loads(first)
                header["cwd"] = work
                first = json.dumps(header, separators=(",", ":")).encode()
            except ValueError:
                pass
            with open(dest, "wb") as f:
                f.write(first + nl + rest)
            argv = [oracle.NODE, PI_BIN, "-p", "--session", dest] + MODEL + [prompt]
            rc, timed_out, secs = oracle.run_client(argv, env, work, timeout, out)
            shutil.copy(dest, os.path.join(out, "session-after.jsonl"))
        summary, first_req = oracle.resume_request(out, session, prompt, rc, timed_out, secs)
        if first_req is None:
            return summary
        want, got = file_units(session), request_units(first_req["body"])
        missing = sorted(f"{k}:{x}" for k, x in want - got)
        results = [m for m in first_req["body"]["messages"] if m.get("role") == "tool"]
        summary.update(units_present=len(want), units_missing=len(missing), missing=missing,
                       no_result_provided=sum(1 for m in results if m.get("content") == "No result provided"))
        return summary
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_resume(args):
    return oracle.resume_all(args, PI_BIN, "install.sh", resume_one)


def main(argv):
    return oracle.client_main(argv, __doc__, __file__, run_fresh, run_resume, 120)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
