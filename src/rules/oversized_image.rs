use super::{Ctx, Rule};
use crate::finding::profile::Pattern;
use crate::finding::{Finding, Severity};
use crate::model::chain::{BlockIssue, Unreached};

/// The API's limit on an image's base64 data (5 MiB).
pub const BASE64_LIMIT: u64 = 5 * 1024 * 1024;
/// The API refuses an image with a side longer than this many pixels…
pub const SIDE_LIMIT: u64 = 8000;
/// … or than this many, in a request that holds more than
/// [`MANY_IMAGES`] images.
pub const MANY_SIDE_LIMIT: u64 = 2000;
pub const MANY_IMAGES: usize = 20;

pub static RULE: Rule = Rule {
    name: "oversized-image",
    severity: Severity::Error,
    summary: "an image the request cannot carry: base64 over 5 MB (the client may refuse to resume), or a side over 8000 px (2000 px with more than 20 images)",
    repair: Some(
        "replace the image with a text block saying what was removed and why; the image is kept in the repair log",
    ),
    doc: r#"## What it does
Finds `image` blocks (in user messages and in tool results) of the
records a resume of a parent chain sends that the request cannot carry:
- base64 data longer than 5 MiB (5,242,880 characters);
- a width or height over 8000 pixels, or over 2000 pixels when the
  session holds more than 20 images (read from the image's own header:
  PNG, JPEG, GIF, WebP and the other formats `imagesize` knows).

## Why is this bad?
A client that compares `source.data.length` with the API's limit
refuses to send the request: every resume of the session fails (rc 1)
until the image is removed or shrunk. An image within 5 MB but too large
in pixels is sent, and the API refuses it, on this turn and on every turn
after it: the image stays in the history (anthropics/claude-code#13480).

## What providers answer
- the client, before sending (rc 1): `Image base64 size (7.5MB) exceeds API limit (5MB). Please resize the image before sending.`
- Anthropic: `messages.N.content.M.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels`
- Anthropic, more than 20 images: `messages.N.content.M.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels`

## Example
```jsonl
{"type":"user","uuid":"a","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR… (7,842,560 characters)"}}]}}
```

## Repair
Replaces the image (a block of the message, or an image inside a tool
result) with a text block that says an image was removed, and why (its
size, the limit). The image block as it was goes to the repair log;
every other block of the record is kept byte for byte.
"#,
    check,
};

fn check(ctx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let Some(chain) = ctx.conv.chain.as_deref() else {
        return;
    };
    // Only the records the client resumes are sent: an image before a
    // compaction or on an abandoned branch is neither refused nor counted.
    let sent = || {
        chain
            .records
            .iter()
            .filter(|r| r.unreached == Unreached::No)
    };
    let images = sent()
        .flat_map(|r| &r.issues)
        .filter(|i| matches!(i, BlockIssue::Image { .. }))
        .count();
    let many = images > MANY_IMAGES;
    for r in sent() {
        // Which image of its block each is (a tool result can hold several).
        let mut seen: Vec<usize> = Vec::new();
        for issue in &r.issues {
            let BlockIssue::Image {
                block,
                base64_len,
                size,
            } = issue
            else {
                continue;
            };
            let nth = seen.iter().filter(|b| *b == block).count();
            seen.push(*block);
            let replace = |why: String| {
                vec![crate::finding::Action::ReplaceImage {
                    loc: r.loc.clone(),
                    block: *block,
                    nth,
                    why,
                }]
            };
            let line = r.loc.line().unwrap_or(0);
            if *base64_len > BASE64_LIMIT {
                let mb = *base64_len as f64 / (1024.0 * 1024.0);
                let resume = ctx.profile().on(Pattern::OversizedImageBase64);
                let mb_text = format!("{mb:.1}");
                let vars = [("mb", mb_text.as_str())];
                let mut f = ctx
                    .finding(
                        &RULE,
                        None,
                        r.loc.clone(),
                        format!(
                            "the image in content[{block}] on line {line} is {base64_len} base64 characters ({mb:.1} MB), over the 5 MB limit: {}",
                            resume.says("the request is refused", &vars)
                        ),
                    )
                    .label(&r.loc, format!("content[{block}]"))
                    .notes(ctx.notes(&resume, None, &vars))
                    .fix(replace(format!("its base64 data was {base64_len} characters ({mb:.1} MB), over the 5 MB the API accepts")));
                f.severity = resume.severity_or(RULE.severity);
                out.push(f);
                continue;
            }
            let Some((w, h)) = *size else {
                continue;
            };
            let (limit, what) = if many {
                (MANY_SIDE_LIMIT, " for many-image requests")
            } else {
                (SIDE_LIMIT, "")
            };
            if w.max(h) <= limit {
                continue;
            }
            let why = if many {
                format!(" (the session holds {images} images, more than {MANY_IMAGES})")
            } else {
                String::new()
            };
            out.push(
                ctx.finding(
                    &RULE,
                    None,
                    r.loc.clone(),
                    format!("the image in content[{block}] on line {line} is {w}×{h} pixels, over the API's {limit}-pixel limit{why}: every request of the session is refused"),
                )
                .label(&r.loc, format!("content[{block}]: {w}×{h} px"))
                .note(format!("the API answers `At least one of the image dimensions exceed max allowed size{what}: {limit} pixels`, on this turn and every later one"))
                .fix(replace(format!("it was {w}×{h} pixels, over the {limit}-pixel side the API accepts{why}"))),
            );
        }
    }
}
