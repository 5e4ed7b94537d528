//! Encrypted content a store keeps for its provider to read back (OpenAI
//! Responses: a reasoning item's `encrypted_content`), checked for its
//! shape only: whether it is still what the provider issued can only be
//! known by the provider, which holds the key.

use crate::model::Loc;

/// An item whose encrypted content is not well-formed.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub loc: Loc,
    /// The item's type (`reasoning`).
    pub kind: String,
    /// The content's length, in characters.
    pub len: usize,
    pub problem: Seal,
    /// Whether the record is the item alone, which a writer can drop.
    pub alone: bool,
}

/// What is wrong with the content's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// A character outside URL-safe base64, or padding inside.
    NotBase64,
    /// Not a whole token: its length does not fit a Fernet token (padded
    /// base64 of version, timestamp, IV, whole cipher blocks, HMAC): cut,
    /// or characters lost.
    Cut,
}

/// The problem with a Fernet token (`gAAAAA…`, as the Responses API issues
/// them), or `None` when it is well-formed or is no Fernet token at all
/// (another provider's format, which this cannot judge).
pub fn fernet_problem(s: &str) -> Option<Seal> {
    if !s.starts_with("gAAAAA") {
        return None;
    }
    let body = s.trim_end_matches('=');
    let pad = s.len() - body.len();
    if pad > 2
        || !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Some(Seal::NotBase64);
    }
    // Decoded bytes: 1 version + 8 timestamp + 16 IV + 16·k cipher + 32 HMAC.
    let bytes = body.len() * 6 / 8;
    // A token is padded base64: its length is a multiple of 4.
    let whole = s.len().is_multiple_of(4);
    if !whole || bytes < 73 || !(bytes - 57).is_multiple_of(16) {
        return Some(Seal::Cut);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A well-formed token: version, timestamp, IV, one cipher block, HMAC.
    fn token(blocks: usize) -> String {
        use base64::Engine;
        // Version 0x80, then a timestamp whose high bytes are 0 (`gAAAAA`).
        let mut raw = vec![0x80u8, 0, 0, 0, 0, 0x6a, 1, 2, 3];
        raw.extend(std::iter::repeat_n(7u8, 16 + 16 * blocks + 32));
        base64::engine::general_purpose::URL_SAFE.encode(raw)
    }

    #[test]
    fn whole_tokens_pass_and_cut_ones_do_not() {
        for blocks in 1..6 {
            let t = token(blocks);
            assert!(t.starts_with("gAAAAA"), "{t}");
            assert_eq!(fernet_problem(&t), None, "{t}");
            for cut in 1..=20 {
                let short = &t[..t.len() - cut];
                assert!(
                    fernet_problem(short).is_some(),
                    "{blocks} blocks, cut {cut}"
                );
            }
        }
        let t = token(2);
        assert_eq!(
            fernet_problem(&format!("{}!{}", &t[..40], &t[41..])),
            Some(Seal::NotBase64)
        );
        // Another provider's format is not judged.
        assert_eq!(fernet_problem("opaque-blob"), None);
    }
}
