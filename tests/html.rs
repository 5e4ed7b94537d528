//! `--format html`: the pages are opened in headless Chromium and checked
//! on the rendered DOM (tests/browser/cdp.py drives it over the DevTools
//! protocol): the lanes, a drawn connector from every tool call to its
//! result, the findings marked at their messages, the chunk store's loaded
//! messages, the recorded prompts, the filter, no script error, no request
//! but the page itself, and nothing injected by a hostile history.
//! A Claude Code session is checked against `lint --format json` of the
//! same file (each mark on the message it names, each call linked to the
//! result with its id). Also `-o`: atomic, never over an input, never over
//! a file without --force.
//!
//! Without Chromium (or Python) these tests are listed as ignored, with how
//! to install it (build.rs decides; `scripts/test-all` installs it): they
//! never pass without a browser.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What the page reported (see tests/browser/cdp.py).
struct Page {
    value: Value,
    console: Vec<Value>,
    exceptions: Vec<Value>,
    requests: Vec<String>,
    dialogs: Vec<Value>,
}

/// Open `page` in headless Chromium, evaluate `js` (an expression whose
/// value is JSON text) once the page has loaded, optionally take a
/// screenshot of the whole page.
fn browse(page: &Path, js: &str, screenshot: Option<&Path>) -> Page {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let mut cmd = Command::new("python3");
    cmd.arg(root().join("tests/browser/cdp.py"))
        .arg(&url)
        .arg("--eval")
        .arg(js);
    if let Some(s) = screenshot {
        cmd.arg("--screenshot").arg(s);
    }
    let o = cmd.output().expect("python3 runs tests/browser/cdp.py");
    match o.status.code() {
        Some(0) => {}
        Some(3) => panic!(
            "Chromium is not installed: the HTML report is tested in a real browser. \
             Install it (`apt-get install -y chromium`; scripts/test-all does) and run again."
        ),
        _ => panic!(
            "headless Chromium failed on {url}: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
    }
    let doc: Value = serde_json::from_slice(&o.stdout).expect("cdp.py prints JSON");
    let value = match &doc["value"] {
        Value::String(s) => serde_json::from_str(s).expect("the expression returns JSON text"),
        v => v.clone(),
    };
    Page {
        value,
        console: doc["console"].as_array().unwrap().clone(),
        exceptions: doc["exceptions"].as_array().unwrap().clone(),
        requests: doc["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect(),
        dialogs: doc["dialogs"].as_array().unwrap().clone(),
    }
}

impl Page {
    /// No script error, no console warning or error (a CSP violation is
    /// one), and no request but the page itself.
    fn clean(&self, page: &Path) {
        assert!(
            self.exceptions.is_empty(),
            "script errors: {:?}",
            self.exceptions
        );
        assert!(self.console.is_empty(), "console: {:?}", self.console);
        assert!(self.dialogs.is_empty(), "alert()s: {:?}", self.dialogs);
        let url = format!("file://{}", page.canonicalize().unwrap().display());
        assert_eq!(self.requests, [url], "the page asked for more than itself");
    }
}

/// Render with chatfsck into `dir/name`.
fn render(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "html", "-o", out.to_str().unwrap()]);
    let o = run(&all);
    assert!(matches!(code(&o), 0 | 1), "{args:?}: {}", stderr(&o));
    assert!(o.stdout.is_empty(), "with -o nothing goes to stdout");
    out
}

/// JavaScript shared by the checks: every connector of a timeline or a
/// loaded view must start at the edge of the element it names and end at
/// the edge of the other (±2 px), at their vertical middle.
const CONNECTORS: &str = r##"
function connectors(box) {
  var o = box.getBoundingClientRect(), out = [], bad = [];
  box.querySelectorAll(":scope > svg.links path").forEach(function (p) {
    var a = document.getElementById(p.getAttribute("data-from"));
    var b = document.getElementById(p.getAttribute("data-to"));
    var d = p.getAttribute("d") || "";
    var n = (d.match(/-?[0-9.]+/g) || []).map(Number);
    var rec = {from: p.getAttribute("data-from"), to: p.getAttribute("data-to"), cls: p.getAttribute("class"), d: d};
    out.push(rec);
    if (!a || !b || n.length !== 8) { bad.push(rec); return; }
    var ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
    var edge = function (x, r) { return Math.abs(x - (r.left - o.left)) < 2 || Math.abs(x - (r.right - o.left)) < 2; };
    var mid = function (y, r) { return Math.abs(y - (r.top + r.height / 2 - o.top)) < 2; };
    if (!(edge(n[0], ra) && mid(n[1], ra) && edge(n[6], rb) && mid(n[7], rb))) bad.push(rec);
  });
  return {paths: out, bad: bad};
}
function rect(id) { var r = document.getElementById(id).getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }
"##;

fn artifacts() -> PathBuf {
    let d = root().join("target/test-artifacts");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn seed_000_lanes_connectors_findings_and_the_loaded_view() {
    let d = tempfile::tempdir().unwrap();
    let page = render(
        d.path(),
        "seed-000.html",
        &[
            "inspect",
            "fixtures/dispatch/seed-000.db",
            "--conversation",
            "1a997b08-09c2-412c-b296-48703c8aaf58",
        ],
    );
    let shot = artifacts().join("seed-000.png");
    let _ = std::fs::remove_file(&shot);
    let js = format!(
        r##"(function () {{ {CONNECTORS}
  var sec = document.querySelector("section.conv");
  var t = sec.querySelector(".timeline"), l = sec.querySelector(".pairs");
  var marks = {{}};
  sec.querySelectorAll(".msg").forEach(function (m) {{
    var r = [].map.call(m.querySelectorAll(".marks a"), function (a) {{ return a.textContent; }});
    if (r.length) marks[m.id] = r;
  }});
  var anchors = [].map.call(sec.querySelectorAll("article.finding"), function (f) {{
    var a = f.querySelector(".where a"); return [f.getAttribute("data-rule"), a ? a.getAttribute("href") : null];
  }});
  return JSON.stringify({{
    ready: document.documentElement.getAttribute("data-ready"),
    csp: document.querySelector('meta[http-equiv="Content-Security-Policy"]').content,
    lanes: [].map.call(t.querySelectorAll(".lanes div"), function (x) {{ return x.textContent; }}),
    roles: [].map.call(t.querySelectorAll(".msg"), function (m) {{ return m.getAttribute("data-role") + "@" + m.parentNode.className; }}),
    lanesX: [].map.call(t.querySelectorAll(".msg"), function (m) {{ return Math.round(m.getBoundingClientRect().left); }}),
    timeline: connectors(t), loaded: connectors(l),
    merged: [].map.call(l.querySelectorAll(".box.bad"), function (b) {{ return b.id; }}),
    marks: marks, anchors: anchors,
    drawn: t.querySelector("svg").getAttribute("data-drawn")
  }});
}})()"##
    );
    let p = browse(&page, &js, Some(&shot));
    p.clean(&page);
    let v = &p.value;
    assert_eq!(v["ready"], "1", "the page's script ran");
    assert!(
        v["csp"]
            .as_str()
            .unwrap()
            .starts_with("default-src 'none'; "),
        "{}",
        v["csp"]
    );
    assert_eq!(
        v["lanes"],
        serde_json::json!(["", "system", "user", "assistant", "tool"])
    );
    // Nine true messages, each in its role's lane, lanes left to right.
    let roles: Vec<&str> = v["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(roles.len(), 9, "{roles:?}");
    for r in &roles {
        let (role, class) = r.split_once('@').unwrap();
        assert!(class.contains(&format!("lane-{role}")), "{r}");
    }
    let x: Vec<i64> = v["lanesX"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    let at = |role: &str| x[roles.iter().position(|r| r.starts_with(role)).unwrap()];
    assert!(
        at("user@") < at("assistant@") && at("assistant@") < at("tool@"),
        "{x:?}"
    );
    // Both calls of message 5 drawn to their results in messages 6 and 7.
    assert_eq!(v["drawn"], "1");
    let paths = v["timeline"]["paths"].as_array().unwrap();
    let pairs: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            (
                p["from"].as_str().unwrap().to_string(),
                p["to"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            ("c0-m5-p2".to_string(), "c0-m6-p0".to_string()),
            ("c0-m5-p3".to_string(), "c0-m7-p0".to_string())
        ]
    );
    assert_eq!(v["timeline"]["bad"], serde_json::json!([]), "{paths:?}");
    // The loaded view: true messages 0-5 run into the first loaded message.
    assert_eq!(v["merged"], serde_json::json!(["c0-g0"]));
    assert_eq!(v["loaded"]["bad"], serde_json::json!([]));
    let merges: Vec<&str> = v["loaded"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["cls"] == "merge")
        .map(|p| p["from"].as_str().unwrap())
        .collect();
    assert_eq!(
        merges,
        ["c0-s0", "c0-s1", "c0-s2", "c0-s3", "c0-s4", "c0-s5"]
    );
    // Findings marked at their messages, and anchored there.
    assert_eq!(
        v["marks"],
        serde_json::json!({
            "c0-m1": ["msgidx-collision", "mixed-role-message"],
            "c0-m8": ["tool-call-as-text", "thinking-only-message"]
        })
    );
    assert_eq!(
        v["anchors"],
        serde_json::json!([
            ["msgidx-collision", "#c0-m1"],
            ["mixed-role-message", "#c0-m1"],
            ["tool-call-as-text", "#c0-m8"],
            ["thinking-only-message", "#c0-m8"]
        ])
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn a_hostile_history_renders_as_text_and_injects_nothing() {
    let d = tempfile::tempdir().unwrap();
    let page = render(
        d.path(),
        "hostile.html",
        &["lint", "fixtures/hostile/html-injection.jsonl"],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Nothing that leaves the page: no URL but the SVG namespace.
    for bad in [
        "href=\"javascript",
        "<iframe",
        "<img",
        "<base",
        "<script src",
    ] {
        assert!(!html.contains(bad), "{bad} in the page");
    }
    let js = r##"(function () {
  var els = document.getElementsByTagName("*"), handlers = [];
  for (var i = 0; i < els.length; i++)
    for (var j = 0; j < els[i].attributes.length; j++)
      if (/^on/i.test(els[i].attributes[j].name) || /evil|javascript:/i.test(els[i].attributes[j].value))
        handlers.push(els[i].tagName + "." + els[i].attributes[j].name);
  var hrefs = [].map.call(document.querySelectorAll("[href]"), function (a) { return a.getAttribute("href"); })
    .filter(function (h) { return h.charAt(0) !== "#"; });
  var text = document.body.textContent;
  var unanswered = document.querySelector(".part.unanswered code");
  var stray = document.querySelector(".part.stray code");
  return JSON.stringify({
    tags: ["script", "style", "iframe", "img", "meta", "base", "form", "link", "textarea", "button"].map(function (t) { return t + ":" + document.getElementsByTagName(t).length; }),
    handlers: handlers, hrefs: hrefs,
    shown: [
      "</textarea><script>alert('xss-1')</script><img src=x onerror=alert(2)>",
      "[docs](javascript:alert(3)) &lt;b&gt;bold&lt;/b&gt; &#x3C;script&#x3E;",
      "<style>*{display:none}</style></div></section>",
      "You are <b>helpful</b> &amp; kind",
      "\\u{202e}evil"
    ].map(function (s) { return text.indexOf(s) >= 0; }),
    unanswered: unanswered && unanswered.textContent,
    stray: stray && stray.textContent
  });
})()"##;
    let p = browse(&page, js, None);
    p.clean(&page);
    let v = &p.value;
    assert_eq!(
        v["tags"],
        serde_json::json!([
            "script:1",
            "style:1",
            "iframe:0",
            "img:0",
            "meta:5",
            "base:0",
            "form:0",
            "link:0",
            "textarea:0",
            "button:0"
        ]),
        "only the page's own script, style and head <meta>s"
    );
    assert_eq!(v["handlers"], serde_json::json!([]));
    assert_eq!(
        v["hrefs"],
        serde_json::json!([]),
        "links only within the page"
    );
    assert_eq!(
        v["shown"],
        serde_json::json!([true, true, true, true, true])
    );
    assert_eq!(v["unanswered"], "call_\"><script>alert(4)</script>");
    assert_eq!(v["stray"], "'><iframe src=https://evil.example/frame>");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn interleaved_messages_sit_between_the_call_and_its_result() {
    let d = tempfile::tempdir().unwrap();
    let page = render(
        d.path(),
        "interleaved.html",
        &[
            "lint",
            "fixtures/interleaved-message/anthropic-zeph-reflection.jsonl",
        ],
    );
    let js = format!(
        r##"(function () {{ {CONNECTORS}
  var t = document.querySelector(".timeline"), c = connectors(t);
  var late = c.paths.filter(function (p) {{ return /late/.test(p.cls); }});
  var between = [].map.call(t.querySelectorAll(".msg.interleaved"), function (m) {{ return m.id; }});
  var inside = late.map(function (p) {{
    var a = rect(p.from), b = rect(p.to);
    return between.filter(function (id) {{ var r = rect(id); return r.top > a.bottom && r.bottom < b.top; }});
  }});
  return JSON.stringify({{paths: c.paths.length, bad: c.bad, late: late.length, between: between, inside: inside,
    marked: [].map.call(document.querySelectorAll(".msg .marks a"), function (a) {{ return a.closest(".msg").id + ":" + a.textContent; }})}});
}})()"##
    );
    let p = browse(&page, &js, None);
    p.clean(&page);
    let v = &p.value;
    assert_eq!(v["bad"], serde_json::json!([]));
    assert_eq!(v["late"], 2, "{v}");
    assert_eq!(v["between"].as_array().unwrap().len(), 2, "{v}");
    // Each late connector passes the interleaved messages between its ends.
    for ids in v["inside"].as_array().unwrap() {
        assert!(!ids.as_array().unwrap().is_empty(), "{v}");
    }
    assert!(
        v["marked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().ends_with(":interleaved-message")),
        "{v}"
    );
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn a_store_checked_against_its_trace_shows_each_prompt_beside_it() {
    let d = tempfile::tempdir().unwrap();
    let page = render(
        d.path(),
        "trace.html",
        &[
            "lint",
            "fixtures/dispatch/wal/dispatch.db",
            "--trace",
            "fixtures/dispatch/wal/traces.db",
        ],
    );
    let js = r##"JSON.stringify({
  prompts: document.querySelectorAll("details.prompt").length,
  open: [].map.call(document.querySelectorAll("details.prompt[open]"), function (p) { return !!p.querySelector(".badge.sev-error"); }),
  merged: [].map.call(document.querySelectorAll("tr.diverges .op"), function (o) { return o.firstChild.textContent; }),
  divergence: [].map.call(document.querySelectorAll("article.finding"), function (f) { return f.getAttribute("data-rule"); }).filter(function (r) { return r === "prompt-divergence"; }).length,
  crosschecked: document.querySelector("table.inputs").innerText.indexOf("traces.db") >= 0
})"##;
    let p = browse(&page, js, None);
    p.clean(&page);
    let v = &p.value;
    assert_eq!(v["prompts"], 8, "{v}");
    assert_eq!(
        v["open"],
        serde_json::json!([true, true, true]),
        "divergent prompts start open"
    );
    assert_eq!(
        v["merged"],
        serde_json::json!(["merged", "merged", "merged"])
    );
    assert!(v["divergence"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["crosschecked"], true);
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn the_filter_hides_findings_marks_and_conversations() {
    let d = tempfile::tempdir().unwrap();
    let page = render(
        d.path(),
        "seed.html",
        &["lint", "fixtures/dispatch/seed-000.db"],
    );
    let js = r##"(function () {
  function shown(sel) { return [].filter.call(document.querySelectorAll(sel), function (e) { return e.offsetParent !== null; }).length; }
  var before = [shown("article.finding"), shown(".marks a"), shown("section.conv")];
  document.querySelector('#filter input[value="warning"]').click();
  var warnings = [shown("article.finding"), shown(".marks a"), shown("section.conv")];
  document.querySelector('#filter input[value="msgidx-collision"]').click();
  document.querySelector('#filter input[value="mixed-role-message"]').click();
  var none = [shown("article.finding"), shown(".marks a"), shown("section.conv"), shown("nav li")];
  return JSON.stringify({before: before, warnings: warnings, none: none});
})()"##;
    let p = browse(&page, js, None);
    p.clean(&page);
    assert_eq!(
        p.value,
        serde_json::json!({"before": [4, 4, 1], "warnings": [2, 2, 1], "none": [0, 0, 0, 0]})
    );
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn many_conversations_get_an_index_and_closed_sections() {
    // Fourteen files with findings: more than are opened at once.
    let d = tempfile::tempdir().unwrap();
    let src = std::fs::read(root().join("fixtures/hostile/html-injection.jsonl")).unwrap();
    for i in 0..14 {
        std::fs::write(d.path().join(format!("s{i:02}.jsonl")), &src).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let page = render(
        out.path(),
        "many.html",
        &["lint", d.path().to_str().unwrap()],
    );
    let js = r##"JSON.stringify({
  index: document.querySelectorAll("nav#index li").length,
  sections: document.querySelectorAll("section.conv").length,
  open: document.querySelectorAll("section.conv > details[open]").length,
  drawn: document.querySelectorAll(".timeline svg[data-drawn]").length
})"##;
    let p = browse(&page, js, None);
    p.clean(&page);
    assert_eq!(
        p.value,
        serde_json::json!({"index": 14, "sections": 14, "open": 0, "drawn": 0})
    );
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn every_kind_of_page_loads_without_an_error_or_a_request() {
    let d = tempfile::tempdir().unwrap();
    let mixed = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl"),
        mixed.path().join("a.jsonl"),
    )
    .unwrap();
    std::fs::write(mixed.path().join("b.json"), "{\"not\": \"a history\"}\n").unwrap();
    let pages = [
        ("trace.html", vec!["inspect", "fixtures/dispatch/traces.db"]),
        (
            "healthy.html",
            vec!["inspect", "fixtures/healthy/orphan-tool-call-kimi.jsonl"],
        ),
        (
            "listing.html",
            vec!["inspect", "fixtures/dispatch/seed-000.db"],
        ),
        ("mixed.html", vec!["lint", mixed.path().to_str().unwrap()]),
        ("clean.html", vec!["lint", "fixtures/healthy"]),
    ];
    for (name, args) in pages {
        let page = render(d.path(), name, &args);
        let p = browse(
            &page,
            r##"JSON.stringify({ready: document.documentElement.getAttribute("data-ready"),
              notread: document.querySelectorAll(".notread li").length})"##,
            None,
        );
        p.clean(&page);
        assert_eq!(p.value["ready"], "1", "{name}");
        let notread = if name == "mixed.html" { 1 } else { 0 };
        assert_eq!(
            p.value["notread"], notread,
            "{name}: inputs not read are listed"
        );
    }
}

// ---------------------------------------------------------------------------
// -o, without a browser

#[test]
fn output_file_is_new_never_an_input_and_stdout_without_it() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("h.jsonl");
    std::fs::copy(root().join("fixtures/hostile/html-injection.jsonl"), &input).unwrap();
    let before = fingerprint(&input);
    let inp = input.to_str().unwrap();
    // Over the input: refused, input untouched.
    let o = run(&["lint", inp, "--format", "html", "-o", inp, "--force"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("refusing to write the report over the input"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fingerprint(&input), before);
    // Over a trace given with --trace: refused too.
    let o = run(&[
        "lint",
        "fixtures/dispatch/wal/dispatch.db",
        "--trace",
        "fixtures/dispatch/wal/traces.db",
        "--format",
        "html",
        "-o",
        "fixtures/dispatch/wal/traces.db-wal",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // A new file: written, nothing on stdout, the lint exit code kept.
    let out = d.path().join("r.html");
    let outs = out.to_str().unwrap();
    let o = run(&["lint", inp, "--format", "html", "-o", outs]);
    assert_eq!(code(&o), 1);
    assert!(o.stdout.is_empty());
    let first = std::fs::read_to_string(&out).unwrap();
    assert!(first.starts_with("<!DOCTYPE html>") && first.ends_with("</html>\n"));
    // Existing: refused without --force, replaced with it.
    let o = run(&["inspect", inp, "--format", "html", "-o", outs]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("already exists; pass --force"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), first);
    let o = run(&["inspect", inp, "--format", "html", "-o", outs, "--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("chatfsck inspect")
    );
    // No temporary file left beside it.
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Without -o: the same page on stdout.
    let o = run(&["inspect", inp, "--format", "html"]);
    assert_eq!(stdout(&o), std::fs::read_to_string(&out).unwrap());
    // -o works for every format: the SARIF the GitHub Action uploads.
    let sarif = d.path().join("x.sarif");
    let o = run(&[
        "lint",
        inp,
        "--format",
        "sarif",
        "-o",
        sarif.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1);
    let log: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    assert_eq!(log["version"], "2.1.0");
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn past_the_limit_findings_are_listed_without_their_timelines() {
    // 301 conversations with findings: 300 drawn, one listed with the
    // command that draws it; every one in the index.
    let d = tempfile::tempdir().unwrap();
    let src = std::fs::read(root().join("fixtures/hostile/html-injection.jsonl")).unwrap();
    for i in 0..301 {
        std::fs::write(d.path().join(format!("s{i:03}.jsonl")), &src).unwrap();
    }
    let o = run(&["lint", d.path().to_str().unwrap(), "--format", "html"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let page = stdout(&o);
    assert_eq!(page.matches("<div class=\"timeline linked\"").count(), 300);
    assert_eq!(page.matches("<li data-for=").count(), 301);
    assert_eq!(page.matches("<section class=\"card conv").count(), 301);
    assert_eq!(
        page.matches("draws the timelines of the first 300").count(),
        1
    );
    assert_eq!(
        page.matches("data-rule=\"orphan-tool-call\" data-sev")
            .count(),
        301 + 300
    );
}

// ---------------------------------------------------------------------------
// A Claude Code session: findings and connectors checked against the JSON
// output of the same file, not against hard-coded positions (how Claude Code
// records are grouped into messages may change; the page must follow).

/// What `lint --format json FILE` says: (message, rule) of every finding
/// about one message, the rules of the others, the ids of every
/// `orphan-tool-call`, and the file's message count.
struct Expected {
    marks: Vec<(u64, String)>,
    unplaced: Vec<String>,
    unanswered: Vec<String>,
    messages: u64,
}

fn expected(file: &str) -> Expected {
    let o = run(&["lint", "--format", "json", file]);
    assert!(matches!(code(&o), 0 | 1), "{file}: {}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mut e = Expected {
        marks: Vec::new(),
        unplaced: Vec::new(),
        unanswered: Vec::new(),
        messages: doc["files"][0]["messages"].as_u64().unwrap(),
    };
    for f in doc["findings"].as_array().unwrap() {
        let rule = f["rule"].as_str().unwrap().to_string();
        if rule == "orphan-tool-call" {
            for id in f["ids"].as_array().unwrap() {
                e.unanswered.push(id.as_str().unwrap().to_string());
            }
        }
        match f["message"].as_u64() {
            Some(m) => e.marks.push((m, rule)),
            None => e.unplaced.push(rule),
        }
    }
    e.marks.sort();
    e.unplaced.sort();
    e.unanswered.sort();
    e
}

/// The page's messages, marks, findings, tool parts and connectors.
const CLAUDE_JS: &str = r##"
  var t = document.querySelector(".timeline"), c = t ? connectors(t) : {paths: [], bad: []};
  function msgOf(el) { return +el.closest(".msg").id.replace(/^c[0-9]+-m/, ""); }
  function idOf(el) { var k = el.querySelector(".k code"); return k ? k.textContent : null; }
  return JSON.stringify({
    ready: document.documentElement.getAttribute("data-ready"),
    timeline: !!t,
    messages: t ? t.querySelectorAll(".msg").length : 0,
    marks: [].map.call(document.querySelectorAll(".msg .marks a"), function (a) { return [msgOf(a), a.getAttribute("data-rule")]; }),
    findings: [].map.call(document.querySelectorAll("article.finding"), function (f) {
      var a = f.querySelector(".where a"); return [f.getAttribute("data-rule"), a ? a.getAttribute("href") : null];
    }),
    calls: [].map.call(document.querySelectorAll(".msg .part.tool-call"), function (p) {
      return {part: p.id, msg: msgOf(p), id: idOf(p), unanswered: p.classList.contains("unanswered")};
    }),
    results: [].map.call(document.querySelectorAll(".msg .part.tool-result"), function (p) {
      return {part: p.id, msg: msgOf(p), id: idOf(p), stray: p.classList.contains("stray")};
    }),
    paths: c.paths, bad: c.bad,
    drawn: t ? t.querySelector("svg").getAttribute("data-drawn") : null
  });
"##;

/// Check one rendered page of `file` against `e`; returns the page's value.
fn check_claude_page(file: &str, cmd: &str, e: &Expected, dir: &Path) -> Value {
    let name = format!(
        "{cmd}-{}.html",
        file.trim_start_matches("fixtures/").replace('/', "_")
    );
    let page = render(dir, &name, &[cmd, file]);
    let p = browse(
        &page,
        &format!("(function () {{ {CONNECTORS} {CLAUDE_JS} }})()"),
        None,
    );
    p.clean(&page);
    let v = p.value;
    let what = format!("{cmd} {file}");
    assert_eq!(v["ready"], "1", "{what}: the page's script ran");
    let with_findings = !e.marks.is_empty() || !e.unplaced.is_empty();
    if cmd == "lint" && !with_findings {
        // lint draws only conversations with findings.
        assert_eq!(v["timeline"], false, "{what}: {v}");
        return v;
    }
    assert_eq!(v["timeline"], true, "{what}");
    assert_eq!(v["drawn"], "1", "{what}: the connectors were drawn");
    assert_eq!(
        v["messages"], e.messages,
        "{what}: one row per message the JSON counts"
    );
    // Each finding's mark on the message the JSON output names, nowhere else.
    let mut marks: Vec<(u64, String)> = v["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m[0].as_u64().unwrap(), m[1].as_str().unwrap().to_string()))
        .collect();
    marks.sort();
    assert_eq!(marks, e.marks, "{what}: marks");
    // Every finding listed once; those about a message link to it.
    let mut anchored: Vec<(u64, String)> = Vec::new();
    let mut unplaced: Vec<String> = Vec::new();
    for f in v["findings"].as_array().unwrap() {
        let rule = f[0].as_str().unwrap().to_string();
        match f[1].as_str() {
            Some(h) => anchored.push((h.trim_start_matches("#c0-m").parse().unwrap(), rule)),
            None => unplaced.push(rule),
        }
    }
    anchored.sort();
    unplaced.sort();
    assert_eq!(anchored, e.marks, "{what}: finding anchors");
    assert_eq!(unplaced, e.unplaced, "{what}: findings about no message");
    // Connectors: well placed, and one from every answered call to the
    // result that carries its id, later in the history.
    assert_eq!(v["bad"], serde_json::json!([]), "{what}: {}", v["paths"]);
    let paths: Vec<(&str, &str)> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["from"].as_str().unwrap(), p["to"].as_str().unwrap()))
        .collect();
    let results = v["results"].as_array().unwrap();
    let mut unanswered: Vec<String> = Vec::new();
    for call in v["calls"].as_array().unwrap() {
        let id = call["id"].as_str().expect("a call shows its id");
        let from: Vec<&str> = paths
            .iter()
            .filter(|(f, _)| *f == call["part"].as_str().unwrap())
            .map(|(_, t)| *t)
            .collect();
        if call["unanswered"] == true {
            assert!(from.is_empty(), "{what}: unanswered call {id} linked");
            unanswered.push(id.to_string());
            continue;
        }
        assert_eq!(from.len(), 1, "{what}: call {id}: {from:?}");
        let r = results
            .iter()
            .find(|r| r["part"] == from[0])
            .unwrap_or_else(|| panic!("{what}: call {id} linked to {}", from[0]));
        assert_eq!(
            r["id"], id,
            "{what}: call {id} linked to another call's result"
        );
        assert!(
            r["msg"].as_u64() > call["msg"].as_u64(),
            "{what}: call {id}: result before it"
        );
    }
    unanswered.sort();
    assert_eq!(
        unanswered, e.unanswered,
        "{what}: the calls shown unanswered are the orphan-tool-call findings' ids"
    );
    // Every result answers a call, or is shown as stray.
    for r in results {
        let linked = paths.iter().any(|(_, t)| *t == r["part"].as_str().unwrap());
        assert!(
            linked != (r["stray"] == true),
            "{what}: result {} linked: {linked}, stray: {}",
            r["id"],
            r["stray"]
        );
    }
    v
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn a_claude_code_session_marks_findings_where_the_json_says_and_links_calls() {
    let d = tempfile::tempdir().unwrap();
    for file in [
        "fixtures/claude-code/nul-run/nul-tool-result.jsonl",
        "fixtures/claude-code/orphan-tool-call/parallel-sibling-result-deleted.jsonl",
        "fixtures/claude-code/orphan-tool-call/middle-result-deleted.jsonl",
        "fixtures/claude-code/orphan-tool-result/parallel-tool-use-deleted.jsonl",
        "fixtures/claude-code/torn-write/torn-then-next-record.jsonl",
        "fixtures/claude-code/healthy/parallel-tool-calls.jsonl",
        "fixtures/claude-code/healthy/split-message-result-between.jsonl",
        "fixtures/claude-code/healthy/split-message-chain-through-result.jsonl",
    ] {
        let e = expected(file);
        for cmd in ["lint", "inspect"] {
            check_claude_page(file, cmd, &e, d.path());
        }
    }
}

#[test]
#[cfg_attr(
    not(all(has_tool = "chromium", has_tool = "python3")),
    ignore = "needs Chromium and Python 3: apt-get install chromium (scripts/test-all does it)"
)]
fn a_claude_code_parallel_round_is_one_message_linked_to_each_result() {
    // healthy/parallel-tool-calls.jsonl: three parallel Bash calls written
    // as four records of one `message.id`, their results on side branches
    // (fixtures/claude-code/README.md), then two more rounds. The client
    // sends one assistant message with the three calls; the page shows
    // them so, each linked to its result.
    let d = tempfile::tempdir().unwrap();
    let file = "fixtures/claude-code/healthy/parallel-tool-calls.jsonl";
    let e = expected(file);
    assert_eq!(e.marks.len() + e.unplaced.len(), 0, "a healthy session");
    let v = check_claude_page(file, "inspect", &e, d.path());
    let calls = v["calls"].as_array().unwrap();
    let first = &calls[0]["msg"];
    let round: Vec<&str> = calls
        .iter()
        .filter(|c| &c["msg"] == first)
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        round,
        [
            "toolu_01WZaVU3pU1jT7kGLEBNU5pz",
            "toolu_01TAxJUnmZSk4Bq6e8dYXSwi",
            "toolu_0111NTR6CCh1e6u1jBAu9yZe"
        ],
        "the three parallel calls in one message, in file order: {v}"
    );
    // Every call answered and linked (checked one by one above).
    assert_eq!(v["paths"].as_array().unwrap().len(), calls.len(), "{v}");
}
