#!/usr/bin/env python3
"""Fresh-session runs: the pinned client writes a new session, offline.

    python3 fresh.py codex|claude|gemini|opencode|cline|copilot|qwen OUTDIR [--timeout S] [--no-netns]
    python3 fresh.py codex-projection OUTDIR --chatfsck BIN [--timeout S] [--no-netns]
    python3 fresh.py codex-fork OUTDIR --chatfsck BIN [--timeout S] [--no-netns]

Codex: in a throw-away CODEX_HOME, against the loopback mock provider (as oracle.py resumes),
`codex exec --skip-git-repo-check "say hello"`, then `codex exec … resume --last "second prompt"`.
Copies what the client left (the `sessions/` tree and the `*.sqlite` stores) to OUTDIR/codex-home,
and prints one JSON line: the exit codes, the model requests made, and the rollouts written. When a
client bump changes what it writes, the test reading these (tests/codex_today.rs) fails first.

Codex's projection (codex-projection): in a throw-away CODEX_HOME, `codex exec "say hello"` (the
client indexes the rollout in thread_history_1.sqlite), then the rollout's first user message is
rewritten shorter, as a hand edit or a sync would; then, in that home: `chatfsck lint --format json`,
`codex exec fork <thread>`, `chatfsck repair --in-place --format json`, `chatfsck lint --format json`
and `codex exec fork <thread>` again. Prints one JSON line with each step's exit code and output.

Claude Code, Gemini CLI, opencode, Cline (its CLI, `cline PROMPT --json`, Cline 4's session store), Copilot CLI
(COPILOT_OFFLINE), Qwen Code (OPENAI_BASE_URL): in a throw-away HOME, against fixtures/clients/mock_provider.py
(a loopback provider that answers a prompt with one tool call, `Read`/`list_directory`/`read`/`view` of
the project, and the tool's result with text), one non-interactive run of PROMPT_TOOL in a project
folder holding README.md. Copies the client's store to OUTDIR/store and prints one JSON line: the
client's version, its exit code, the model requests made, and `store` (the session file, or the
database). tests/fresh_sessions.rs reads them.
"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mock_provider  # noqa: E402
import oracle  # noqa: E402
import qwen  # noqa: E402  (its Node.js 22, beside the client)

PROMPTS = ["say hello", "second prompt"]


def run_codex(args):
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(oracle.CODEX_BIN):
        print(json.dumps({"error": f"{oracle.CODEX_BIN} missing: run install.sh"}))
        return 3
    tmp = tempfile.mkdtemp(prefix="codex-fresh-")
    chome = os.path.join(tmp, "codex-home")
    work = os.path.join(tmp, "work")
    os.makedirs(chome)
    os.makedirs(work)
    runs = []
    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        with open(os.path.join(chome, "config.toml"), "w") as f:
            f.write(f'openai_base_url = "http://127.0.0.1:{mock.port}/v1"\n'
                    'check_for_update_on_startup = false\n'
                    '[analytics]\nenabled = false\n'
                    '[features]\nresponses_websockets = false\nresponses_websockets_v2 = false\n'
                    'enable_request_compression = false\n')
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "CODEX_HOME": chome, "TERM": "dumb",
               "LANG": "C.UTF-8", "CODEX_API_KEY": "sk-test", "TMPDIR": tmp, "NO_COLOR": "1"}
        base = [oracle.NODE, oracle.CODEX_BIN, "exec", "--skip-git-repo-check"]
        for argv in (base + [PROMPTS[0]], base + ["resume", "--last", PROMPTS[1]]):
            rc, timed_out, secs = oracle.run_client(argv, env, work, args.timeout, out)
            runs.append({"rc": rc, "timed_out": timed_out, "seconds": secs})
    dest = os.path.join(out, "codex-home")
    shutil.copytree(os.path.join(chome, "sessions"), os.path.join(dest, "sessions"))
    for db in glob.glob(os.path.join(chome, "*.sqlite*")):
        shutil.copy(db, dest)
    reqs = oracle.load_requests(os.path.join(out, "req"))
    model = [r for r in reqs if r["method"] == "POST" and r["path"].rstrip("/").endswith("/responses")]
    rollouts = sorted(os.path.relpath(p, out) for p in glob.glob(os.path.join(dest, "sessions", "**", "rollout-*"),
                                                                 recursive=True))
    summary = {"client": "codex", "version": oracle.pkg_version("@openai/codex"), "runs": runs,
               "model_requests": len(model), "prompts": PROMPTS, "rollouts": rollouts,
               "netns": os.environ.get("ORACLE_NETNS") == "1"}
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(summary))
    return 0


def codex_env(tmp, chome, port):
    with open(os.path.join(chome, "config.toml"), "w") as f:
        f.write(f'openai_base_url = "http://127.0.0.1:{port}/v1"\n'
                'check_for_update_on_startup = false\n'
                '[analytics]\nenabled = false\n'
                '[features]\nresponses_websockets = false\nresponses_websockets_v2 = false\n'
                'enable_request_compression = false\n')
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "CODEX_HOME": chome, "TERM": "dumb",
            "LANG": "C.UTF-8", "CODEX_API_KEY": "sk-test", "TMPDIR": tmp, "NO_COLOR": "1"}


def run_codex_projection(args):
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(oracle.CODEX_BIN):
        print(json.dumps({"error": f"{oracle.CODEX_BIN} missing: run install.sh"}))
        return 3
    tmp = tempfile.mkdtemp(prefix="codex-projection-")
    chome = os.path.join(tmp, "codex-home")
    work = os.path.join(tmp, "work")
    os.makedirs(chome)
    os.makedirs(work)
    steps = []

    def chatfsck(*argv):
        p = subprocess.run([os.path.abspath(args.chatfsck), *argv], capture_output=True, text=True, cwd=tmp)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = p.stdout
        steps.append({"step": "chatfsck " + argv[0], "rc": p.returncode, "doc": doc, "stderr": p.stderr[-400:]})

    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        env = codex_env(tmp, chome, mock.port)
        base = [oracle.NODE, oracle.CODEX_BIN, "exec", "--skip-git-repo-check"]

        def codex(step, *argv):
            sub = os.path.join(out, step)
            os.makedirs(sub)
            rc, timed_out, secs = oracle.run_client(base + list(argv), env, work, args.timeout, sub)
            err = open(os.path.join(sub, "stderr.txt"), encoding="utf-8", errors="replace").read()
            steps.append({"step": step, "rc": rc, "timed_out": timed_out,
                          "errors": [l[:300] for l in err.splitlines() if "rror" in l][:4]})

        codex("exec", PROMPTS[0])
        rollout = glob.glob(os.path.join(chome, "sessions", "*", "*", "*", "rollout-*.jsonl"))[0]
        lines = open(rollout, "rb").read().split(b"\n")[:-1]
        first = json.loads(lines[0])
        thread = first["payload"]["id"]
        for i, line in enumerate(lines):
            o = json.loads(line)
            pl = o.get("payload") or {}
            if o.get("type") == "response_item" and pl.get("type") == "message" and pl.get("role") == "user" \
                    and len(line) > 200:
                pl["content"] = [{"type": "input_text", "text": "x"}]
                lines[i] = json.dumps(o, separators=(",", ":")).encode()
                break
        open(rollout, "wb").write(b"".join(l + b"\n" for l in lines))
        chatfsck("lint", "--format", "json", rollout)
        codex("fork-before", "fork", thread, "forked prompt")
        chatfsck("repair", "--in-place", "--format", "json", rollout)
        chatfsck("lint", "--format", "json", rollout)
        codex("fork-after", "fork", thread, "forked prompt")
    print(json.dumps({"client": "codex", "version": oracle.pkg_version("@openai/codex"), "thread": thread,
                      "steps": steps, "netns": os.environ.get("ORACLE_NETNS") == "1"}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def run_codex_fork(args):
    """A fork replays the first bytes of its base's rollout (`history_base`). In a throw-away
    CODEX_HOME: `codex exec "say hello"`; a torn line put into the rollout (a crash's residue);
    `codex exec fork <thread>` (its cutoff: the rollout's end); `chatfsck repair --in-place` of
    the base; `codex exec resume` of the fork; the control: the torn line dropped by hand, as a
    repair without the guard would, `codex exec resume` of the fork, and the rollout put back;
    `codex exec resume <thread>` (the base grows past the fork's cutoff); a second torn line put
    among the lines after the cutoff; `chatfsck repair --in-place` of the base again; `codex exec
    resume` of the fork and of the base."""
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if not os.path.exists(oracle.CODEX_BIN):
        print(json.dumps({"error": f"{oracle.CODEX_BIN} missing: run install.sh"}))
        return 3
    tmp = tempfile.mkdtemp(prefix="codex-fork-")
    chome = os.path.join(tmp, "codex-home")
    work = os.path.join(tmp, "work")
    os.makedirs(chome)
    os.makedirs(work)
    steps = []
    torn = b'{"timestamp":"2026-11-29T00:00:00.000Z","type":"response_item","payload":{"type":"mess'

    def lines_of(path):
        return open(path, "rb").read().split(b"\n")[:-1]

    def write(path, lines):
        open(path, "wb").write(b"".join(line + b"\n" for line in lines))

    with mock_provider.MockServer("openai", os.path.join(out, "req")) as mock:
        env = codex_env(tmp, chome, mock.port)
        base = [oracle.NODE, oracle.CODEX_BIN, "exec", "--skip-git-repo-check"]

        def codex(step, *argv):
            sub = os.path.join(out, step)
            os.makedirs(sub)
            rc, timed_out, secs = oracle.run_client(base + list(argv), env, work, args.timeout, sub)
            err = open(os.path.join(sub, "stderr.txt"), encoding="utf-8", errors="replace").read()
            steps.append({"step": step, "rc": rc, "timed_out": timed_out,
                          "errors": [l[:400] for l in err.splitlines() if "rror" in l][:4]})

        codex("exec", PROMPTS[0])
        rollout = glob.glob(os.path.join(chome, "sessions", "*", "*", "*", "rollout-*.jsonl"))[0]
        thread = json.loads(lines_of(rollout)[0])["payload"]["id"]
        lines = lines_of(rollout)
        lines.insert(4, torn)
        write(rollout, lines)
        codex("fork", "fork", thread, "forked prompt")
        forks = [p for p in glob.glob(os.path.join(chome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
                 if p != rollout]
        meta = json.loads(lines_of(forks[0])[0])["payload"] if forks else {}
        def repair():
            p = subprocess.run([os.path.abspath(args.chatfsck), "repair", "--in-place", "--format", "json",
                                rollout], capture_output=True, text=True, cwd=tmp)
            try:
                doc = json.loads(p.stdout)
            except ValueError:
                doc = p.stdout
            steps.append({"step": "chatfsck repair", "rc": p.returncode, "doc": doc, "stderr": p.stderr[-400:]})

        fork_id = meta.get("id", "-")
        repair()
        codex("resume-fork", "resume", fork_id, "after the repair")
        kept = open(rollout, "rb").read()
        write(rollout, [line for line in lines_of(rollout) if line != torn])
        codex("resume-fork-control", "resume", fork_id, "after the hand edit")
        open(rollout, "wb").write(kept)
        codex("resume-base", "resume", thread, PROMPTS[1])
        lines = lines_of(rollout)
        lines.insert(len(lines) - 1, torn)
        write(rollout, lines)
        repair()
        codex("resume-fork-after", "resume", fork_id, "after the second repair")
        codex("resume-base-after", "resume", thread, "after the second repair")
    print(json.dumps({"client": "codex", "version": oracle.pkg_version("@openai/codex"), "thread": thread,
                      "fork": meta, "steps": steps, "netns": os.environ.get("ORACLE_NETNS") == "1"}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


PROMPT_TOOL = "read the readme"
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
GEMINI_BIN = os.environ.get("CHATFSCK_GEMINI_CLI") or os.path.join(ROOT, "target/tools/gemini/node_modules/.bin/gemini")
CLINE_BIN = os.environ.get("CHATFSCK_CLINE_CLI") or os.path.join(ROOT, "target/tools/cline/node_modules/.bin/cline")
COPILOT_BIN = os.environ.get("CHATFSCK_COPILOT_CLI") or os.path.join(ROOT, "target/tools/copilot/node_modules/.bin/copilot")
OPENCODE_BIN = os.environ.get("CHATFSCK_OPENCODE") or os.path.join(ROOT, "target/tools/opencode/node_modules/.bin/opencode")
QWEN_BIN = qwen.BIN


def npm_version(bin_path, package):
    """The version in the package.json of PACKAGE in the node_modules that holds BIN_PATH."""
    d = os.path.dirname(os.path.realpath(bin_path))
    while d != os.path.dirname(d):
        f = os.path.join(d, "node_modules", package, "package.json") if os.path.basename(d) != "node_modules" \
            else os.path.join(d, package, "package.json")
        if os.path.exists(f):
            return json.load(open(f))["version"]
        d = os.path.dirname(d)
    return None


class ToolMock:
    """fixtures/clients/mock_provider.py on a free loopback port; its log of request bodies."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "fixtures/clients/mock_provider.py"),
                                      str(self.port), self.log])
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the mock provider did not start")

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()

    def requests(self, marker):
        if not os.path.exists(self.log):
            return 0
        return sum(1 for line in open(self.log) if marker in json.loads(line)["path"])


def fresh(args, client, version, setup, argv_of, env_of, marker, store_of):
    """One non-interactive run of PROMPT_TOOL in a throw-away home; the store copied to OUTDIR/store."""
    out = os.path.abspath(args.outdir)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tmp = tempfile.mkdtemp(prefix=f"{client}-fresh-")
    home = os.path.join(tmp, "home")
    work = os.path.join(tmp, "work", "shop")
    os.makedirs(home)
    os.makedirs(work)
    with open(os.path.join(work, "README.md"), "w") as f:
        f.write("# shop\nA small shop API.\n")
    with ToolMock(os.path.join(out, "mock.log")) as mock:
        setup(home, work, mock.port)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8",
               "TMPDIR": tmp, "NO_COLOR": "1"}
        env.update(env_of(home, mock.port))
        rc, timed_out, secs = oracle.run_client(argv_of(work), env, work, args.timeout, out)
        requests = mock.requests(marker)
    found = store_of(home)
    store = None
    if found:
        dest = os.path.join(out, "store")
        os.makedirs(dest)
        for f in glob.glob(found + "*"):  # a database's -wal and -shm too
            shutil.copy(f, dest)
        store = os.path.join(dest, os.path.basename(found))
    summary = {"client": client, "version": version, "rc": rc, "timed_out": timed_out, "seconds": secs,
               "model_requests": requests, "prompt": PROMPT_TOOL, "store": store,
               "netns": os.environ.get("ORACLE_NETNS") == "1"}
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(summary))
    return 0


def one(pattern):
    found = sorted(glob.glob(pattern, recursive=True))
    return found[0] if len(found) == 1 else None


def run_claude(args):
    def setup(home, work, port):
        json.dump({"hasCompletedOnboarding": True, "autoUpdates": False, "bypassPermissionsModeAccepted": True},
                  open(os.path.join(home, ".claude.json"), "w"))
    return fresh(args, "claude-code", oracle.pkg_version("@anthropic-ai/claude-code"), setup,
                 lambda work: [oracle.CLAUDE_BIN, "-p", PROMPT_TOOL, "--allowedTools", "Read",
                               "--output-format", "json"],
                 lambda home, port: {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
                                     "ANTHROPIC_API_KEY": "sk-ant-test", "DISABLE_TELEMETRY": "1",
                                     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                                     "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1",
                                     "CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
                 "/v1/messages",
                 lambda home: one(os.path.join(home, ".claude", "projects", "*", "*.jsonl")))


def run_gemini(args):
    def setup(home, work, port):
        os.makedirs(os.path.join(home, ".gemini"))
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                    "general": {"disableAutoUpdate": True, "sessionRetention": {"enabled": False}},
                    "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                    "ide": {"enabled": False}}
        json.dump(settings, open(os.path.join(home, ".gemini", "settings.json"), "w"))
    return fresh(args, "gemini-cli", npm_version(GEMINI_BIN, "@google/gemini-cli"), setup,
                 lambda work: [GEMINI_BIN, "-m", "gemini-2.5-pro", "-p", PROMPT_TOOL, "--output-format", "json"],
                 lambda home, port: {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}"},
                 "GenerateContent",
                 lambda home: one(os.path.join(home, ".gemini", "tmp", "*", "chats", "*.jsonl")))


def run_opencode(args):
    def setup(home, work, port):
        os.makedirs(os.path.join(home, "config", "opencode"))
        config = {"autoupdate": False, "share": "disabled",
                  "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
                                        "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "dummy"},
                                        "models": {"mock-1": {"tool_call": True,
                                                              "limit": {"context": 100000, "output": 4096}}}}}}
        json.dump(config, open(os.path.join(home, "config", "opencode", "opencode.json"), "w"))
    return fresh(args, "opencode", npm_version(OPENCODE_BIN, "opencode-ai"), setup,
                 lambda work: [OPENCODE_BIN, "run", "--model", "mock/mock-1", PROMPT_TOOL],
                 lambda home, port: {"XDG_DATA_HOME": os.path.join(home, "data"),
                                     "XDG_CONFIG_HOME": os.path.join(home, "config"),
                                     "XDG_CACHE_HOME": os.path.join(home, "cache"),
                                     "XDG_STATE_HOME": os.path.join(home, "state"),
                                     "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"},
                 "/chat/completions",
                 lambda home: one(os.path.join(home, "data", "opencode", "opencode*.db")))


def run_cline(args):
    def setup(home, work, port):
        # The provider: an OpenAI-compatible one on the loopback port.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "NO_COLOR": "1"}
        subprocess.run([CLINE_BIN, "auth", "-p", "openai", "-b", f"http://127.0.0.1:{port}/v1", "-k", "sk-test",
                        "-m", "mock-1"], env=env, cwd=work, capture_output=True, timeout=60, check=True)
    return fresh(args, "cline", npm_version(CLINE_BIN, "cline"), setup,
                 lambda work: [CLINE_BIN, PROMPT_TOOL, "--json", "-t", "120"],
                 lambda home, port: {},
                 "/chat/completions",
                 lambda home: one(os.path.join(home, ".cline", "data", "sessions", "*", "*.messages.json")))


def run_copilot(args):
    return fresh(args, "copilot-cli", npm_version(COPILOT_BIN, "@github/copilot"), lambda home, work, port: None,
                 lambda work: [COPILOT_BIN, "-p", PROMPT_TOOL, "--allow-all-tools"],
                 lambda home, port: {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{port}/v1",
                                     "COPILOT_PROVIDER_API_KEY": "dummy", "COPILOT_MODEL": "mock-1",
                                     "COPILOT_AUTO_UPDATE": "false"},
                 "/chat/completions",
                 lambda home: one(os.path.join(home, ".copilot", "session-state", "*", "events.jsonl")))


def run_qwen(args):
    def setup(home, work, port):
        os.makedirs(os.path.join(home, ".qwen"))
        settings = {"security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
                    "model": {"name": "mock-1"}, "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False}, "general": {"disableAutoUpdate": True, "enableAutoUpdate": False},
                    "ide": {"enabled": False}}
        json.dump(settings, open(os.path.join(home, ".qwen", "settings.json"), "w"))
    return fresh(args, "qwen-code", npm_version(QWEN_BIN, "@qwen-code/qwen-code"), setup,
                 lambda work: [qwen.NODE, QWEN_BIN, "-p", PROMPT_TOOL, "--yolo"],
                 lambda home, port: {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "dummy",
                                     "OPENAI_MODEL": "mock-1"},
                 "/chat/completions",
                 lambda home: one(os.path.join(home, ".qwen", "projects", "*", "chats", "*.jsonl")))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client", choices=["codex", "codex-projection", "codex-fork", "claude", "gemini", "opencode", "cline",
                                       "copilot", "qwen"])
    ap.add_argument("outdir")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--no-netns", action="store_true")
    ap.add_argument("--chatfsck", help="the chatfsck binary (codex-projection)")
    args = ap.parse_args(argv)
    oracle.maybe_reexec_in_netns(argv, __file__)
    return {"codex": run_codex, "codex-projection": run_codex_projection, "codex-fork": run_codex_fork, "claude": run_claude, "gemini": run_gemini,
            "opencode": run_opencode, "cline": run_cline, "copilot": run_copilot, "qwen": run_qwen}[args.client](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
