#!/usr/bin/env bash
# The run script of the GitHub Action (action.yml at the repository root):
# build chatfsck from this repository with cargo, lint the given paths, and
# write SARIF for github/codeql-action/upload-sarif. Also runnable by hand
# and by tests (tests/action.rs), with the same environment variables:
#
#   CHATFSCK_PATHS   files or directories to lint, whitespace-separated
#                    (default: .)
#   CHATFSCK_ARGS    more `chatfsck lint` arguments, whitespace-separated
#                    (e.g. `--fail-on warning --ignore seq-gap`)
#   CHATFSCK_SARIF   where to write the SARIF log (default: chatfsck.sarif)
#   CHATFSCK_BIN     a chatfsck binary to use instead of building one
#   GITHUB_ACTION_PATH  this repository (set by GitHub; default: the
#                    folder above this script)
#   GITHUB_OUTPUT    file the step outputs are appended to (set by GitHub)
#
# Outputs: `sarif` (the path written) and `exit-code` (lint's: 0 clean,
# 1 findings at or above --fail-on). Findings do not fail this script, so
# the SARIF is uploaded first; the action's last step fails the job. An
# input chatfsck cannot read (exit 2) fails it at once.
set -euo pipefail

action_path=${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
sarif=${CHATFSCK_SARIF:-chatfsck.sarif}
output=${GITHUB_OUTPUT:-/dev/null}

bin=${CHATFSCK_BIN:-}
if [ -z "$bin" ]; then
    # A release build without the whole-program optimisation the published
    # binaries get: it builds in a fraction of the time, and linting a
    # repository's fixtures takes seconds either way.
    target_dir=${CHATFSCK_TARGET_DIR:-${RUNNER_TEMP:-/tmp}/chatfsck-target}
    echo "::group::Build chatfsck ($(cargo --version))"
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        cargo build --locked --release --bin chatfsck \
        --manifest-path "$action_path/Cargo.toml" --target-dir "$target_dir"
    echo "::endgroup::"
    bin="$target_dir/release/chatfsck"
fi

read -r -a paths <<<"${CHATFSCK_PATHS:-.}"
[ ${#paths[@]} -gt 0 ] || paths=(.)
read -r -a args <<<"${CHATFSCK_ARGS:-}"

set +e
"$bin" lint --format sarif -o "$sarif" --force "${args[@]}" -- "${paths[@]}"
code=$?
set -e

echo "sarif=$sarif" >>"$output"
echo "exit-code=$code" >>"$output"
case $code in
    0) echo "chatfsck: no findings at or above --fail-on in ${paths[*]}" ;;
    1) echo "chatfsck: findings in ${paths[*]}: see $sarif (uploaded to code scanning)" ;;
    *) echo "::error::chatfsck could not check ${paths[*]} (exit $code)"; exit "$code" ;;
esac
