//! llm's message hash (llm/logs.py, 0.32 to 0.36): `message_hash(message,
//! parent_hash)` is `content_hash({"parent": parent_hash, "message":
//! message.to_dict()})`, `"b2:"` and the hex of a 16-byte BLAKE2b digest
//! of `canonical_json`: `json.dumps(obj, sort_keys=True, separators=(",",
//! ":"), ensure_ascii=False)`. The repair writes new messages with the
//! hashes llm would give them, and re-derives the stored hash of every
//! message it re-parents before trusting this code with it.
//!
//! Also `json.dumps(obj)` with Python's defaults (`", "`, `": "`,
//! `ensure_ascii=True`), how llm writes a part's `payload`.

use serde_json::Value;

/// BLAKE2b (RFC 7693), unkeyed, with an `n`-byte digest.
pub fn blake2b(data: &[u8], n: usize) -> Vec<u8> {
    const IV: [u64; 8] = [
        0x6a09_e667_f3bc_c908,
        0xbb67_ae85_84ca_a73b,
        0x3c6e_f372_fe94_f82b,
        0xa54f_f53a_5f1d_36f1,
        0x510e_527f_ade6_82d1,
        0x9b05_688c_2b3e_6c1f,
        0x1f83_d9ab_fb41_bd6b,
        0x5be0_cd19_137e_2179,
    ];
    const SIGMA: [[usize; 16]; 12] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    ];
    fn compress(h: &mut [u64; 8], block: &[u8; 128], t: u128, last: bool) {
        let mut m = [0u64; 16];
        for (i, w) in m.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&block[i * 8..i * 8 + 8]);
            *w = u64::from_le_bytes(b);
        }
        let mut v = [0u64; 16];
        v[..8].copy_from_slice(h);
        v[8..].copy_from_slice(&IV);
        v[12] ^= t as u64;
        v[13] ^= (t >> 64) as u64;
        if last {
            v[14] = !v[14];
        }
        let g = |v: &mut [u64; 16], a: usize, b: usize, c: usize, d: usize, x: u64, y: u64| {
            v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
            v[d] = (v[d] ^ v[a]).rotate_right(32);
            v[c] = v[c].wrapping_add(v[d]);
            v[b] = (v[b] ^ v[c]).rotate_right(24);
            v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
            v[d] = (v[d] ^ v[a]).rotate_right(16);
            v[c] = v[c].wrapping_add(v[d]);
            v[b] = (v[b] ^ v[c]).rotate_right(63);
        };
        for s in &SIGMA {
            g(&mut v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
            g(&mut v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
            g(&mut v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
            g(&mut v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
            g(&mut v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
            g(&mut v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
            g(&mut v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
            g(&mut v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
        }
        for i in 0..8 {
            h[i] ^= v[i] ^ v[i + 8];
        }
    }
    let mut h = IV;
    h[0] ^= 0x0101_0000 ^ n as u64;
    let mut t: u128 = 0;
    let mut chunks = data.chunks(128).peekable();
    if data.is_empty() {
        compress(&mut h, &[0; 128], 0, true);
    }
    while let Some(c) = chunks.next() {
        let mut block = [0u8; 128];
        block[..c.len()].copy_from_slice(c);
        t += c.len() as u128;
        compress(&mut h, &block, t, chunks.peek().is_none());
    }
    h.iter().flat_map(|w| w.to_le_bytes()).take(n).collect()
}

/// `content_hash(obj)`: `b2:` and the hex digest of its canonical JSON.
pub fn content_hash(obj: &Value) -> String {
    let digest = blake2b(canonical(obj).as_bytes(), 16);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("b2:{hex}")
}

/// `message_hash`: the message's dict under its parent's hash.
pub fn message_hash(message: &Value, parent: Option<&str>) -> String {
    let mut o = serde_json::Map::new();
    o.insert(
        "parent".into(),
        parent.map_or(Value::Null, |p| Value::String(p.into())),
    );
    o.insert("message".into(), message.clone());
    content_hash(&Value::Object(o))
}

/// `canonical_json`: keys sorted (by code point), no whitespace,
/// non-ASCII as is.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out, true);
    out
}

/// `json.dumps(v)` with Python's defaults: members in their order,
/// `", "` and `": "`, non-ASCII escaped.
pub fn py_dumps(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out, false);
    out
}

fn write(v: &Value, out: &mut String, canonical: bool) {
    let (comma, colon) = if canonical { (",", ":") } else { (", ", ": ") };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(s, out, !canonical),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(comma);
                }
                write(x, out, canonical);
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut members: Vec<(&String, &Value)> = o.iter().collect();
            if canonical {
                // Python sorts `str` keys by code point: UTF-8 byte order.
                members.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, x)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(comma);
                }
                string(k, out, !canonical);
                out.push_str(colon);
                write(x, out, canonical);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Python's encoder writes it.
fn string(s: &str, out: &mut String, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python: `hashlib.blake2b(b"", digest_size=16).hexdigest()` and of `b"abc"`.
    #[test]
    fn blake2b_matches_pythons_hashlib() {
        let hex = |d: Vec<u8>| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(blake2b(b"", 16)), "cae66941d9efbd404e4d88758ea67670");
        assert_eq!(hex(blake2b(b"abc", 16)), "cf4ab791c62b8d2b2109c90275287816");
        let long = vec![b'x'; 300];
        assert_eq!(hex(blake2b(&long, 16)), "c2f093e41879e412280bfcc0ed6533e4");
    }

    /// A hash llm 0.36 wrote (fixtures/llm/store.db): the system message
    /// `Answer briefly.` at the root of every thread.
    #[test]
    fn a_message_hash_of_llm() {
        let m = serde_json::json!({"role": "system", "parts": [{"type": "text", "text": "Answer briefly."}]});
        assert_eq!(
            message_hash(&m, None),
            "b2:aeccfaaf1c411db38c5dca610fa43dd8"
        );
    }

    #[test]
    fn python_dumps_escapes_as_python_does() {
        let v = serde_json::json!({"name": "b\u{e9}\u{1f600}", "output": "a\"\n\u{1}"});
        assert_eq!(
            py_dumps(&v),
            r#"{"name": "b\u00e9\ud83d\ude00", "output": "a\"\n\u0001"}"#
        );
        assert_eq!(
            canonical(&v),
            "{\"name\":\"b\u{e9}\u{1f600}\",\"output\":\"a\\\"\\n\\u0001\"}"
        );
    }
}
