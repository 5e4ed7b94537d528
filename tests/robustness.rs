//! Damaged inputs never make chatfsck panic: every mutation of real fixtures
//! (truncated, bytes flipped, garbage spliced in) ends with exit 0, 1 or 2,
//! and errors are one line.

mod common;
use common::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn mutations(data: &[u8], rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for k in 0..count {
        let mut d = data.to_vec();
        match k % 4 {
            // A torn write: cut anywhere.
            0 => d.truncate(rng.next(d.len().max(1))),
            // Flipped bytes.
            1 => {
                for _ in 0..1 + rng.next(8) {
                    let i = rng.next(d.len());
                    d[i] ^= 1 << rng.next(8);
                }
            }
            // Garbage spliced in (NULs, high bytes, quotes, newlines).
            2 => {
                let at = rng.next(d.len());
                let junk: Vec<u8> = (0..1 + rng.next(40))
                    .map(|_| [0u8, 0xff, b'"', b'\n', b'{', b'\\', 0xc3][rng.next(7)])
                    .collect();
                d.splice(at..at, junk);
            }
            // A block overwritten with zeros (a crash on ext4).
            _ => {
                let at = rng.next(d.len());
                let len = (1 + rng.next(4096)).min(d.len() - at);
                d[at..at + len].fill(0);
            }
        }
        out.push(d);
    }
    out
}

#[test]
fn mutated_inputs_never_panic() {
    let inputs = [
        (
            "fixtures/orphan-tool-call/kimi-2336-shell-206.jsonl",
            "jsonl",
            60,
        ),
        (
            "fixtures/interleaved-message/anthropic-zeph-reflection.jsonl",
            "jsonl",
            40,
        ),
        ("fixtures/orphan-tool-call/openai-array.json", "json", 40),
        ("fixtures/dispatch/seed-000.db", "db", 60),
        ("fixtures/gbrain/gbrain.db", "db", 40),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let mut runs = 0;
    for (input, ext, count) in inputs {
        let data = std::fs::read(root().join(input)).unwrap();
        for (k, m) in mutations(&data, &mut rng, count).into_iter().enumerate() {
            let p = dir.path().join(format!("m{k}.{ext}"));
            std::fs::write(&p, &m).unwrap();
            let path = p.to_str().unwrap();
            let out = dir.path().join(format!("r{k}.{ext}"));
            for args in [
                vec!["lint", "--format", "json", path],
                vec!["inspect", path],
                vec!["repair", path, "-o", out.to_str().unwrap()],
            ] {
                let o = run(&args);
                runs += 1;
                let c = code(&o);
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(
                    (0..=2).contains(&c) && !err.contains("panicked"),
                    "{args:?} on a mutation of {input} (kept at {}): exit {c}\n{err}",
                    p.display()
                );
                if c == 2 {
                    assert_eq!(
                        err.lines().count(),
                        1,
                        "{args:?} on a mutation of {input}: {err}"
                    );
                }
            }
            let _ = std::fs::remove_file(&out);
        }
    }
    assert!(runs >= 600);
}
