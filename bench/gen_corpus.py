#!/usr/bin/env python3
"""Generate the chatfsck benchmark corpus (stdlib only, deterministic).

Writes OUT/corpus/sessions/NN/*.jsonl: OpenAI Chat Completions message
histories (system prompt, user turns, assistant messages with `tool_calls`,
some parallel, `tool` results with long code listings full of escapes and
unicode, some `reasoning_content`). About 5% of the files get exactly one
injected fault, recorded in OUT/manifest.tsv as `file<TAB>rule<TAB>line`
(file relative to OUT/corpus, line 1-based). Every other file is healthy.

The corpus is regenerated only when OUT/corpus.stamp does not match the
parameters and this script's own content (or with --force).

    gen_corpus.py --out DIR [--files N] [--mb MB] [--seed S] [--force]
    gen_corpus.py --out DIR --verify-only     # re-check an existing corpus
"""

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import string
import sys
import time

RULES = [
    "orphan-tool-call",
    "orphan-tool-result",
    "invalid-tool-arguments",
    "corrupt-record",
    "duplicate-tool-call-id",
]
FAULT_RATE = 0.05
MARKER = ".chatfsck-bench-corpus"  # only directories holding this are ever deleted

# --------------------------------------------------------------------------
# Content pools (built once per run from the seed)
# --------------------------------------------------------------------------

WORDS = (
    "cache index buffer parser token stream session record history message "
    "config loader writer reader handle state queue worker batch chunk frame "
    "schema entry node graph router client server request response payload "
    "offset cursor window limit budget retry backoff timeout signal channel "
    "store table column snapshot checkpoint journal ledger digest span trace"
).split()
TYPES = (
    "Config Session Record Message Parser Writer Reader Handle State Queue "
    "Worker Batch Chunk Frame Schema Entry Node Graph Router Client Server "
    "Request Response Payload Cursor Window Budget Channel Store Snapshot"
).split()
COMMENTS = [
    "keep the fast path allocation-free",
    "déjà vu: the naïve version re-read the whole file",
    "see the RFC § 4.2 — “must not” means must not",
    "日本語コメント: キャッシュを更新する",
    "TODO(ops): drop this once the migration lands",
    "this is O(n²) but n ≤ 16 in practice",
    "Ünïcödé paths are valid on every platform we ship",
    "the provider rejects 'null' here, send \"\" instead",
    "tab\tseparated on purpose; do not reformat",
    "emoji in logs are fine 🚀 (the terminal copes)",
    "Ω(n log n) lower bound, so stop trying",
    "Привет: a Russian customer reported this",
    "backslashes in Windows paths: C:\\Users\\dev\\repo",
    "keep in sync with docs/format.md",
]
DIRS = ["src", "src/rules", "src/source", "src/report", "tests", "crates/core/src",
        "lib", "app/models", "pkg/server", "scripts", "web/src/components"]

RUST_T = [
    "use std::collections::{{HashMap, BTreeMap}};",
    "use crate::{w}::{{{T}, {T2}}};",
    "",
    "/// Returns the {w} for the given 'key' (naïve {w2} lookup).",
    "#[derive(Debug, Clone, PartialEq, Eq)]",
    "pub struct {T} {{",
    "    pub {w}: Vec<{T2}>,",
    "    {w2}_count: usize,",
    "}}",
    "impl {T} {{",
    "    pub fn {w}_{w2}(&self, {w3}: &str) -> Result<{T2}, Error> {{",
    "        let {w} = self.{w2}.get(\"{w3}\").ok_or_else(|| anyhow!(\"missing key: {{}}\", \"{w3}\"))?;",
    "        // {c}",
    "        println!(\"{{}} → {{}}\", {w}, {w2});",
    "        let re = Regex::new(r\"^\\s*(\\d+)\\t(.*)$\").unwrap();",
    "        const PATH: &str = \"C:\\\\Users\\\\dev\\\\{w}.toml\";",
    "        if {w}.is_empty() {{ return Ok(Default::default()); }}",
    "        assert_eq!({w}.len(), {n}, \"expected {n} items, got {{}}\", {w}.len());",
    "        let msg = format!(\"fichier « {{}} » introuvable\", path.display());",
    "            .map(|x| x * {n})",
    "            .filter(|s| !s.starts_with('#'))",
    "        s.push_str(\"\\n\");",
    "        log::info!(\"🚀 starting {w} worker #{n}\");",
    "        match {w} {{",
    "            Some(v) => v,",
    "            None => return Err(Error::NotFound(\"{w2}\".into())),",
    "        }}",
    "    }}",
    "    #[inline]",
    "    fn {w}(&mut self) {{ self.{w2}_count += {n}; }}",
    "}}",
    "#[cfg(test)]",
    "mod tests {{",
    "    #[test]",
    "    fn {w}_round_trips() {{",
    "        let j = r#\"{{\"role\": \"user\", \"content\": \"h\\u00e9llo\"}}\"#;",
    "        assert!(serde_json::from_str::<{T}>(j).is_ok());",
    "    }}",
]
PY_T = [
    "import json",
    "from pathlib import Path",
    "from typing import Optional",
    "",
    "class {T}:",
    "    \"\"\"{c}\"\"\"",
    "    def __init__(self, {w}: str, {w2}: int = {n}) -> None:",
    "        self.{w} = {w}",
    "        self._{w2} = {{\"{w3}\": [], 'mode': \"strict\"}}",
    "    def {w}_{w2}(self, path: Path) -> Optional[dict]:",
    "        # {c}",
    "        text = path.read_text(encoding=\"utf-8\")",
    "        for i, line in enumerate(text.split(\"\\n\")):",
    "            if not line.strip():",
    "                continue",
    "            rec = json.loads(line)",
    "            print(f\"{{i:>6}}\\t{{rec.get('role', '?')}} — {{len(line)}} bytes\")",
    "        pattern = r\"^(\\w+)\\s*=\\s*\\\"(.*)\\\"$\"",
    "        return {{\"{w}\": self.{w}, \"n\": {n}, \"ok\": True}}",
    "    @property",
    "    def {w3}(self) -> int:",
    "        return len(self._{w2}) * {n}",
    "",
    "def test_{w}():",
    "    assert {T}(\"ünïcode\").{w} == \"ünïcode\"",
    "    assert json.dumps({{\"q\": \"say \\\"hi\\\"\"}}) == '{{\"q\": \"say \\\\\"hi\\\\\"\"}}'",
]
TS_T = [
    "import {{ {T}, {T2} }} from \"../{w}/{w2}\";",
    "",
    "export interface {T}Props {{",
    "  {w}: string;",
    "  {w2}?: number; // {c}",
    "}}",
    "export function {w}{T2}(props: {T}Props): {T2} {{",
    "  const {w} = props.{w}.replace(/\\\\/g, \"/\").split(\"\\n\");",
    "  console.log(`loaded ${{{w}.length}} {w2} items — ok`);",
    "  if (!{w}.length) throw new Error(\"empty {w2}: \" + JSON.stringify(props));",
    "  return {{ ...props, {w3}: {n}, label: \"Größe «{w}»\" }} as unknown as {T2};",
    "}}",
    "  const re = /^\\s*(\\d+)\\t(.*)$/;",
    "  await fetch(`/api/{w}/${{id}}`, {{ method: \"POST\", body: JSON.stringify({{ q: \"a\\\"b\" }}) }});",
]
LANGS = [("rs", RUST_T), ("py", PY_T), ("ts", TS_T)]

SENTENCES = [
    "The user wants {w} handling fixed in `{p}`.",
    "I should read `{p}` before changing anything.",
    "The failing test suggests the {w} is consumed twice.",
    "Maybe the {w2} index is off by one when the file ends without a newline.",
    "Let me check how `{T}` is constructed in the tests.",
    "The grep output shows three call sites; only one passes the {w} through.",
    "If I change the signature, `{p}` needs updating too.",
    "That explains the panic: the {w2} is empty on the first run.",
    "I'll keep the public API unchanged and fix it internally.",
    "The diff is small; the risk is in the {w} migration path.",
    "Wait — the config uses “smart quotes”, which the parser rejects.",
    "Running the whole suite takes a while, so first the focused test.",
    "The stack trace points at line {n}, inside the {w} loop.",
]
USER_T = [
    "The {w} tests fail since yesterday's merge. Can you look at `{p}` and fix it?",
    "Please add a `--{w}` flag that limits the {w2} size. Keep the default as is.",
    "Why does `{T}::{w}` allocate on every call? Make it faster without changing behaviour.",
    "Refactor `{p}`: split the {w} parsing out of the {w2} writer.",
    "I get this when running the CLI:\n\n```\nthread 'main' panicked at {p}:{n}:9:\ncalled `Option::unwrap()` on a `None` value — “{w}” missing\nnote: run with `RUST_BACKTRACE=1`\n```\nWhat's wrong?",
    "Add unit tests for the {w} edge cases (empty input, ünïcode, very long lines).",
    "Rename `{w}` to `{w2}_{w}` everywhere and update the docs.",
    "Can you explain what `{p}` does and whether the {w} cache is still needed?",
    "CI says: `error[E0502]: cannot borrow *self as mutable` in {p}. Fix please.",
    "Ok, now run the full test suite and summarise the failures.",
    "Looks good. One more thing: the {w} log line should include the {w2} id.",
]
FINAL_T = [
    "Done. I changed `{p}` so the {w} is computed once:\n\n- `{T}::{w}` now borrows instead of cloning\n- the {w2} loop stops at the first match\n- added a test for the empty case\n\n```{lang}\n{code}\n```\n\nAll {n} tests pass.",
    "The problem was in `{p}`: the {w2} offset was taken before the BOM was stripped, so every location was off by 3 bytes. Fixed, with a regression test (`{w}_round_trips`).",
    "Summary of the failures:\n\n| test | cause |\n|---|---|\n| `{w}_basic` | stale fixture |\n| `{w2}_unicode` | “smart quotes” in the snapshot |\n\nBoth are fixed now; `cargo test` is green.",
    "`{p}` loads the {w} lazily and keeps it in a `HashMap<String, {T}>`. The cache is still needed: without it each request re-parses {n} files.",
]


def fill(rng, tmpl, **extra):
    d = {
        "w": rng.choice(WORDS), "w2": rng.choice(WORDS), "w3": rng.choice(WORDS),
        "T": rng.choice(TYPES), "T2": rng.choice(TYPES), "c": rng.choice(COMMENTS),
        "n": rng.randint(2, 4096),
    }
    d.update(extra)
    return tmpl.format(**d)


class Pools:
    """Pre-rendered lines of code, so that generating 300 MB stays fast."""

    def __init__(self, seed):
        rng = random.Random(seed * 7919 + 17)
        self.code = {}
        for ext, tmpl in LANGS:
            # Walk the templates in order with random jumps: reads like code.
            lines, at = [], 0
            for _ in range(6000):
                if rng.random() < 0.15:
                    at = rng.randrange(len(tmpl))
                lines.append(fill(rng, tmpl[at % len(tmpl)]))
                at += 1
            self.code[ext] = lines
        self.paths = {}
        for ext, _ in LANGS:
            self.paths[ext] = [
                f"{rng.choice(DIRS)}/{rng.choice(WORDS)}_{rng.choice(WORDS)}.{ext}" for _ in range(400)
            ]

    def listing(self, rng, ext, nlines, numbered=True):
        pool = self.code[ext]
        start = rng.randrange(len(pool) - nlines) if nlines < len(pool) else 0
        lines = pool[start:start + nlines]
        if numbered:
            first = rng.randint(1, 300)
            return "\n".join(f"{i:6}\t{l}" for i, l in enumerate(lines, first))
        return "\n".join(lines)


# --------------------------------------------------------------------------
# One conversation
# --------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits


class Conv:
    def __init__(self, rng, pools, target, compact, ascii_only):
        self.rng = rng
        self.pools = pools
        self.target = target
        self.entries = []  # [message dict, serialized line, turn number]
        self.size = 0
        self.ids = set()
        self.compact = compact
        self.ascii_only = ascii_only
        self.ext = rng.choice(["rs", "rs", "py", "ts"])

    def dumps(self, m):
        if self.compact:
            return json.dumps(m, ensure_ascii=self.ascii_only, separators=(",", ":"))
        return json.dumps(m, ensure_ascii=self.ascii_only)

    def add(self, m, turn):
        s = self.dumps(m)
        self.entries.append([m, s, turn])
        self.size += len(s) + 1

    def new_id(self):
        while True:
            i = "call_" + "".join(self.rng.choices(ALNUM, k=24))
            if i not in self.ids:
                self.ids.add(i)
                return i

    def path(self):
        return self.rng.choice(self.pools.paths[self.ext])

    def remaining(self):
        return max(self.target - self.size, 0)

    def text(self, tmpl, **kw):
        return fill(self.rng, tmpl, p=self.path(), **kw)

    def reasoning(self):
        return " ".join(self.text(self.rng.choice(SENTENCES)) for _ in range(self.rng.randint(2, 9)))

    # --- tools -----------------------------------------------------------
    def out_lines(self):
        """How many code lines a tool output gets, bounded by what is left."""
        want = int(self.rng.lognormvariate(4.3, 0.8))  # median ~75 lines
        budget = max(self.remaining() // 70, 12)
        return max(3, min(want, budget, 1500))

    def tool_call(self):
        rng = self.rng
        r = rng.random()
        p = self.path()
        if r < 0.45:
            name, args = "read_file", {"path": p}
            out = self.pools.listing(rng, self.ext, self.out_lines())
        elif r < 0.65:
            pat = rng.choice(WORDS)
            name, args = "grep", {"pattern": f"fn {pat}|{pat}\\(", "path": p.rsplit("/", 1)[0]}
            out = "\n".join(
                f"{self.path()}:{rng.randint(1, 900)}:{l.strip()}"
                for l in self.pools.listing(rng, self.ext, self.out_lines() // 2 + 1, numbered=False).split("\n")
            )
        elif r < 0.82:
            cmd = rng.choice(["cargo test --quiet", "git diff --stat HEAD~1", "git diff", "ls -la src",
                              "pytest -q tests/", "npm run lint", "cat Cargo.toml"])
            name, args = "run_shell", {"command": cmd, "timeout": rng.choice([30, 60, 120])}
            body = self.pools.listing(rng, self.ext, self.out_lines(), numbered=False)
            if cmd == "git diff":
                body = "diff --git a/{0} b/{0}\n--- a/{0}\n+++ b/{0}\n@@ -1,9 +1,12 @@\n".format(p) + "\n".join(
                    rng.choice("+- ") + l for l in body.split("\n"))
            out = f"$ {cmd}\n{body}\n[exit status 0, {rng.randint(1, 9000)} ms]"
        elif r < 0.92:
            code = self.pools.listing(rng, self.ext, max(3, self.out_lines() // 2), numbered=False)
            name, args = "write_file", {"path": p, "content": code}
            out = json.dumps({"status": "ok", "path": p, "bytes_written": len(code.encode()),
                              "note": "created — «ok»"}, ensure_ascii=False)
        elif r < 0.97:
            old = self.pools.listing(rng, self.ext, rng.randint(1, 6), numbered=False)
            new = self.pools.listing(rng, self.ext, rng.randint(1, 8), numbered=False)
            name, args = "edit_file", {"path": p, "old_string": old, "new_string": new}
            out = f"Edited {p}: replaced 1 occurrence ({len(old)} → {len(new)} bytes)."
        else:
            # A failed call with arguments that never repeat (no failing-call loop).
            missing = f"{p.rsplit('.', 1)[0]}_{''.join(self.rng.choices(string.ascii_lowercase, k=8))}.{self.ext}"
            name, args = "read_file", {"path": missing}
            out = f"Error: no such file or directory: '{missing}'"
        call = {"id": self.new_id(), "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=rng.random() < 0.5)}}
        return call, name, out

    # --- messages --------------------------------------------------------
    def system(self):
        tools = ", ".join(["read_file(path)", "grep(pattern, path)", "run_shell(command, timeout)",
                           "write_file(path, content)", "edit_file(path, old_string, new_string)"])
        parts = [
            "You are a careful coding agent working in a Git repository. "
            f"Available tools: {tools}. Always read a file before editing it. "
            "Answer in the user's language; keep “quotes” and ünïcode intact.",
            "# Repository conventions\n" + "\n".join(
                f"- {self.text(self.rng.choice(SENTENCES))}" for _ in range(self.rng.randint(8, 40))),
            "# Environment\n```json\n" + json.dumps(
                {"cwd": "/home/dev/" + self.rng.choice(WORDS), "os": "linux", "shell": "bash",
                 "git": {"branch": "main", "dirty": False}}, indent=2) + "\n```",
        ]
        return {"role": "system", "content": "\n\n".join(parts)}

    def user(self):
        t = self.text(self.rng.choice(USER_T))
        if self.rng.random() < 0.15:
            t += "\n\nHere is the file:\n```\n" + self.pools.listing(
                self.rng, self.ext, min(self.out_lines(), 120), numbered=False) + "\n```"
        if self.rng.random() < 0.1:
            return {"role": "user", "content": [{"type": "text", "text": t}]}
        return {"role": "user", "content": t}

    def final(self):
        lang = {"rs": "rust", "py": "python", "ts": "typescript"}[self.ext]
        code = self.pools.listing(self.rng, self.ext, self.rng.randint(3, 25), numbered=False)
        m = {"role": "assistant", "content": self.text(self.rng.choice(FINAL_T), lang=lang, code=code)}
        if self.rng.random() < 0.3:
            m["reasoning_content"] = self.reasoning()
        return m

    def round(self, turn):
        rng = self.rng
        r = rng.random()
        n = 1 if r < 0.78 else (2 if r < 0.93 else 3)
        calls = [self.tool_call() for _ in range(n)]
        m = {"role": "assistant"}
        c = rng.random()
        if c < 0.5:
            m["content"] = None
        elif c < 0.7:
            m["content"] = ""
        else:
            m["content"] = self.text(rng.choice(["Let me look at `{p}`.", "I'll check the {w} code first.",
                                                 "Running the tests to see the current state.",
                                                 "Now I'll update `{p}` — carefully."]))
        if rng.random() < 0.3:
            m["reasoning_content"] = self.reasoning()
        m["tool_calls"] = [c for c, _, _ in calls]
        self.add(m, turn)
        order = list(range(n))
        if n > 1 and rng.random() < 0.25:
            rng.shuffle(order)
        for i in order:
            call, name, out = calls[i]
            t = {"role": "tool", "tool_call_id": call["id"]}
            if rng.random() < 0.5:
                t["name"] = name
            t["content"] = out
            self.add(t, turn)

    def build(self):
        rng = self.rng
        self.add(self.system(), 0)
        turn = 0
        while True:
            turn += 1
            self.add(self.user(), turn)
            rounds = rng.randint(1, 8)
            for r in range(rounds):
                self.round(turn)
                if self.size >= self.target:
                    break
            self.add(self.final(), turn)
            if self.size >= self.target and turn >= 2:
                break
        self.turns = turn


# --------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------

def tool_windows(entries):
    """(assistant index, [tool indexes]) for each assistant message with calls."""
    out = []
    for i, (m, _, _) in enumerate(entries):
        if m["role"] == "assistant" and m.get("tool_calls"):
            j = i + 1
            tools = []
            while j < len(entries) and entries[j][0]["role"] == "tool":
                tools.append(j)
                j += 1
            out.append((i, tools))
    return out


def inject(conv, rule, rng):
    """Apply one fault; return the 1-based line it must be reported on."""
    E = conv.entries
    wins = tool_windows(E)
    if rule == "orphan-tool-call":
        # The last tool round of a turn that is not the last turn.
        last_turn = E[-1][2]
        last_of_turn = {E[a][2]: (a, t) for a, t in wins}
        cands = [w for turn, w in sorted(last_of_turn.items()) if turn < last_turn]
        a, tools = rng.choice(cands)
        call = rng.choice(E[a][0]["tool_calls"])
        answer = next(j for j in tools if E[j][0]["tool_call_id"] == call["id"])
        # The user interrupted: the result was never written and the turn
        # stopped there (its final answer is gone too); the next record is
        # the user's next message.
        nxt = tools[-1] + 1
        end = nxt
        while E[end][0]["role"] != "user":
            end += 1
        del E[nxt:end]
        del E[answer]
        target = E[a]
    elif rule == "orphan-tool-result":
        _, tools = rng.choice(wins)
        at = rng.choice(tools) + 1
        m = {"role": "tool", "tool_call_id": conv.new_id(),
             "content": conv.pools.listing(rng, conv.ext, rng.randint(5, 60))}
        E.insert(at, [m, None, E[at - 1][2]])
        target = E[at]
    elif rule == "invalid-tool-arguments":
        a, _ = rng.choice(wins)
        call = rng.choice(E[a][0]["tool_calls"])
        s = call["function"]["arguments"]
        cut = rng.randint(max(1, len(s) // 2), len(s) - 2)
        call["function"]["arguments"] = s[:cut]
        target = E[a]
    elif rule == "duplicate-tool-call-id":
        i, j = sorted(rng.sample(range(len(wins)), 2))
        (a1, _), (a2, tools2) = wins[i], wins[j]
        first = rng.choice(E[a1][0]["tool_calls"])
        later = rng.choice(E[a2][0]["tool_calls"])
        answer = next(k for k in tools2 if E[k][0]["tool_call_id"] == later["id"])
        E[answer][0]["tool_call_id"] = first["id"]
        later["id"] = first["id"]
        target = E[a2]
    elif rule == "corrupt-record":
        return None  # applied on the serialized text
    else:
        raise ValueError(rule)
    return next(n for n, e in enumerate(E, 1) if e is target)


def write_conv(conv, path, rule, rng):
    line = inject(conv, rule, rng) if rule else None
    lines = [conv.dumps(m) if (rule and rule != "corrupt-record") or s is None else s
             for m, s, _ in conv.entries]
    if rule == "corrupt-record":
        last = lines[-1]
        lines[-1] = last[:rng.randint(len(last) // 3, len(last) - 2)]
        line = len(lines)
        data = "\n".join(lines)  # torn tail: no final newline
    else:
        data = "\n".join(lines) + "\n"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(data)
    return line, len(data.encode("utf-8"))


# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------

def plan(args):
    """File names, target sizes and faults: all decided by the seed."""
    rng = random.Random(args.seed)
    n = args.files
    mean = args.mb * 1e6 / n
    raw = [math.exp(rng.uniform(math.log(0.2), math.log(4.0))) for _ in range(n)]
    scale = n * mean / sum(raw)
    sizes = [int(r * scale) for r in raw]
    k = min(n, max(len(RULES), round(n * FAULT_RATE)))
    faulty = rng.sample(range(n), k)
    rules = []
    while len(rules) < k:
        r = RULES[:]
        rng.shuffle(r)
        rules += r
    faults = dict(zip(faulty, rules))
    projects = ["atlas", "borealis", "cinder", "dynamo", "ember", "fjord", "gantry", "harbor"]
    names = [f"sessions/{i // 100:02d}/{projects[i % len(projects)]}-{i:05d}.jsonl" for i in range(n)]
    return names, sizes, faults


def stamp_of(args):
    me = open(os.path.abspath(__file__), "rb").read()
    return {"files": args.files, "mb": args.mb, "seed": args.seed,
            "generator_sha256": hashlib.sha256(me).hexdigest()}


def generate(args, out):
    corpus = os.path.join(out, "corpus")
    tmp = corpus + ".tmp"
    for d in (tmp, corpus):
        if os.path.exists(d):
            if not os.path.exists(os.path.join(d, MARKER)):
                sys.exit(f"gen_corpus: {d} exists and was not made by this script; remove it yourself")
            shutil.rmtree(d)
    os.makedirs(tmp)
    open(os.path.join(tmp, MARKER), "w").close()
    names, sizes, faults = plan(args)
    pools = Pools(args.seed)
    manifest = []
    total = 0
    t0 = time.time()
    for i, (name, size) in enumerate(zip(names, sizes)):
        rng = random.Random(f"{args.seed}:{i}")
        conv = Conv(rng, pools, size, compact=rng.random() < 0.5, ascii_only=rng.random() < 0.3)
        conv.build()
        path = os.path.join(tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        rule = faults.get(i)
        line, nbytes = write_conv(conv, path, rule, random.Random(f"{args.seed}:fault:{i}"))
        total += nbytes
        if rule:
            manifest.append((name, rule, line))
        if (i + 1) % 500 == 0 or i + 1 == len(names):
            print(f"  generated {i + 1}/{len(names)} files, {total / 1e6:.0f} MB "
                  f"({time.time() - t0:.0f} s)", file=sys.stderr)
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        for name, rule, line in sorted(manifest):
            f.write(f"{name}\t{rule}\t{line}\n")
    os.rename(tmp, corpus)
    return total


# --------------------------------------------------------------------------
# Verification: healthy files really are healthy, faults are where recorded
# --------------------------------------------------------------------------

MARKUP = ["<|tool_call_begin|>", "<|tool_calls_section_begin|>", "<｜tool▁calls▁begin｜>",
          "<｜tool▁call▁begin｜>", "[TOOL_CALLS]", "<function=", "<tool_call>", "<function_calls>"]
ERROR_HEADS = ("error", "<system>error", "{\"error\"", "failed", "exception")


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content)


def check_healthy(path):
    """Return a list of problems (empty when the file is healthy)."""
    probs = []
    data = open(path, "rb").read()
    if not data.endswith(b"\n"):
        probs.append("no final newline")
    msgs = []
    for n, raw in enumerate(data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"), 1):
        try:
            msgs.append((n, json.loads(raw)))
        except ValueError as e:
            probs.append(f"line {n}: not JSON ({e})")
            return probs
    roles = [m["role"] for _, m in msgs]
    first = next((r for r in roles if r not in ("system", "developer")), None)
    if first != "user":
        probs.append(f"first non-system message is {first}")
    ids = set()
    failed_sigs = {}
    i = 0
    while i < len(msgs):
        n, m = msgs[i]
        role = m["role"]
        calls = m.get("tool_calls") or []
        if role == "tool":
            probs.append(f"line {n}: tool message outside a call window")
        if role != "tool" and not calls and not text_of(m.get("content")).strip():
            probs.append(f"line {n}: empty {role} message")
        if role == "assistant":
            for blob in (text_of(m.get("content")), m.get("reasoning_content") or ""):
                for tok in MARKUP:
                    if tok in blob:
                        probs.append(f"line {n}: tool-call markup {tok!r} in assistant text")
        if calls:
            want = {}
            for c in calls:
                if c["id"] in ids:
                    probs.append(f"line {n}: duplicate id {c['id']}")
                ids.add(c["id"])
                want[c["id"]] = c
                try:
                    a = json.loads(c["function"]["arguments"])
                    if not isinstance(a, dict):
                        probs.append(f"line {n}: arguments not an object")
                except ValueError:
                    probs.append(f"line {n}: arguments not JSON")
            got = []
            for k in range(len(calls)):
                if i + 1 + k >= len(msgs) or msgs[i + 1 + k][1]["role"] != "tool":
                    break
                t = msgs[i + 1 + k][1]
                got.append(t["tool_call_id"])
                if not text_of(t.get("content")).strip():
                    probs.append(f"line {msgs[i + 1 + k][0]}: empty tool result")
                c = want.get(t["tool_call_id"])
                if c and text_of(t.get("content")).lstrip()[:16].lower().startswith(ERROR_HEADS):
                    sig = (c["function"]["name"], c["function"]["arguments"])
                    failed_sigs[sig] = failed_sigs.get(sig, 0) + 1
                    if failed_sigs[sig] >= 2:
                        probs.append(f"line {n}: the same failing call repeats")
            if sorted(got) != sorted(want):
                probs.append(f"line {n}: calls not answered right after ({len(got)}/{len(want)})")
            i += 1 + len(got)
            continue
        i += 1
    return probs


def check_fault(path, rule, line):
    """Why the recorded fault is not what it claims (None when it is)."""
    data = open(path, "rb").read()
    raw = data.split(b"\n")
    if data.endswith(b"\n"):
        raw.pop()
    if not 1 <= line <= len(raw):
        return "line out of range"
    if rule == "corrupt-record":
        if data.endswith(b"\n") or line != len(raw):
            return "not a torn last line"
        try:
            json.loads(raw[-1])
            return "the last line still parses"
        except ValueError:
            return None
    msgs = [json.loads(r) for r in raw]
    m = msgs[line - 1]
    calls = m.get("tool_calls") or []
    before = [c["id"] for x in msgs[:line - 1] for c in x.get("tool_calls") or []]
    results = [x.get("tool_call_id") for x in msgs if x["role"] == "tool"]
    if rule == "orphan-tool-call":
        j = line
        while j < len(msgs) and msgs[j]["role"] == "tool":
            j += 1
        if not any(c["id"] not in results for c in calls):
            return "every call is answered"
        if j >= len(msgs) or msgs[j]["role"] != "user":
            return "no user message after the call's results"
    elif rule == "orphan-tool-result":
        if m["role"] != "tool" or m["tool_call_id"] in before:
            return "not a tool result with an unknown id"
    elif rule == "invalid-tool-arguments":
        for c in calls:
            try:
                json.loads(c["function"]["arguments"])
            except ValueError:
                return None
        return "all arguments parse"
    elif rule == "duplicate-tool-call-id":
        if not any(c["id"] in before and c["id"] in results for c in calls):
            return "no answered call reuses an earlier id"
    return None


def verify(out):
    corpus = os.path.join(out, "corpus")
    manifest = {}
    for row in open(os.path.join(out, "manifest.tsv")):
        name, rule, line = row.rstrip("\n").split("\t")
        manifest[name] = (rule, int(line))
    bad = 0
    files = 0
    for root, _, fnames in os.walk(corpus):
        for fn in fnames:
            if not fn.endswith(".jsonl"):
                continue
            files += 1
            path = os.path.join(root, fn)
            rel = os.path.relpath(path, corpus)
            if rel in manifest:
                rule, line = manifest[rel]
                why = check_fault(path, rule, line)
                if why:
                    print(f"  {rel}: {rule} at line {line}: {why}", file=sys.stderr)
                    bad += 1
                continue
            probs = check_healthy(path)
            if probs:
                bad += 1
                print(f"  {rel}: NOT healthy: {'; '.join(probs[:5])}", file=sys.stderr)
    missing = [m for m in manifest if not os.path.exists(os.path.join(corpus, m))]
    for m in missing:
        print(f"  manifest names a missing file: {m}", file=sys.stderr)
    print(f"verified {files} files: {files - len(manifest)} healthy, {len(manifest)} with a fault, "
          f"{bad + len(missing)} problems", file=sys.stderr)
    return bad == 0 and not missing


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("BENCH_DIR", "/tmp/chatfsck-bench"))
    ap.add_argument("--files", type=int, default=int(os.environ.get("BENCH_FILES", 3000)))
    ap.add_argument("--mb", type=float, default=float(os.environ.get("BENCH_MB", 300)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", 42)))
    ap.add_argument("--force", action="store_true", help="regenerate even if the stamp matches")
    ap.add_argument("--no-verify", action="store_true", help="skip the healthy-file check after generating")
    ap.add_argument("--verify-only", action="store_true", help="only re-check an existing corpus")
    args = ap.parse_args()
    if args.files < len(RULES):
        sys.exit(f"gen_corpus: need at least {len(RULES)} files")
    out = os.path.abspath(args.out)
    if args.verify_only:
        sys.exit(0 if verify(out) else 1)
    os.makedirs(out, exist_ok=True)
    stamp_path = os.path.join(out, "corpus.stamp")
    want = stamp_of(args)
    if not args.force and os.path.isdir(os.path.join(out, "corpus")) and os.path.exists(stamp_path):
        try:
            have = json.load(open(stamp_path))
        except ValueError:
            have = None
        if have == want:
            print(f"corpus up to date: {out}/corpus ({args.files} files, seed {args.seed})", file=sys.stderr)
            return
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    print(f"generating {args.files} files, ~{args.mb:g} MB, seed {args.seed} into {out}/corpus",
          file=sys.stderr)
    generate(args, out)
    if not args.no_verify and not verify(out):
        sys.exit("gen_corpus: the generated corpus is not what it claims to be (see above)")
    with open(stamp_path, "w") as f:
        json.dump(want, f)
        f.write("\n")


if __name__ == "__main__":
    main()
