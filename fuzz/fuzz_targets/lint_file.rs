//! Every file parser, through detection: the input's first byte picks the
//! name it is saved under (`chatfsck_fuzz::NAMES`), the rest is the file.
//! Lint must answer (findings, or a one-line error naming the file), never
//! panic, hang or overflow its stack, and every report format must render
//! what it found with the hostile text escaped. Rendering costs several
//! times what lint does (SARIF holds the whole rule catalogue, HTML a whole
//! page), so half the executions render one of lint's formats and the
//! others none: the fuzzer spends most of its time in the parsers and
//! still reaches every format.
#![no_main]

use chatfsck::lint::{self, Options};
use chatfsck::report::{Format, formats, renderer};
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
    let cheap: Vec<Format> = formats::<lint::Outcome>()
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
    chatfsck_fuzz::escaped(format, &text);
});

/// A number taken from the input's length and its last eight bytes.
fn pick(data: &[u8]) -> usize {
    data.iter().rev().take(8).fold(data.len(), |h, &b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    })
}

/// The formats that render slowly whatever lint found.
const COSTLY: [Format; 2] = [Format::Human, Format::Sarif];

/// An error is one line and names the file.
fn check_error(message: &str, path: &std::path::Path) {
    assert!(!message.contains('\n'), "a multi-line error: {message:?}");
    assert!(
        message.contains(&path.display().to_string()),
        "an error that does not name the file: {message:?}"
    );
}
