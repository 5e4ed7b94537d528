//! The trace formats' message readers: an OpenAI request body (dispatch's
//! trace database, OTLP), OpenInference and OpenTelemetry gen-AI message
//! lists (Phoenix, OTLP), flat attribute keys rebuilt into lists, and the
//! rules over what they read. The SQLite trace databases around them are
//! read by SQLite; what chatfsck parses is these values.
#![no_main]

use std::path::PathBuf;
use std::sync::Arc;

use chatfsck::format::profile_of;
use chatfsck::format::trace::messages;
use chatfsck::model::{Conversation, Dialect, Format, Loc, Name, SourceInfo};
use chatfsck::rules::{self, Selection};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
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
});
