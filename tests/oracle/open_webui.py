#!/usr/bin/env python3
"""Open WebUI's own code as the judge of a `webui.db` (tests/open_webui.rs).

    python3 tests/oracle/open_webui.py WHEEL DB

WHEEL is the pinned `open-webui` wheel (tests/oracle/open-webui-requirements.txt,
downloaded by scripts/test-all into target/tools/open-webui; never installed:
its dependencies are far too heavy). Two pieces of it are run, read from the
wheel at run time, nothing of them copied here:

  * the backend's mending on load: `ChatTable._repair_chat_current_id` with
    `_last_descendant_id` and `_add_child_id_to_parent`
    (open_webui/models/chats.py; `get_chat_by_id` runs it on every load),
    taken out of the module with `ast` (the module itself imports the whole
    app) and run on each chat's JSON;
  * then the web app's walk: `createMessagesList(history, currentId)` from
    src/lib/utils/index.ts, whose text the wheel's source maps carry
    (open_webui/frontend/_app/immutable/chunks/*.js.map), run by Node in a
    `vm` context with a time limit: a walk that never ends is reported as
    such.

Prints one JSON line per chat (in rowid order): `id`; `backend_changed`
(whether the backend's mending changed the chat); `current` (the
`currentId` after it); `hangs` (the web app's walk did not end within the
limit); `walk` (the ids it returned, root first); `reached` (the stored
messages with a role that hang from a root, through `childrenIds`) and
`with_role` (how many stored messages have a role).
"""
import ast
import json
import sqlite3
import subprocess
import sys
import zipfile

CHATS = "open_webui/models/chats.py"
METHODS = ("_repair_chat_current_id", "_last_descendant_id", "_add_child_id_to_parent")
INDEX_TS = "src/lib/utils/index.ts"


def backend_mending(wheel):
    """The three methods of `ChatTable`, as a class of their own."""
    source = wheel.read(CHATS).decode()
    tree = ast.parse(source)
    table = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ChatTable")
    body = [n for n in table.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in METHODS]
    missing = set(METHODS) - {n.name for n in body}
    if missing:
        sys.exit(f"open_webui.py: {CHATS} has no {sorted(missing)}")
    cls = ast.ClassDef(name="ChatTable", bases=[], keywords=[], body=body, decorator_list=[], type_params=[])
    module = ast.Module(body=[cls], type_ignores=[])
    ast.fix_missing_locations(module)
    scope = {}
    exec(compile(module, CHATS, "exec"), scope)
    return scope["ChatTable"]()


def frontend_walk(wheel):
    """The text of `createMessagesList`, from the source maps."""
    for name in wheel.namelist():
        if not (name.startswith("open_webui/frontend/_app/immutable/chunks/") and name.endswith(".js.map")):
            continue
        data = wheel.read(name)
        if b"export const createMessagesList" not in data:
            continue
        m = json.loads(data)
        for src, text in zip(m.get("sources", []), m.get("sourcesContent") or []):
            if src.endswith(INDEX_TS) and text and "export const createMessagesList" in text:
                start = text.index("export const createMessagesList")
                end = text.index("\n};\n", start) + 3
                return text[start + len("export "):end]
    sys.exit("open_webui.py: no createMessagesList in the wheel's source maps")


NODE = r"""
const vm = require('vm');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = input.chats.map(({history}) => {
  const ctx = {history, result: null};
  try {
    vm.runInNewContext(input.fn + '\nresult = createMessagesList(history, history.currentId ?? null).map((m) => m?.id ?? null);', ctx, {timeout: 2000});
    return {hangs: false, walk: ctx.result};
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return {hangs: true, walk: null};
    return {hangs: false, walk: null, error: String(e)};
  }
});
process.stdout.write(JSON.stringify(out));
"""


def reached(messages):
    seen = set()
    todo = [k for k, m in messages.items() if isinstance(m, dict) and not m.get("parentId")]
    while todo:
        k = todo.pop()
        if k in seen or not isinstance(messages.get(k), dict):
            continue
        seen.add(k)
        todo.extend(c for c in messages[k].get("childrenIds") or [] if isinstance(c, str))
    return sorted(k for k in seen if messages[k].get("role"))


def main():
    wheel_path, db = sys.argv[1], sys.argv[2]
    with zipfile.ZipFile(wheel_path) as wheel:
        table = backend_mending(wheel)
        fn = frontend_walk(wheel)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT id, chat FROM chat ORDER BY rowid").fetchall()
    chats = []
    for cid, text in rows:
        chat = json.loads(text)
        changed = table._repair_chat_current_id(chat)
        chats.append((cid, changed, chat))
    walks = subprocess.run(
        ["node", "-e", NODE],
        input=json.dumps({"fn": fn, "chats": [{"history": c["history"]} for _, _, c in chats]}),
        capture_output=True, text=True, check=True, timeout=120,
    )
    for (cid, changed, chat), w in zip(chats, json.loads(walks.stdout)):
        messages = chat["history"]["messages"]
        print(json.dumps({
            "id": cid,
            "backend_changed": bool(changed),
            "current": chat["history"].get("currentId"),
            "hangs": w["hangs"],
            "walk": w["walk"],
            "error": w.get("error"),
            "reached": reached(messages),
            "with_role": sum(1 for m in messages.values() if isinstance(m, dict) and m.get("role")),
        }))


if __name__ == "__main__":
    main()
