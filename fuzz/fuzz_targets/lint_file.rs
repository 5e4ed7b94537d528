//! Every file parser, through detection: the input's first byte picks the
//! name it is saved under (`chatfsck_fuzz::NAMES`), the rest is the file.
//! Lint must answer (findings, or a one-line error naming the file), never
//! panic, hang or overflow its stack, and every report format must render
//! what it found with the hostile text escaped. The human report (wrapped
//! diagnostics), SARIF (the whole rule catalogue) and HTML (a whole page)
//! each cost several times what lint does: they render when the high bit
//! of the first byte is set, so the fuzzer spends most executions on the
//! parsers and still reaches them.
#![no_main]

use chatfsck::lint::{self, Options};
use chatfsck::report::{Format, renderer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((name, body)) = chatfsck_fuzz::named(data) else {
        return;
    };
    let path = chatfsck_fuzz::save("lint", name, body);
    let opts = Options {
        detail: lint::DETAIL_LIMIT,
        ..Options::default()
    };
    let outcome = match lint::lint(&[path.clone()], &opts) {
        Ok(o) => o,
        Err(e) => {
            check_error(&e.to_string(), &path);
            return;
        }
    };
    for e in &outcome.errors {
        check_error(&e.to_string(), &path);
    }
    let mut formats = vec![Format::Json, Format::Github, Format::Markdown];
    if data[0] & 0x80 != 0 {
        formats.extend([Format::Human, Format::Sarif, Format::Html]);
    }
    for format in formats {
        let render = renderer::<lint::Outcome>(format).expect("lint renders every format");
        let mut out = Vec::new();
        render(&outcome, &mut out).expect("rendering to memory");
        let text = String::from_utf8(out).expect("reports are UTF-8");
        chatfsck_fuzz::escaped(format, &text);
    }
});

/// An error is one line and names the file.
fn check_error(message: &str, path: &std::path::Path) {
    assert!(!message.contains('\n'), "a multi-line error: {message:?}");
    assert!(
        message.contains(&path.display().to_string()),
        "an error that does not name the file: {message:?}"
    );
}
