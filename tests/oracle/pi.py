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
import argparse
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
import validate_openai_chat  # noqa: E402

PI_PKG = "@mariozechner/pi-coding-agent"
PI_BIN = os.path.join(oracle.PREFIX, "node_modules", PI_PKG, "dist/cli.js")
MODEL = ["--provider", "mock", "--model", "mock-model"]
PROMPTS = ["say hello [mock:bash echo hi]", "second prompt"]


def setup(tmp, port):
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work")
    agent = os.path.join(home, ".pi", "agent")
    os.makedirs(agent)
    os.makedirs(work)
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump({"providers": {"mock": {"baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions",
                                          "apiKey": "sk-test", "models": [{"id": "mock-model"}]}}}, f)
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


def model_posts(out):
    return [r for r in oracle.load_requests(os.path.join(out, "req"))
            if r["method"] == "POST" and r["path"].rstrip("/").endswith("/chat/completions")]


def run_fresh(args):
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(PI_BIN):
        print(json.dumps({"error": f"{PI_BIN} missing: run install.sh"}))
        return 3
    tmp = tempfile.mkdtemp(prefix="pi-fresh-")
    runs = []
    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        home, work, agent, env = setup(tmp, mock.port)
        for argv in ([oracle.NODE, PI_BIN, "-p"] + MODEL + [PROMPTS[0]],
                     [oracle.NODE, PI_BIN, "-p", "--continue"] + MODEL + [PROMPTS[1]]):
            rc, timed_out, secs = oracle.run_client(argv, env, work, args.timeout, out)
            runs.append({"rc": rc, "timed_out": timed_out, "seconds": secs})
    shutil.copytree(os.path.join(agent, "sessions"), os.path.join(out, "sessions"))
    files = sorted(os.path.relpath(os.path.join(d, f), out)
                   for d, _, fs in os.walk(os.path.join(out, "sessions")) for f in fs)
    print(json.dumps({"client": "pi", "version": oracle.pkg_version(PI_PKG), "runs": runs,
                      "model_requests": len(model_posts(out)), "prompts": PROMPTS, "sessions": files,
                      "netns": os.environ.get("ORACLE_NETNS") == "1"}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


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
        posts = model_posts(out)
        first_req = next((r for r in posts if prompt in oracle.last_user_text((r["body"] or {}).get("messages"))),
                         None)
        summary = {"file": session, "rc": rc, "timed_out": timed_out, "seconds": secs,
                   "model_requests": len(posts)}
        if first_req is None:
            summary.update(valid=False, errors=["no resume request"], units_missing=None)
            return summary
        with open(os.path.join(out, "request.json"), "wb") as f:
            f.write(first_req["raw"])
        v = validate_openai_chat.validate(first_req["raw"])
        want, got = file_units(session), request_units(first_req["body"])
        missing = sorted(f"{k}:{x}" for k, x in want - got)
        results = [m for m in first_req["body"]["messages"] if m.get("role") == "tool"]
        summary.update(valid=v["valid"], errors=[f"{e.get('code')} @{e.get('path')}" for e in v["errors"]],
                       messages=len(first_req["body"]["messages"]), units_present=len(want),
                       units_missing=len(missing), missing=missing,
                       no_result_provided=sum(1 for m in results if m.get("content") == "No result provided"))
        return summary
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_resume(args):
    out = os.path.abspath(args.outdir)
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(PI_BIN):
        print(json.dumps({"error": f"{PI_BIN} missing: run install.sh"}))
        return 3
    for k, s in enumerate(args.sessions):
        print(json.dumps(resume_one(os.path.abspath(s), os.path.join(out, f"{k:02d}"), args.timeout)), flush=True)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fresh")
    f.add_argument("outdir")
    r = sub.add_parser("resume")
    r.add_argument("outdir")
    r.add_argument("sessions", nargs="+")
    for p in (f, r):
        p.add_argument("--timeout", type=float, default=120)
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
    import subprocess
    env = dict(os.environ, ORACLE_NETNS="1")
    cmd = ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable,
           os.path.abspath(__file__)] + argv
    try:
        sys.exit(subprocess.call(cmd, env=env))
    except OSError:
        os.environ["ORACLE_NETNS"] = "0"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
