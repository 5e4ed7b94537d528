//! The fuzz targets' bodies, one function each: `fuzz_targets/` runs them
//! under libFuzzer, and the root suite (tests/fuzz_replay.rs) replays every
//! regression input, seed and committed corpus input through the same
//! functions on every `cargo test`.

use std::path::PathBuf;
use std::sync::Arc;

use chatfsck::format::dispatch::entry;
use chatfsck::format::message_table::{Layout, RawConv, RawMsg, build};
use chatfsck::format::profile_of;
use chatfsck::format::trace::messages;
use chatfsck::lint::{self, Options};
use chatfsck::model::{Conversation, Dialect, Format, Loc, Name, SourceInfo};
use chatfsck::report::{self, formats, renderer};
use chatfsck::rules::{self, Selection};
use serde_json::Value;

use super::contract;

/// Every file parser, through detection: the input's first byte picks the
/// name it is saved under (`chatfsck_fuzz::NAMES`), the rest is the file.
/// Lint must answer (findings, or a one-line error naming the file), never
/// panic, hang or overflow its stack, and every report format must render
/// what it found with the hostile text escaped. Rendering costs several
/// times what lint does (SARIF holds the whole rule catalogue, HTML a whole
/// page), so half the executions render one of lint's formats and the
/// others none: the fuzzer spends most of its time in the parsers and
/// still reaches every format.
pub fn lint_file(data: &[u8]) {
    let Some((name, body)) = super::named(data) else {
        return;
    };
    let path = super::save("lint", name, body);
    let opts = Options {
        detail: lint::DETAIL_LIMIT,
        ..Options::default()
    };
    let outcome = match lint::lint(std::slice::from_ref(&path), &opts) {
        Ok(o) => o,
        Err(e) => {
            check_error(&e.to_string(), &path);
            return;
        }
    };
    for e in &outcome.errors {
        check_error(&e.to_string(), &path);
    }
    // The format is picked by the input's length and its last bytes,
    // which most mutations change, so an input of the corpus meets every
    // format in turn. Two formats cost over ten times any other under the
    // fuzzer's instrumentation, whatever was found: the human report
    // (Unicode line breaking) and SARIF (the whole rule catalogue). Each
    // gets one value in 256, the other formats the rest. The length alone
    // picked the human report for every input of exactly `-max_len` bytes,
    // which mutations reach often: a tenth of the corpus, and a fifth of
    // the run's time.
    //
    // Half the values render nothing: rendering and its check took as
    // long as the lint, and the search is first of all the parsers'. Half
    // the mutations of an input the corpus keeps are still rendered.
    let pick = pick(data);
    if pick & 256 != 0 {
        return;
    }
    let cheap: Vec<report::Format> = formats::<lint::Outcome>()
        .into_iter()
        .filter(|f| !COSTLY.contains(f))
        .collect();
    let format = match pick % 256 {
        n if n < COSTLY.len() => COSTLY[n],
        n => cheap[n % cheap.len()],
    };
    let render = renderer::<lint::Outcome>(format).expect("lint renders every format");
    let mut out = Vec::new();
    render(&outcome, &mut out).expect("rendering to memory");
    let text = String::from_utf8(out).expect("reports are UTF-8");
    super::escaped(format, &text);
}

/// A number taken from the input's length and its last eight bytes.
fn pick(data: &[u8]) -> usize {
    data.iter().rev().take(8).fold(data.len(), |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    })
}

/// The formats that render slowly whatever lint found.
const COSTLY: [report::Format; 2] = [report::Format::Human, report::Format::Sarif];

/// An error is one line and names the file.
fn check_error(message: &str, path: &std::path::Path) {
    assert!(!message.contains('\n'), "a multi-line error: {message:?}");
    assert!(
        message.contains(&path.display().to_string()),
        "an error that does not name the file: {message:?}"
    );
}

/// Repair, with its contract checked as a property on every input
/// (`chatfsck_fuzz::contract`): the copy is read, gains no finding, is
/// left as it is by a second repair, and keeps every payload (or the log
/// does); a repair that fails writes nothing. Gives the contract's
/// outcome (`Kept`: every copy would have been worse, so the repair kept
/// the input as it is), `None` for an input too short to name a file.
pub fn repair_file(data: &[u8]) -> Option<contract::Outcome> {
    let (name, body) = super::named(data)?;
    let input = super::save("repair-in", name, body);
    let work = super::scratch().join("repair-out");
    let _ = std::fs::remove_dir_all(&work);
    match contract::check(&super::Library, &input, &work) {
        Err(why) => panic!("repair contract broken on {name}: {why}"),
        Ok(outcome) => Some(outcome),
    }
}

/// The chunk-entry decoders of dispatch's key-value store: the fast
/// scanner answers only for values serde decodes to the same entry, and
/// neither panics or overflows its stack on any bytes.
pub fn chunk_entry(data: &[u8]) {
    let general = entry::serde(data);
    if let Some(fast) = entry::scan(data) {
        match &general {
            Ok(e) => assert_eq!(&fast, e, "the scanner and serde disagree"),
            Err(e) => panic!("the scanner accepted a value serde rejects: {e}"),
        }
    }
    let _ = entry::decode(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = chatfsck::format::dispatch::parse_key(s);
    }
}

/// Message-table rows (gbrain's `content_blocks`, a mapped table's text
/// column) built into a conversation and checked by every rule. The input
/// is rows separated by U+001E, each `index U+001F role U+001F content`;
/// the first byte says whether the content column may hold plain text (a
/// mapped table) or must be JSON (gbrain).
pub fn message_rows(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let text_content = mode & 1 == 1;
    let msgs = text
        .split('\u{1e}')
        .enumerate()
        .map(|(i, row)| {
            let mut f = row.splitn(3, '\u{1f}');
            let index = f.next().unwrap_or_default();
            RawMsg {
                rowid: Some(i as i64 + 1),
                conv: "c1".into(),
                index: index.parse::<i64>().map_err(|_| index.to_string()),
                role: f.next().map(str::to_string),
                content: f.next().map(str::to_string),
            }
        })
        .collect();
    let dialect = if text_content {
        Dialect::Table
    } else {
        Dialect::Gbrain
    };
    let layout = Layout {
        dialect,
        schema: None,
        table: "messages".into(),
        conversation: "conversation_id".into(),
        index: "message_index".into(),
        role: "role".into(),
        content: "content_blocks".into(),
        id: Some("id".into()),
        first_index: Some(0),
        executions: None,
        text_content,
        types: None,
    };
    let info = Arc::new(SourceInfo {
        path: PathBuf::from("messages.db"),
        format: Format::SqliteTable,
        dialect,
    });
    let conv = build(
        RawConv {
            id: "c1".into(),
            msgs,
            execs: Vec::new(),
        },
        &layout,
        &info,
    );
    let _ = rules::check(
        &conv,
        &Selection::default(),
        chatfsck::format::profile_of(&info),
    );
}

/// The trace formats' message readers: an OpenAI request body (dispatch's
/// trace database, OTLP), OpenInference and OpenTelemetry gen-AI message
/// lists (Phoenix, OTLP), flat attribute keys rebuilt into lists, and the
/// rules over what they read. The SQLite trace databases around them are
/// read by SQLite; what chatfsck parses is these values.
pub fn trace_messages(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loc = Loc::Row {
        table: Name::Static("spans"),
        key: Arc::from("span_id=fuzz"),
        rowid: Some(1),
    };
    let conv = |dialect| {
        Conversation::new(
            "fuzz",
            Arc::new(SourceInfo {
                path: PathBuf::from("traces.db"),
                format: Format::SqliteTrace,
                dialect,
            }),
        )
    };
    let (request, _) = messages::openai_request(text, &loc, conv(Dialect::OpenAi));
    let _ = rules::check(&request, &Selection::default(), profile_of(&request.source));
    // Reading JSON is serde_json's work; a value too deep for it is an
    // error there, not here.
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return;
    };
    for (dialect, read) in [
        (
            Dialect::OpenInference,
            messages::openinference as fn(&Value, &Loc) -> _,
        ),
        (Dialect::GenAi, messages::genai),
    ] {
        for value in [Some(v.clone()), messages::decoded(&v)]
            .into_iter()
            .flatten()
        {
            let (msgs, corrupt) = read(&value, &loc);
            let mut c = conv(dialect);
            c.messages = msgs;
            c.corrupt = corrupt;
            let _ = rules::check(&c, &Selection::default(), profile_of(&c.source));
        }
    }
    if let Value::Object(o) = &v {
        let flat = messages::unflatten(o.iter().map(|(k, x)| (k.as_str(), x.clone())));
        let _ = messages::list(&flat);
        let _ = messages::openinference(&flat, &loc);
    }
    let _ = messages::response_finish(&v);
}
