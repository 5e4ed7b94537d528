//! Open WebUI's `webui.db` (fixtures/open-webui, one chat per pattern; see
//! its build.py): each chat read as the web app walks its message tree
//! from `currentId`, the findings with what Open WebUI does with each.

mod common;
use common::*;

const DB: &str = "fixtures/open-webui/webui.db";

/// `severity rule@chat/message`, sorted.
fn findings(doc: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}@{}",
                f["severity"].as_str().unwrap(),
                f["rule"].as_str().unwrap(),
                f["location"]["key"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

/// The id build.py gives message `n` of chat `chat`.
fn mid(chat: u32, n: u32) -> String {
    format!("{chat:08x}-0000-4000-8000-{n:012x}")
}

#[test]
fn every_pattern_is_found_and_the_healthy_chat_is_clean() {
    let (code, doc) = lint_json(DB, &["--fail-on", "info"]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["files"][0]["format"], "sqlite-table", "{doc:#}");
    assert_eq!(doc["files"][0]["dialect"], "open-webui", "{doc:#}");
    let want = [
        // #24424: `currentId` and the parent's `childrenIds` name a
        // response that was never stored.
        "warning dangling-parent@c-0002-dangling-current".to_string(),
        format!(
            "warning dangling-parent@c-0002-dangling-current/{}",
            mid(2, 3)
        ),
        // A message deleted from the map: its child's `parentId` and its
        // parent's `childrenIds` still name it.
        format!("error dangling-parent@c-0003-dangling-parent/{}", mid(3, 3)),
        format!(
            "warning dangling-parent@c-0003-dangling-parent/{}",
            mid(3, 1)
        ),
        format!("error parent-cycle@c-0004-parent-cycle/{}", mid(4, 3)),
        // #26257: a message saved without a role.
        format!("error missing-role@c-0005-missing-role/{}", mid(5, 7)),
        "warning lone-surrogate@c-0006-lone-surrogate".to_string(),
    ];
    let mut want: Vec<String> = want.to_vec();
    want.sort();
    assert_eq!(findings(&doc), want, "{doc:#}");
    // Every tree finding says what Open WebUI does with it.
    for f in doc["findings"].as_array().unwrap() {
        if f["rule"] == "lone-surrogate" {
            continue;
        }
        let text = format!("{} {}", f["summary"], f["notes"]);
        assert!(
            text.contains("web app") || text.contains("Open WebUI"),
            "{f:#}"
        );
    }
}

/// What the web app shows: the walk from `currentId`, root first. The
/// healthy chat shows the regenerated answer, not its older sibling; the
/// chat whose parent is lost shows only what is below the break.
#[test]
fn each_chat_holds_what_the_web_app_walks() {
    let count = |chat: &str| {
        let o = run(&["inspect", "--format", "json", DB, "--conversation", chat]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc.to_string()
    };
    let healthy = count("c-0001-healthy");
    assert!(
        healthy.contains("It reads PORT; the Dockerfile sets 8080."),
        "{healthy}"
    );
    assert!(
        !healthy.contains("PORT from the environment, else 3000."),
        "{healthy}"
    );
    let cut = count("c-0003-dangling-parent");
    assert!(cut.contains("And in production?"), "{cut}");
    assert!(!cut.contains("What port does the server use?"), "{cut}");
}

#[test]
fn the_human_report_is_reviewed() {
    let o = run(&["lint", DB]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    insta::assert_snapshot!("open_webui_lint_human", stdout(&o));
}

/// Every chat's tree in `db`: (chat id, the `chat` JSON).
fn chats(db: &std::path::Path) -> Vec<(String, serde_json::Value)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT id, chat FROM chat ORDER BY rowid")
        .unwrap();
    st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (id, text) = r.unwrap();
            // serde_json refuses the cut emoji of c-0006; Python reads it.
            let text = text.replace("\\ud83d", "\\ufffd");
            (id, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

/// The repaired copy: every tree re-linked so that the web app's walk from
/// `currentId` ends at a root, and every message with a role hangs from a
/// root through `childrenIds`; the input untouched; the log holds each
/// chat before and after; a second repair changes nothing.
#[test]
fn repair_relinks_every_tree_and_a_second_repair_changes_nothing() {
    let d = copy_to_tmp(&[DB]);
    let db = d.path().join("webui.db");
    let before = dir_fingerprints(d.path());
    let out = d.path().join("out.db");
    let log = d.path().join("log.json");
    let o = run(&[
        "repair",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&log).unwrap()).unwrap();
    let edited: Vec<&str> = log["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["conversation"].as_str().unwrap())
        .collect();
    assert_eq!(
        edited,
        [
            "c-0002-dangling-current",
            "c-0003-dangling-parent",
            "c-0004-parent-cycle"
        ],
        "{log:#}"
    );
    for e in log["edits"].as_array().unwrap() {
        assert!(e["before"].is_string() && e["after"].is_string(), "{e:#}");
    }
    // What is left: the message without a role and the cut emoji.
    let (_, doc) = lint_json(out.to_str().unwrap(), &["--fail-on", "info"]);
    let left = findings(&doc);
    assert_eq!(
        left,
        [
            format!("error missing-role@c-0005-missing-role/{}", mid(5, 7)),
            "warning lone-surrogate@c-0006-lone-surrogate".to_string(),
        ],
        "{doc:#}"
    );
    for (id, chat) in chats(&out) {
        let h = &chat["history"];
        let msgs = h["messages"].as_object().unwrap();
        // The walk from `currentId` ends at a root.
        let mut at = h["currentId"].as_str().map(str::to_string);
        let mut walked = 0;
        while let Some(k) = at {
            let m = msgs
                .get(&k)
                .unwrap_or_else(|| panic!("{id}: `{k}` missing"));
            walked += 1;
            assert!(walked <= msgs.len(), "{id}: the walk does not end");
            at = m["parentId"].as_str().map(str::to_string);
        }
        assert!(walked > 0, "{id}");
        // Every message with a role hangs from a root.
        let mut reached = std::collections::HashSet::new();
        let mut todo: Vec<&str> = msgs
            .iter()
            .filter(|(_, m)| m["parentId"].is_null())
            .map(|(k, _)| k.as_str())
            .collect();
        while let Some(k) = todo.pop() {
            if reached.insert(k) {
                for c in msgs[k]["childrenIds"].as_array().unwrap() {
                    todo.push(c.as_str().unwrap());
                }
            }
        }
        for (k, m) in msgs {
            if m["role"].is_string() {
                assert!(reached.contains(k.as_str()), "{id}: `{k}` unreachable");
            }
        }
    }
    // The lost parent's child hangs under the first question again, and
    // the chat whose current message was never stored shows its answer.
    let all = chats(&out);
    let get = |id: &str| &all.iter().find(|(c, _)| c == id).unwrap().1;
    assert_eq!(
        get("c-0003-dangling-parent")["history"]["messages"][mid(3, 3)]["parentId"],
        mid(3, 1)
    );
    assert_eq!(
        get("c-0002-dangling-current")["history"]["currentId"],
        mid(2, 4)
    );
    assert_eq!(dir_fingerprints(d.path()).len(), before.len() + 2);
    for (name, fp) in &before {
        assert_eq!(
            fingerprint(&d.path().join(name)).as_ref(),
            fp.as_ref(),
            "{name}"
        );
    }
    assert_second_repair_changes_nothing(&out, d.path());
}

/// A `chat` column that is not JSON is a corrupt record of that chat; the
/// other chats are read.
#[test]
fn a_chat_that_is_not_json_is_a_corrupt_record() {
    let d = copy_to_tmp(&[DB]);
    let db = d.path().join("webui.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE chat SET chat = '{\"history\": {\"messages\": {' WHERE id = 'c-0001-healthy'",
        [],
    )
    .unwrap();
    drop(conn);
    let (_, doc) = lint_json(db.to_str().unwrap(), &[]);
    let got = findings(&doc);
    assert!(
        got.contains(&"error corrupt-record@c-0001-healthy".to_string()),
        "{got:?}"
    );
    assert!(
        got.iter().any(|f| f.contains("parent-cycle@c-0004")),
        "{got:?}"
    );
}

/// Open WebUI's own code (the pinned 0.12.4 wheel, tests/oracle/open_webui.py)
/// on each chat: its backend's mending on load, then its web app's walk.
fn judge(db: &std::path::Path) -> Vec<serde_json::Value> {
    let wheel = std::env::var("CHATFSCK_OPEN_WEBUI").unwrap_or_else(|_| {
        root()
            .join("target/tools/open-webui/open_webui-0.12.4-py3-none-any.whl")
            .to_string_lossy()
            .into_owned()
    });
    let o = std::process::Command::new("python3")
        .arg(root().join("tests/oracle/open_webui.py"))
        .arg(&wheel)
        .arg(db)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the findings say Open WebUI does, it does: the backend mends the
/// lost `currentId`, the web app's walk stops at the lost parent and never
/// ends on the cycle. And the repaired copy opens in it with every message:
/// no walk hangs, each ends at a root, and every message with a role hangs
/// from a root (the branch switcher reaches it).
#[test]
#[cfg_attr(
    not(all(has_tool = "open-webui", has_tool = "python3")),
    ignore = "needs the open-webui 0.12.4 wheel (scripts/test-all downloads it into target/tools/open-webui) and Python 3"
)]
fn open_webui_opens_the_repaired_copy_with_every_message() {
    let before = judge(&root().join(DB));
    let get = |all: &[serde_json::Value], id: &str| {
        all.iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
            .clone()
    };
    let c = get(&before, "c-0002-dangling-current");
    assert_eq!(c["backend_changed"], true, "{c}");
    assert_eq!(c["current"], mid(2, 4), "{c}");
    let c = get(&before, "c-0003-dangling-parent");
    assert_eq!(
        c["walk"],
        serde_json::json!([mid(3, 3), mid(3, 4)]),
        "the walk stops at the lost parent: {c}"
    );
    let c = get(&before, "c-0004-parent-cycle");
    assert_eq!(c["hangs"], true, "{c}");
    assert_eq!(get(&before, "c-0001-healthy")["hangs"], false);

    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out.db");
    let o = run(&["repair", DB, "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = judge(&out);
    assert_eq!(after.len(), before.len());
    for c in &after {
        assert_eq!(c["hangs"], false, "{c}");
        assert!(c["error"].is_null(), "{c}");
        let walk = c["walk"].as_array().unwrap();
        assert!(!walk.is_empty(), "{c}");
        assert_eq!(walk.last().unwrap(), &c["current"], "{c}");
        assert_eq!(
            c["reached"].as_array().unwrap().len() as u64,
            c["with_role"].as_u64().unwrap(),
            "a message with a role is out of reach: {c}"
        );
    }
    // The chat whose parent was lost shows all of its messages again.
    assert_eq!(
        get(&after, "c-0003-dangling-parent")["walk"],
        serde_json::json!([mid(3, 1), mid(3, 3), mid(3, 4)])
    );
}
