#!/usr/bin/env python3
"""Fresh-session runs: the pinned client writes a new session, offline.

    python3 fresh.py codex OUTDIR [--timeout S] [--no-netns]

Codex: in a throw-away CODEX_HOME, against the loopback mock provider (as oracle.py resumes),
`codex exec --skip-git-repo-check "say hello"`, then `codex exec … resume --last "second prompt"`.
Copies what the client left (the `sessions/` tree and the `*.sqlite` stores) to OUTDIR/codex-home,
and prints one JSON line: the exit codes, the model requests made, and the rollouts written. When a
client bump changes what it writes, the test reading these (tests/codex_today.rs) fails first.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mock_provider  # noqa: E402
import oracle  # noqa: E402

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


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client", choices=["codex"])
    ap.add_argument("outdir")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--no-netns", action="store_true")
    args = ap.parse_args(argv)
    reexec_in_netns(argv)
    return run_codex(args)


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
