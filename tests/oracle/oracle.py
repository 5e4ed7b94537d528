#!/usr/bin/env python3
"""Real-client resume oracles.

    python3 oracle.py claude SESSION.jsonl OUTDIR [--prompt TEXT] [--timeout S] [--keep] [--no-netns]
    python3 oracle.py codex  ROLLOUT.jsonl OUTDIR [...]
(`claude-resume` / `codex-resume` are thin wrappers.)

What it does: puts the session file where the real client looks for it (a throw-away HOME / CODEX_HOME),
starts a mock provider on 127.0.0.1:<free port> in this process, runs the real client's non-interactive
resume with one prompt ("continue"), records every HTTP request, kills what it started, validates the
client's first model request with the provider rules (validate_anthropic.py / validate_openai_responses.py)
and compares the history in the file with the history in the request.

When run as root with `unshare` and `ip` available, the whole run happens in a fresh network namespace
that has only loopback: the client cannot reach anything but the mock.

Prints one JSON line (also OUTDIR/summary.json). OUTDIR gets: req/ (index.jsonl + one file per body),
stdout.txt, stderr.txt, validation.json, request.json (the first model request), session-after.jsonl
(the session file as the client left it). Exit 0 when the harness worked (whatever the verdict), 3 when
it could not run the client.
"""
import argparse
import collections
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mock_provider  # noqa: E402
import validate_anthropic  # noqa: E402
import validate_openai_responses  # noqa: E402
import validate_openai_chat  # noqa: E402

# The pinned clients: where install.sh puts them (target/tools/clients of the repository), or
# CLIENTS_PREFIX.
PREFIX = os.environ.get(
    "CLIENTS_PREFIX", os.path.join(HERE, "..", "..", "target", "tools", "clients")
)
CLAUDE_BIN = os.path.join(PREFIX, "node_modules/@anthropic-ai/claude-code/bin/claude.exe")
CODEX_BIN = os.path.join(PREFIX, "node_modules/@openai/codex/bin/codex.js")
NODE = shutil.which("node") or "node"


def pkg_version(rel):
    try:
        return json.load(open(os.path.join(PREFIX, "node_modules", rel, "package.json")))["version"]
    except Exception:  # noqa: BLE001
        return None


def h(s):
    return hashlib.sha1(s.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def read_jsonl(path):
    """Tolerant reader: returns (records, n_lines, n_bad)."""
    recs, bad, n = [], 0, 0
    data = open(path, "rb").read()
    for line in data.split(b"\n"):
        if not line.strip(b"\x00 \t\r"):
            continue
        n += 1
        try:
            recs.append(json.loads(line.decode("utf-8")))
        except Exception:  # noqa: BLE001
            bad += 1
    return recs, n, bad


# ------------------------------------------------------------------ history units (what was said)

def anthropic_block_units(role, content):
    out = []
    if isinstance(content, str):
        return [("text", role, h(content.strip()))]
    if not isinstance(content, list):
        return out
    for b in content:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            out.append(("text", role, h((b.get("text") or "").strip())))
        elif t == "tool_use":
            out.append(("tool_use", b.get("id")))
        elif t == "tool_result":
            out.append(("tool_result", b.get("tool_use_id")))
        elif t == "thinking":
            out.append(("thinking", h(b.get("signature") or "") + ":" + h(b.get("thinking") or "")))
        elif t == "redacted_thinking":
            out.append(("redacted_thinking", h(b.get("data") or "")))
        elif t == "image":
            out.append(("image", h(json.dumps(b.get("source"), sort_keys=True))))
        else:
            out.append((t, h(json.dumps(b, sort_keys=True))))
    return out


def claude_file_units(records):
    units, nrec = [], 0
    for r in records:
        if not isinstance(r, dict) or r.get("type") not in ("user", "assistant"):
            continue
        m = r.get("message")
        if not isinstance(m, dict):
            continue
        nrec += 1
        units += anthropic_block_units(m.get("role") or r["type"], m.get("content"))
    return units, nrec


def claude_request_units(body):
    units = []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
            units += anthropic_block_units(m["role"], m.get("content"))
    return units


def responses_item_unit(it):
    if not isinstance(it, dict):
        return None
    t = it.get("type") or ("message" if "role" in it else None)
    if t == "message":
        c = it.get("content")
        if isinstance(c, list):
            txt = "\n".join((p.get("text") or "") for p in c if isinstance(p, dict))
        else:
            txt = str(c)
        return ("message", it.get("role"), h(txt.strip()))
    if t in ("function_call", "custom_tool_call", "local_shell_call", "function_call_output", "custom_tool_call_output"):
        return (t, it.get("call_id"))
    if t == "reasoning":
        return ("reasoning", h(it.get("encrypted_content") or json.dumps(it.get("summary"), sort_keys=True)))
    return (t, h(json.dumps({k: v for k, v in it.items() if k != "id"}, sort_keys=True)))


def codex_file_units(records):
    units, n = [], 0
    for r in records:
        if isinstance(r, dict) and r.get("type") == "response_item" and isinstance(r.get("payload"), dict):
            n += 1
            u = responses_item_unit(r["payload"])
            if u:
                units.append(u)
    return units, n


def compare(file_units, req_units):
    present, sent = collections.Counter(file_units), collections.Counter(req_units)
    missing = present - sent
    extra = sent - present
    by_kind = collections.Counter(u[0] for u in missing.elements())
    extra_kind = collections.Counter(u[0] for u in extra.elements())
    return {"units_present": sum(present.values()), "units_sent": sum((present & sent).values()),
            "units_missing": sum(missing.values()), "missing_by_kind": dict(by_kind),
            "extra_in_request": sum(extra.values()), "extra_by_kind": dict(extra_kind),
            "missing_sample": [list(u) for u in list(missing)[:8]]}


# ------------------------------------------------------------------ process handling

def run_client(argv, env, cwd, timeout, out):
    t0 = time.time()
    with open(os.path.join(out, "stdout.txt"), "wb") as so, open(os.path.join(out, "stderr.txt"), "wb") as se:
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        timed_out = False
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = None
        # the client ran in its own process group (pgid == p.pid): end whatever of it is left
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
            time.sleep(0.2)
        if rc is None:
            rc = p.returncode
    return rc, timed_out, round(time.time() - t0, 2)


def load_requests(reqdir):
    reqs = []
    idx = os.path.join(reqdir, "index.jsonl")
    if not os.path.exists(idx):
        return reqs
    for line in open(idx):
        e = json.loads(line)
        e["raw"] = open(os.path.join(reqdir, e["file"]), "rb").read() if e.get("file") else b""
        try:
            e["body"] = json.loads(e["raw"]) if e["raw"] else None
        except Exception:  # noqa: BLE001
            e["body"] = None
        reqs.append(e)
    return reqs


def last_user_text(msgs, role_key="role"):
    for m in reversed(msgs or []):
        if not isinstance(m, dict):
            continue
        if m.get(role_key) == "user" or (m.get("type") == "message" and m.get("role") == "user"):
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return "\n".join((b.get("text") or "") for b in c if isinstance(b, dict))
    return ""


# ------------------------------------------------------------------ Claude Code

def sanitize_project(path):
    return re.sub(r"[^a-zA-Z0-9]", "-", path)


def run_claude(args):
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(CLAUDE_BIN):
        return fail(out, "claude-code", f"{CLAUDE_BIN} missing: run install.sh")
    recs, nlines, nbad = read_jsonl(args.session)
    sid = next((r.get("sessionId") for r in recs if isinstance(r, dict) and r.get("sessionId")), None)
    sid = sid or os.path.splitext(os.path.basename(args.session))[0]
    tmp = tempfile.mkdtemp(prefix="cc-oracle-", dir=args.tmp)
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    proj = os.path.join(home, ".claude", "projects", sanitize_project(os.path.realpath(work)))
    os.makedirs(proj)
    dest = os.path.join(proj, sid + ".jsonl")
    shutil.copyfile(args.session, dest)
    # a config that skips onboarding; nothing in it reaches the network
    json.dump({"hasCompletedOnboarding": True, "autoUpdates": False, "bypassPermissionsModeAccepted": True},
              open(os.path.join(home, ".claude.json"), "w"))
    with mock_provider.MockServer("anthropic", os.path.join(out, "req")) as mock:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
               "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{mock.port}", "ANTHROPIC_API_KEY": "sk-ant-test",
               "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
               "TMPDIR": tmp}
        argv = [CLAUDE_BIN, "-p", "--resume", sid, args.prompt, "--output-format", "json", "--max-turns", "1"]
        rc, timed_out, secs = run_client(argv, env, work, args.timeout, out)
    after = dest
    if os.path.exists(after):
        shutil.copyfile(after, os.path.join(out, "session-after.jsonl"))
    reqs = load_requests(os.path.join(out, "req"))
    model_reqs = [r for r in reqs if r["method"] == "POST" and "/v1/messages" in r["path"] and "count_tokens" not in r["path"]]
    main = next((r for r in model_reqs if isinstance(r["body"], dict) and args.prompt in last_user_text(r["body"].get("messages"))), None)
    if main is None and model_reqs:
        main = max(model_reqs, key=lambda r: len(r["raw"]))
    summary = {"client": "claude-code", "version": pkg_version("@anthropic-ai/claude-code"), "file": args.session,
               "session_id": sid, "rc": rc, "timed_out": timed_out, "seconds": secs, "requests": len(reqs),
               "model_requests": len(model_reqs)}
    res = {}
    try:
        res = json.loads(open(os.path.join(out, "stdout.txt"), "rb").read().decode("utf-8", "replace").strip().splitlines()[-1])
    except Exception:  # noqa: BLE001
        pass
    summary["client_result"] = (res.get("subtype"), res.get("is_error"), str(res.get("result"))[:160]) if res else \
        tail(os.path.join(out, "stdout.txt")) or tail(os.path.join(out, "stderr.txt"))
    file_units, nrec = claude_file_units(recs)
    summary.update({"file_lines": nlines, "file_bad_lines": nbad, "records_present": nrec})
    finish(out, summary, main, validate_anthropic.validate, claude_request_units, file_units, "messages")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return emit(out, summary)


# ------------------------------------------------------------------ Codex

ROLLOUT_RE = re.compile(r"rollout-(\d{4})-(\d{2})-(\d{2})T[\d-]+-([0-9a-f-]{36})\.jsonl$")


def run_codex(args):
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(CODEX_BIN):
        return fail(out, "codex", f"{CODEX_BIN} missing: run install.sh")
    recs, nlines, nbad = read_jsonl(args.session)
    meta = next((r.get("payload") for r in recs if isinstance(r, dict) and r.get("type") == "session_meta"), {}) or {}
    base = os.path.basename(args.session)
    m = ROLLOUT_RE.search(base)
    sid = meta.get("id") or (m.group(4) if m else None)
    ts = meta.get("timestamp") or ""
    y, mo, d = (m.group(1), m.group(2), m.group(3)) if m else (ts[:4] or "2026", ts[5:7] or "01", ts[8:10] or "01")
    if not m:
        base = f"rollout-{y}-{mo}-{d}T00-00-00-{sid}.jsonl"
    tmp = tempfile.mkdtemp(prefix="codex-oracle-", dir=args.tmp)
    chome = os.path.join(tmp, "codex-home")
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    sdir = os.path.join(chome, "sessions", y, mo, d)
    os.makedirs(sdir)
    dest = os.path.join(sdir, base)
    shutil.copyfile(args.session, dest)
    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        with open(os.path.join(chome, "config.toml"), "w") as f:
            f.write(f'openai_base_url = "http://127.0.0.1:{mock.port}/v1"\n'
                    'check_for_update_on_startup = false\n'
                    '[analytics]\nenabled = false\n'
                    '[features]\nresponses_websockets = false\nresponses_websockets_v2 = false\n'
                    'enable_request_compression = false\n')
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "CODEX_HOME": chome, "TERM": "dumb",
               "LANG": "C.UTF-8", "CODEX_API_KEY": "sk-test", "TMPDIR": tmp, "NO_COLOR": "1"}
        argv = [NODE, CODEX_BIN, "exec", "--skip-git-repo-check", "resume", sid or "--last", args.prompt]
        rc, timed_out, secs = run_client(argv, env, work, args.timeout, out)
    if os.path.exists(dest):
        shutil.copyfile(dest, os.path.join(out, "session-after.jsonl"))
    reqs = load_requests(os.path.join(out, "req"))
    model_reqs = [r for r in reqs if r["method"] == "POST" and (r["path"].rstrip("/").endswith("/responses")
                                                                 or r["path"].endswith("/chat/completions"))]
    main = next((r for r in model_reqs if isinstance(r["body"], dict)
                 and args.prompt in last_user_text(r["body"].get("input") or r["body"].get("messages"))), None)
    if main is None and model_reqs:
        main = max(model_reqs, key=lambda r: len(r["raw"]))
    summary = {"client": "codex", "version": pkg_version("@openai/codex"), "file": args.session, "session_id": sid,
               "rc": rc, "timed_out": timed_out, "seconds": secs, "requests": len(reqs), "model_requests": len(model_reqs)}
    summary["client_result"] = client_tail(out)
    file_units, nrec = codex_file_units(recs)
    summary.update({"file_lines": nlines, "file_bad_lines": nbad, "records_present": nrec})
    is_chat = bool(main and main["path"].endswith("/chat/completions"))
    finish(out, summary, main, validate_openai_chat.validate if is_chat else validate_openai_responses.validate,
           (lambda b: []) if is_chat else (lambda b: [u for u in map(responses_item_unit, b.get("input") or []) if u]),
           file_units, "messages" if is_chat else "input")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return emit(out, summary)


def client_tail(out):
    err = open(os.path.join(out, "stderr.txt"), "rb").read().decode("utf-8", "replace")
    lines = [l for l in err.splitlines() if re.search(r"(?i)error|panic|failed|warning: (?!Codex could not find bubblewrap)", l)
             and "Refusing to create helper binaries" not in l and "responses_websocket" not in l]
    so = tail(os.path.join(out, "stdout.txt"))
    return {"stdout_tail": so, "stderr_errors": [l[:240] for l in lines[:6]]}


def tail(path, n=300):
    try:
        return open(path, "rb").read().decode("utf-8", "replace").strip()[-n:]
    except OSError:
        return ""


# ------------------------------------------------------------------ common

def finish(out, summary, main, validator, req_units_fn, file_units, list_key):
    if main is None:
        summary.update({"first_request_items": None, "valid": None, "errors": ["no model request was made"]})
        summary.update(compare(file_units, []))
        return
    open(os.path.join(out, "request.json"), "wb").write(main["raw"])
    v = validator(main["raw"])
    json.dump(v, open(os.path.join(out, "validation.json"), "w"), indent=1)
    body = main["body"] if isinstance(main["body"], dict) else {}
    summary.update({"first_request_file": main.get("file"), "first_request_items": len(body.get(list_key) or []),
                    "valid": v["valid"], "errors": [e["code"] + " @" + e.get("at", "") for e in v["errors"]][:12],
                    "n_errors": len(v["errors"]), "warnings": [w["code"] for w in v.get("warnings", [])][:6]})
    summary.update(compare(file_units, req_units_fn(body)))


def fail(out, client, msg):
    s = {"client": client, "rc": None, "error": msg}
    return emit(out, s, code=3)


def emit(out, summary, code=0):
    summary["netns"] = os.environ.get("ORACLE_NETNS") == "1"
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
    print(json.dumps(summary, ensure_ascii=True))
    return code


def maybe_reexec_in_netns(argv, script=__file__):
    """Re-run SCRIPT (this one by default) with ARGV in a private network namespace with only loopback
    (root + unshare + ip)."""
    if os.environ.get("ORACLE_NETNS") or "--no-netns" in argv:
        return
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        os.environ["ORACLE_NETNS"] = "0"
        return
    env = dict(os.environ, ORACLE_NETNS="1")
    cmd = ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable,
           os.path.abspath(script)] + argv
    try:
        sys.exit(subprocess.call(cmd, env=env))
    except OSError:
        os.environ["ORACLE_NETNS"] = "0"


def chat_completions_posts(out):
    """The Chat Completions requests the mock logged in OUT/req."""
    return [r for r in load_requests(os.path.join(out, "req"))
            if r["method"] == "POST" and r["path"].rstrip("/").endswith("/chat/completions")]


def client_fresh(args, client, version, client_bin, hint, prompts, start):
    """A client oracle's `fresh`: START(tmp, port) -> (env, work, argvs, store) sets up a throw-away home
    for the client against the loopback mock; each argv is run in turn; STORE, the folder the client
    wrote its sessions in, is copied to OUTDIR. One JSON line: the runs and the session files."""
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(client_bin):
        print(json.dumps({"error": f"{client_bin} missing: run {hint}"}))
        return 3
    tmp = tempfile.mkdtemp(prefix=f"{client}-fresh-")
    runs = []
    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        env, work, argvs, store = start(tmp, mock.port)
        for argv in argvs:
            rc, timed_out, secs = run_client(argv, env, work, args.timeout, out)
            runs.append({"rc": rc, "timed_out": timed_out, "seconds": secs})
    name = os.path.basename(store)
    shutil.copytree(store, os.path.join(out, name))
    files = sorted(os.path.relpath(os.path.join(d, f), out)
                   for d, _, fs in os.walk(os.path.join(out, name)) for f in fs)
    print(json.dumps({"client": client, "version": version, "runs": runs,
                      "model_requests": len(chat_completions_posts(out)), "prompts": prompts, "sessions": files,
                      "netns": os.environ.get("ORACLE_NETNS") == "1"}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def resume_request(out, session, prompt, rc, timed_out, secs):
    """After a client resumed SESSION and was sent PROMPT: the summary of the run and the first request
    that carries PROMPT (None when there is none), validated as Chat Completions and kept as
    OUT/request.json."""
    posts = chat_completions_posts(out)
    first_req = next((r for r in posts if prompt in last_user_text((r["body"] or {}).get("messages"))), None)
    summary = {"file": session, "rc": rc, "timed_out": timed_out, "seconds": secs, "model_requests": len(posts)}
    if first_req is None:
        summary.update(valid=False, errors=["no resume request"], units_missing=None)
        return summary, None
    with open(os.path.join(out, "request.json"), "wb") as f:
        f.write(first_req["raw"])
    v = validate_openai_chat.validate(first_req["raw"])
    summary.update(valid=v["valid"], errors=[f"{e.get('code')} @{e.get('path')}" for e in v["errors"]],
                   messages=len(first_req["body"]["messages"]))
    return summary, first_req


def resume_all(args, client_bin, hint, resume_one):
    """A client oracle's `resume`: RESUME_ONE(session, out, timeout) for each session, --jobs side by side,
    one JSON line each, in the sessions' order."""
    import concurrent.futures
    out = os.path.abspath(args.outdir)
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(client_bin):
        print(json.dumps({"error": f"{client_bin} missing: run {hint}"}))
        return 3
    jobs = [(os.path.abspath(s), os.path.join(out, f"{k:02d}")) for k, s in enumerate(args.sessions)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for summary in ex.map(lambda j: resume_one(j[0], j[1], args.timeout), jobs):
            print(json.dumps(summary), flush=True)
    return 0


def client_main(argv, doc, script, run_fresh, run_resume, timeout):
    """A client oracle's command line (pi.py, qwen.py): `fresh OUTDIR`, `resume OUTDIR SESSION... [--jobs N]`."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fresh")
    f.add_argument("outdir")
    r = sub.add_parser("resume")
    r.add_argument("outdir")
    r.add_argument("sessions", nargs="+")
    r.add_argument("--jobs", type=int, default=1)
    for p in (f, r):
        p.add_argument("--timeout", type=float, default=timeout)
        p.add_argument("--no-netns", action="store_true")
    args = ap.parse_args(argv)
    maybe_reexec_in_netns(argv, script)
    return run_fresh(args) if args.cmd == "fresh" else run_resume(args)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client", choices=["claude", "codex"])
    ap.add_argument("session")
    ap.add_argument("outdir")
    ap.add_argument("--prompt", default="continue")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--keep", action="store_true", help="keep the temporary HOME (path in stderr)")
    ap.add_argument("--no-netns", action="store_true")
    ap.add_argument("--tmp", default=None, help="parent of the temporary HOME (default $TMPDIR)")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.session):
        print(json.dumps({"error": f"no such file {args.session}"}))
        return 2
    args.session = os.path.abspath(args.session)
    maybe_reexec_in_netns(argv)
    return run_claude(args) if args.client == "claude" else run_codex(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
