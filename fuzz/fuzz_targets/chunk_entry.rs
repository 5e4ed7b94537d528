//! The chunk-entry decoders of dispatch's key-value store: the fast
//! scanner answers only for values serde decodes to the same entry, and
//! neither panics or overflows its stack on any bytes.
#![no_main]

use chatfsck::format::dispatch::entry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
});
