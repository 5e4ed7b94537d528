//! What no report may hold raw, and the fast scan the fuzz targets check
//! every report with (fuzz/src/lib.rs). Its test runs in the root suite
//! (tests/conservation.rs includes this module), so CI checks it without
//! a build of its own.

/// A character no report may hold raw: a control character other than a
/// newline or a tab, or a bidi override or isolate.
pub fn forbidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The first character of `text` that is `forbidden`.
///
/// Every such character begins with a byte below 0x20, 0x7F, or the lead
/// byte 0xC2 (U+0080 to U+009F) or 0xE2 (the bidi controls), so the text
/// is scanned eight bytes at a time for those, and only a word that holds
/// one is decoded. A report is checked on every execution, and checking
/// it a character at a time cost the `lint_file` target more than the
/// lint it checks (each comparison is traced under the instrumentation).
pub fn raw_character(text: &str) -> Option<char> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Nonzero when some byte of `w` is zero (exact in the lowest one, and
    // any bit it sets is a hint to look closer, never a miss).
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let suspect = |w: u64| {
        (w.wrapping_sub(ONES * 0x20) & !w & HIGH)
            | zero(w ^ (ONES * 0x7F))
            | zero(w ^ (ONES * 0xC2))
            | zero(w ^ (ONES * 0xE2))
    };
    let bytes = text.as_bytes();
    let check = |from: usize, to: usize| {
        (from..to)
            .filter(|&i| matches!(bytes[i], 0x00..=0x1F | 0x7F | 0xC2 | 0xE2))
            // Each of those bytes starts a character.
            .filter_map(|i| text[i..].chars().next())
            .find(|&c| forbidden(c))
    };
    let mut at = 0;
    for word in bytes.chunks_exact(8) {
        let w = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        if suspect(w) != 0
            && let Some(c) = check(at, at + 8)
        {
            return Some(c);
        }
        at += 8;
    }
    check(at, bytes.len())
}

#[cfg(test)]
mod tests {
    use super::{forbidden, raw_character};

    /// The word scan finds what a scan of every character finds, for each
    /// character at each offset in a word, beside bytes that look alike.
    #[test]
    fn the_word_scan_finds_what_a_character_scan_finds() {
        let chars = (0..=0x10FFFFu32).filter_map(char::from_u32).filter(|c| {
            // Every character of one and two bytes (the lead 0xC2 among
            // them), the three-byte ones near the bidi controls (lead
            // 0xE2), every forbidden one, and a sample of the rest.
            let u = *c as u32;
            u < 0x800 || (0x2000..0x2100).contains(&u) || forbidden(*c) || u.is_multiple_of(4099)
        });
        for c in chars {
            for pad in 0..9 {
                for around in ["", "\u{20AC}\u{00A9}\n\t", "\u{2028}~ "] {
                    let text = format!("{}{around}{c}{around}xyz", "a".repeat(pad));
                    let want = text.chars().find(|&c| forbidden(c));
                    assert_eq!(raw_character(&text), want, "{text:?}");
                }
            }
        }
    }
}
