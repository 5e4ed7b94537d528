#!/usr/bin/env bash
# Installs the pinned real clients (package.json + package-lock.json beside this script) into
# target/tools/clients/node_modules of the repository.
#   @anthropic-ai/claude-code 2.1.330  (native binary, via its postinstall + optional platform package)
#   @openai/codex             0.169.0  (native binary in @openai/codex-linux-x64)
#   @mariozechner/pi-coding-agent 0.73.1  (pi: plain Node.js, dist/cli.js)
# Idempotent: does nothing when all are already installed at the pinned versions.
# Set CLIENTS_PREFIX to install elsewhere (oracle.py reads the same variable).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prefix="${CLIENTS_PREFIX:-$here/../../target/tools/clients}"
want_cc=2.1.330 want_cx=0.169.0 want_pi=0.73.1
have() { node -e "try{console.log(require('$prefix/node_modules/$1/package.json').version)}catch(e){}" 2>/dev/null; }
ok() {
  [ "$(have @anthropic-ai/claude-code)" = "$want_cc" ] && [ "$(have @openai/codex)" = "$want_cx" ] &&
  [ "$(have @mariozechner/pi-coding-agent)" = "$want_pi" ] &&
  [ -x "$prefix/node_modules/@anthropic-ai/claude-code/bin/claude.exe" ] &&
  ls "$prefix"/node_modules/@openai/codex-*/vendor/*/bin/codex >/dev/null 2>&1
}
if ok; then echo "clients already installed in $prefix/node_modules (claude-code $want_cc, codex $want_cx, pi $want_pi)"; exit 0; fi
if [ "$prefix" != "$here" ]; then mkdir -p "$prefix"; cp "$here/package.json" "$here/package-lock.json" "$prefix/"; fi
cd "$prefix"
npm ci --no-audit --no-fund --loglevel=error
ok || { echo "install incomplete: a client binary is missing" >&2; exit 1; }
echo "installed: claude-code $(have @anthropic-ai/claude-code), codex $(have @openai/codex), pi $(have @mariozechner/pi-coding-agent) in $prefix/node_modules"
