//! Message-table rows (gbrain's `content_blocks`, a mapped table's text
//! column) built into a conversation and checked by every rule. The input
//! is rows separated by U+001E, each `index U+001F role U+001F content`;
//! the first byte says whether the content column may hold plain text (a
//! mapped table) or must be JSON (gbrain).
#![no_main]

use std::path::PathBuf;
use std::sync::Arc;

use chatfsck::format::message_table::{Layout, RawConv, RawMsg, build};
use chatfsck::model::{Dialect, Format, SourceInfo};
use chatfsck::rules::{self, Selection};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
});
