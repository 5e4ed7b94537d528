use super::{Ctx, Rule};
use crate::finding::{Finding, Severity};

pub static RULE: Rule = Rule {
    name: "digest-mismatch",
    severity: Severity::Error,
    summary: "a record, document or chunk of a hash-linked store does not match the digest that names it (or is gone): the client refuses to load the session",
    repair: None,
    doc: r#"## What it does
Finds the parts of a hash-linked session store that do not match the
SHA-256 digest naming them. In Mistral Vibe's unified session store
(`~/.vibe/logs/session/unified/<id>/`) every journal record carries its own
`record_sha256` and the `previous_record_sha256` of the record before it;
`CURRENT` names the manifest of the current generation by its digest, the
manifest names its documents by theirs, and transcript chunks are named
after their digest. The finding is a journal record whose bytes do not
hash to its `record_sha256`, a broken chain or sequence, a document or
chunk whose bytes do not match its reference, or one that is gone.

## Why is this bad?
The client checks every digest when it loads the session and refuses it
at the first that does not hold: the session does not resume at all,
even though its messages are still on disk. The usual causes are a hand
edit of a journal line or a chunk, a partial copy or sync of the session
directory, and a disk that lost a write.

## What the apps do
Mistral Vibe 3.0.3 (`UnifiedSessionStore._load`, `_read_journal`) raises
on the first mismatch ("recovery journal record digest mismatch",
"recovery journal digest chain mismatch", "manifest digest mismatch",
"stored chunk digest mismatch"): the session cannot be resumed.

## Example
```text
journal/0000000000000004.jsonl  line 1  {"payload":{…},"previous_record_sha256":null,"record_sha256":"9f2c…","sequence":4,…}
                                        the line without its record_sha256 hashes to 41d7…
```

## Repair
Report only. Restore the file from a backup or the original copy; a
digest recomputed over edited bytes would hide the edit, not undo it.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for m in &ctx.conv.digest_mismatches {
        let f = ctx
            .finding(&RULE, None, m.loc.clone(), m.what.clone())
            .label(&m.loc, "fails the client's digest check")
            .note(m.client.clone());
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{DigestMismatch, Loc};
    use crate::rules::testutil::*;

    #[test]
    fn a_digest_mismatch_is_reported_with_what_the_client_does() {
        let mut c = conv(crate::model::Dialect::MistralVibe)
            .user("list")
            .assistant("listed")
            .build();
        assert!(rules_of(&c, "digest-mismatch").is_empty());
        c.digest_mismatches.push(DigestMismatch {
            loc: Loc::Row {
                table: "journal/0000000000000004.jsonl".into(),
                key: "line 1".into(),
                rowid: None,
            },
            what: "journal record 4 does not hash to its `record_sha256`".into(),
            client: "the client refuses to load the session".into(),
        });
        let f = rules_of(&c, "digest-mismatch");
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.contains("record 4"), "{}", f[0].summary);
    }
}
