//! The real clients as the judge of a repair. Each case repairs one Claude
//! Code or Codex fixture with the built binary, resumes the repaired copy
//! in the real client (pinned Claude Code 2.1.330 / Codex 0.169.0, offline,
//! against the loopback mock of `tests/oracle/oracle.py`) and
//! asserts what docs/clients.md says a whole resume is: the client resumed
//! (rc 0), the request it sent passes the provider validator, and every
//! unit of history in the copy reached the request (`units_sent ==
//! units_present`), except where the client leaves history out by design
//! (a compaction), which the case names with the numbers measured.
//!
//! Needs the clients and Python 3: `tests/oracle/install.sh` (npm, ~770 MB,
//! into `target/tools/clients`; `scripts/test-all` does it and sets
//! `CLIENTS_PREFIX`). Without them every case is listed as ignored with that
//! command (build.rs decides, from what the machine has); it never passes
//! without running. `CLIENTS_PREFIX` points elsewhere.
//!
//! Every Claude Code and Codex fixture has a case, and none is ignored:
//! each repaired copy resumes whole (or as the client means it to).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Clone, Copy)]
enum Client {
    Claude,
    Codex,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
        }
    }
}

/// What the resume of the repaired copy must show.
#[derive(Clone, Copy)]
enum Expect {
    /// rc 0, a valid request, every unit sent.
    Whole,
    /// rc 0, a valid request, and exactly these units of the copy sent:
    /// the client leaves the rest out by design (docs/clients.md).
    ByDesign { sent: u64, present: u64 },
    /// The client refuses to resume the file on its own, by design (a
    /// sub-agent file): rc 1 with this text in its output.
    Refused(&'static str),
}

fn oracle_dir() -> PathBuf {
    root().join("tests/oracle")
}

fn clients_prefix() -> PathBuf {
    let p =
        PathBuf::from(std::env::var_os("CLIENTS_PREFIX").unwrap_or("target/tools/clients".into()));
    if p.is_absolute() { p } else { root().join(p) }
}

/// Fail, saying how to install, when the oracle or the clients are missing.
fn require_oracle() -> (PathBuf, PathBuf) {
    let dir = oracle_dir();
    let oracle = dir.join("oracle.py");
    assert!(oracle.is_file(), "{} is missing", oracle.display());
    let prefix = clients_prefix();
    let claude = prefix.join("node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    let codex = prefix.join("node_modules/@openai/codex/bin/codex.js");
    assert!(
        claude.is_file() && codex.is_file(),
        "the real clients are not installed in {}: run \
         `tests/oracle/install.sh` (needs npm and ~770 MB; scripts/test-all does it), \
         or set CLIENTS_PREFIX to where they are",
        prefix.display()
    );
    (oracle, prefix)
}

/// Resume `session` in the real client, the oracle writing to `out`: its
/// summary line.
fn resume(
    oracle: &Path,
    prefix: &Path,
    client: Client,
    session: &Path,
    out: &Path,
) -> serde_json::Value {
    resume_with(oracle, prefix, client, session, out, &[])
}

/// [`resume`], with more variables for the oracle (the mock's).
fn resume_with(
    oracle: &Path,
    prefix: &Path,
    client: Client,
    session: &Path,
    out: &Path,
    env: &[(&str, &str)],
) -> serde_json::Value {
    let o = Command::new("python3")
        .arg(oracle)
        .arg(client.name())
        .arg(session)
        .arg(out)
        .args(["--timeout", "180"])
        .env("CLIENTS_PREFIX", prefix)
        .envs(env.iter().copied())
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "{}: the oracle printed no summary (exit {:?}): {}{}",
                session.display(),
                o.status.code(),
                text,
                String::from_utf8_lossy(&o.stderr)
            )
        })
}

fn case(fixture: &str, client: Client, expect: Expect) {
    let (oracle, prefix) = require_oracle();
    let input = root().join(fixture);
    let before = fingerprint(&input);
    let dir = tempfile::tempdir().unwrap();
    // The copy keeps the file name: the clients find a session by its id.
    let copy = dir.path().join(input.file_name().unwrap());
    let o = run(&[
        "repair",
        "--format",
        "json",
        input.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{fixture}: repair failed: {}", stderr(&o));
    let log: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        fingerprint(&input),
        before,
        "{fixture}: the input was touched"
    );
    let out = dir.path().join("oracle");
    let summary = resume(&oracle, &prefix, client, &copy, &out);
    let context = format!(
        "{fixture} ({}), repaired with {} edit(s) {}:\n{summary:#}",
        client.name(),
        log["edits"].as_array().map_or(0, Vec::len),
        log["edits"]
    );
    let (sent, present) = (&summary["units_sent"], &summary["units_present"]);
    match expect {
        Expect::Refused(text) => {
            assert_eq!(summary["rc"], 1, "{context}");
            assert!(summary.to_string().contains(text), "{context}");
            return;
        }
        Expect::Whole => {
            assert_eq!(sent, present, "history lost on resume: {context}");
        }
        Expect::ByDesign {
            sent: s,
            present: p,
        } => {
            assert_eq!(
                (sent.as_u64(), present.as_u64()),
                (Some(s), Some(p)),
                "{context}"
            );
        }
    }
    assert_eq!(summary["rc"], 0, "the client did not resume: {context}");
    assert_eq!(summary["valid"], true, "the request is invalid: {context}");
    assert!(
        present.as_u64().is_some_and(|n| n > 0),
        "nothing counted: {context}"
    );
    let request = std::fs::read_to_string(Path::new(&out).join("request.json")).unwrap();
    // The oracle counts a tool result by its id: a result the client made
    // up in place of one it dropped would count as sent.
    assert!(
        !request.contains("[Tool result missing due to internal error]"),
        "the client replaced a result with its own placeholder: {context}"
    );
}

macro_rules! cases {
    ($($(#[$attr:meta])* $name:ident: $client:ident $fixture:literal $expect:expr;)*) => {
        $(
            #[test]
            #[cfg_attr(
                not(all(has_tool = "clients", has_tool = "python3")),
                ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
            )]
            $(#[$attr])*
            fn $name() {
                case($fixture, Client::$client, $expect);
            }
        )*
    };
}

cases! {
    // Codex 0.169.0: every fixture, repaired.
    codex_healthy_rollout: Codex "fixtures/codex/healthy/rollout.jsonl" Expect::Whole;
    // Members named twice, at the top and in payloads: read with their
    // last values, as Codex reads them; the copy is the input.
    codex_member_named_twice: Codex "tests/data/codex/member-named-twice.jsonl" Expect::Whole;
    // 1 of the copy's 29 items follows the compacted line; the 28 before
    // it are replaced by replacement_history, by design.
    codex_compacted_replacement_history: Codex "fixtures/codex/compacted/compacted-replacement-history.jsonl"
        Expect::ByDesign { sent: 1, present: 29 };
    codex_middle_output_deleted: Codex "fixtures/codex/orphan-tool-call/middle-output-deleted.jsonl" Expect::Whole;
    codex_end_truncated_after_call: Codex "fixtures/codex/orphan-tool-call/end-truncated-after-call.jsonl" Expect::Whole;
    codex_custom_tool_call_no_output: Codex "fixtures/codex/orphan-tool-call/custom-tool-call-no-output.jsonl" Expect::Whole;
    codex_custom_tool_call_function_output: Codex "fixtures/codex/orphan-tool-call/custom-tool-call-function-output.jsonl" Expect::Whole;
    codex_call_deleted: Codex "fixtures/codex/orphan-tool-result/call-deleted.jsonl" Expect::Whole;
    codex_ends_on_reasoning: Codex "fixtures/codex/reasoning-without-follower/ends-on-reasoning.jsonl" Expect::Whole;
    codex_torn_message_after_reasoning: Codex "fixtures/codex/reasoning-without-follower/torn-message-after-reasoning.jsonl" Expect::Whole;
    codex_torn_last_line: Codex "fixtures/codex/torn-tail/torn-last-line.jsonl" Expect::Whole;
    // The input's request is refused (two calls with one call_id); the
    // copy drops the repeated line and is the healthy rollout again.
    codex_call_written_twice: Codex "fixtures/codex/duplicate-tool-call-id/call-written-twice.jsonl" Expect::Whole;
    // Issue 39, pattern 2: the later call and its output get a call_id of their own.
    codex_id_reused_later: Codex "fixtures/codex/duplicate-tool-call-id/id-reused-later.jsonl" Expect::Whole;
    // Issue 39: the ids the API refuses are removed.
    codex_foreign_item_ids: Codex "fixtures/codex/invalid-item-id/foreign-ids.jsonl" Expect::Whole;
    // Issue 39: the cut reasoning item is dropped (the log keeps it).
    codex_cut_encrypted_reasoning: Codex "fixtures/codex/damaged-encrypted-content/cut-reasoning.jsonl" Expect::Whole;
    // Issue 39: a call's name with NULs: the input's request is refused
    // (`codex_sends_a_call_name_with_nuls_as_stored`); the copy's call is
    // named without them.
    codex_nul_in_call_name: Codex "fixtures/codex/invalid-tool-name/nul-in-call-name.jsonl" Expect::Whole;
    // The input is not resumed at all (`codex_refuses_a_rollout_that_is_not_utf8`).
    codex_not_utf8_byte_in_a_call: Codex "fixtures/codex/not-utf8/byte-in-a-call.jsonl" Expect::Whole;

    // Claude Code 2.1.330: the healthy fixtures, through repair, today.
    claude_healthy_linear: Claude "fixtures/claude-code/healthy/linear.jsonl" Expect::Whole;
    claude_healthy_parallel_tool_calls: Claude "fixtures/claude-code/healthy/parallel-tool-calls.jsonl" Expect::Whole;
    claude_healthy_split_message_result_between: Claude "fixtures/claude-code/healthy/split-message-result-between.jsonl" Expect::Whole;
    claude_healthy_split_message_chain_through_result: Claude "fixtures/claude-code/healthy/split-message-chain-through-result.jsonl" Expect::Whole;
    claude_healthy_hook_progress_chain: Claude "fixtures/claude-code/healthy/hook-progress-chain.jsonl" Expect::Whole;
    claude_healthy_two_turns_stop_hooks: Claude "fixtures/claude-code/healthy/two-turns-stop-hooks.jsonl" Expect::Whole;
    claude_healthy_thinking: Claude "fixtures/claude-code/healthy/thinking.jsonl" Expect::Whole;
    // The walk stops at the compact_boundary: lines 1–8 are not sent.
    claude_healthy_compact_boundary: Claude "fixtures/claude-code/healthy/compact-boundary.jsonl"
        Expect::ByDesign { sent: 11, present: 19 };
    claude_healthy_live_tail: Claude "fixtures/claude-code/healthy/live-tail.jsonl" Expect::Whole;
    claude_healthy_image_prompt: Claude "fixtures/claude-code/healthy/image-prompt.jsonl" Expect::Whole;
    // A sub-agent file is not a session the client resumes on its own.
    claude_healthy_subagent: Claude "fixtures/claude-code/healthy/subagent.jsonl"
        Expect::Refused("No conversation found with session ID");

    // Claude Code 2.1.330: broken fixtures the repair already resumes whole
    // (the client bridges the gap itself, or the repair drops a torn or NUL
    // last line). The validator checks a signature's shape only, so
    // `damaged` passes here; the API would still refuse it.
    claude_progress_deleted_gap_2s: Claude "fixtures/claude-code/dangling-parent/progress-deleted-gap-2s.jsonl" Expect::Whole;
    claude_progress_deleted_gap_5000ms: Claude "fixtures/claude-code/dangling-parent/progress-deleted-gap-5000ms.jsonl" Expect::Whole;
    claude_nul_last_line: Claude "fixtures/claude-code/nul-run/nul-last-line.jsonl" Expect::Whole;
    claude_end_truncated_after_tool_use: Claude "fixtures/claude-code/orphan-tool-call/end-truncated-after-tool-use.jsonl" Expect::Whole;
    claude_root_points_to_leaf: Claude "fixtures/claude-code/parent-cycle/root-points-to-leaf.jsonl" Expect::Whole;
    claude_signature_damaged: Claude "fixtures/claude-code/thinking-signature/damaged.jsonl" Expect::Whole;
    claude_torn_tail_no_newline: Claude "fixtures/claude-code/torn-tail/last-line-torn-no-newline.jsonl" Expect::Whole;

    // Claude Code 2.1.330: the broken fixtures, once the writer lands.
    claude_all_progress_stripped: Claude "fixtures/claude-code/dangling-parent/all-progress-stripped.jsonl" Expect::Whole;
    claude_progress_deleted_gap_13s: Claude "fixtures/claude-code/dangling-parent/progress-deleted-gap-13s.jsonl" Expect::Whole;
    claude_progress_deleted_gap_5001ms: Claude "fixtures/claude-code/dangling-parent/progress-deleted-gap-5001ms.jsonl" Expect::Whole;
    // The call's own result is the record before it: the re-link skips it.
    claude_torn_prompt_result_before_call: Claude "fixtures/claude-code/dangling-parent/torn-prompt-result-before-call.jsonl" Expect::Whole;
    claude_turn_duration_deleted: Claude "fixtures/claude-code/dangling-parent/turn-duration-deleted.jsonl" Expect::Whole;
    // Both records kept: the earlier gets a uuid of its own.
    claude_different_record_appended: Claude "fixtures/claude-code/duplicate-uuid/different-record-appended.jsonl" Expect::Whole;
    // Both records kept: the earlier gets a uuid of its own.
    claude_different_records_adjacent: Claude "fixtures/claude-code/duplicate-uuid/different-records-adjacent.jsonl" Expect::Whole;
    claude_exact_duplicate_adjacent: Claude "fixtures/claude-code/duplicate-uuid/exact-duplicate-adjacent.jsonl" Expect::Whole;
    claude_exact_duplicate_appended: Claude "fixtures/claude-code/duplicate-uuid/exact-duplicate-appended.jsonl" Expect::Whole;
    claude_side_branch_record_appended: Claude "fixtures/claude-code/duplicate-uuid/side-branch-record-appended.jsonl" Expect::Whole;
    claude_empty_text_assistant_empty: Claude "fixtures/claude-code/empty-text-block/assistant-empty.jsonl" Expect::Whole;
    claude_empty_text_assistant_whitespace: Claude "fixtures/claude-code/empty-text-block/assistant-whitespace.jsonl" Expect::Whole;
    claude_empty_text_final_answer_empty: Claude "fixtures/claude-code/empty-text-block/final-answer-empty.jsonl" Expect::Whole;
    claude_empty_text_user_prompt_whitespace: Claude "fixtures/claude-code/empty-text-block/user-prompt-whitespace.jsonl" Expect::Whole;
    claude_glued_final_answer: Claude "fixtures/claude-code/glued-records/final-answer-glued-to-summary.jsonl" Expect::Whole;
    claude_glued_prompt: Claude "fixtures/claude-code/glued-records/prompt-glued-to-summary.jsonl" Expect::Whole;
    claude_lone_surrogate_assistant_text: Claude "fixtures/claude-code/lone-surrogate/assistant-text.jsonl" Expect::Whole;
    claude_lone_surrogate_tool_result: Claude "fixtures/claude-code/lone-surrogate/tool-result.jsonl" Expect::Whole;
    claude_lone_surrogate_user_prompt: Claude "fixtures/claude-code/lone-surrogate/user-prompt.jsonl" Expect::Whole;
    claude_nul_tool_result: Claude "fixtures/claude-code/nul-run/nul-tool-result.jsonl" Expect::Whole;
    claude_nul_user_prompt: Claude "fixtures/claude-code/nul-run/nul-user-prompt.jsonl" Expect::Whole;
    claude_middle_result_deleted: Claude "fixtures/claude-code/orphan-tool-call/middle-result-deleted.jsonl" Expect::Whole;
    claude_parallel_chain_result_deleted: Claude "fixtures/claude-code/orphan-tool-call/parallel-chain-result-deleted.jsonl" Expect::Whole;
    claude_parallel_sibling_result_deleted: Claude "fixtures/claude-code/orphan-tool-call/parallel-sibling-result-deleted.jsonl" Expect::Whole;
    claude_parallel_tool_use_deleted: Claude "fixtures/claude-code/orphan-tool-result/parallel-tool-use-deleted.jsonl" Expect::Whole;
    claude_tool_use_deleted: Claude "fixtures/claude-code/orphan-tool-result/tool-use-deleted.jsonl" Expect::Whole;
    claude_signature_empty: Claude "fixtures/claude-code/thinking-signature/empty.jsonl" Expect::Whole;
    claude_signature_missing: Claude "fixtures/claude-code/thinking-signature/missing.jsonl" Expect::Whole;
    claude_signature_truncated: Claude "fixtures/claude-code/thinking-signature/truncated.jsonl" Expect::Whole;
    claude_torn_then_next_record: Claude "fixtures/claude-code/torn-write/torn-then-next-record.jsonl" Expect::Whole;
    claude_torn_user_prompt: Claude "fixtures/claude-code/torn-write/torn-user-prompt.jsonl" Expect::Whole;
    // One record of a split reply carries another `message.id`: the
    // input sends 12 of 14 units (the record's call and its result are
    // left out); the copy, the record given the reply's id, all 14.
    claude_odd_message_id_last_call: Claude "fixtures/claude-code/mismatched-message-id/last-call.jsonl" Expect::Whole;
    claude_odd_message_id_middle_call: Claude "fixtures/claude-code/mismatched-message-id/middle-call.jsonl" Expect::Whole;
    // The first call's record, on the branch the resume walks: the input is
    // sent whole (the record as a reply of its own), and so is the copy.
    claude_odd_message_id_first_call: Claude "fixtures/claude-code/mismatched-message-id/first-call.jsonl" Expect::Whole;
    // A block of a type the API does not know: the input's request is
    // refused; the copy, without the record holding it, is valid.
    claude_unknown_block_assistant_text: Claude "fixtures/claude-code/unknown-block-type/assistant-text.jsonl" Expect::Whole;
    claude_unknown_block_tool_result: Claude "fixtures/claude-code/unknown-block-type/tool-result.jsonl" Expect::Whole;
    // Issue 39. The Edit call reuses the Read call's id: the input sends
    // 17 of 19 units (the client keeps the first call of the id only); the
    // copy, the later call and its result under an id of their own, all.
    claude_later_call_reuses_id: Claude "fixtures/claude-code/duplicate-tool-call-id/later-call-reuses-id.jsonl" Expect::Whole;
    // A call's `input` stored as a string: the API refuses it; the copy's
    // is `{}`.
    claude_input_is_a_string: Claude "fixtures/claude-code/invalid-tool-arguments/input-is-a-string.jsonl" Expect::Whole;
    // A blank text block beside a reply's calls: the client leaves it out
    // (18 of 19 units, valid); the copy, without it, sends all 18.
    claude_blank_text_beside_calls: Claude "fixtures/claude-code/empty-text-block/blank-text-beside-calls.jsonl" Expect::Whole;
    // A signature cut at a base64 quantum (well-formed base64, broken
    // framing): the API refuses it; the copy, without the thinking
    // block's record, is valid.
    claude_signature_cut_at_a_quantum: Claude "fixtures/claude-code/thinking-signature/cut-at-a-quantum.jsonl" Expect::Whole;
    // A 9000×8 PNG in the prompt: the API refuses its width (the
    // validator does not read pixels); the copy carries a text block in
    // its place.
    claude_wider_than_8000_px: Claude "fixtures/claude-code/oversized-image/wider-than-8000-px.jsonl" Expect::Whole;
    // Line 26 reuses line 20's uuid under the leaf, closing a parent
    // cycle: the input sends 5 of 20 units, starting with an assistant
    // turn; the copy, line 20 under a uuid of its own, all 20.
    claude_reused_uuid_closes_a_cycle: Claude "fixtures/claude-code/duplicate-uuid/reused-uuid-closes-a-cycle.jsonl" Expect::Whole;
    // A tool name of 240 characters: the client cuts it to 200, and so
    // does the copy; the request is valid.
    claude_tool_name_over_200_characters: Claude "fixtures/claude-code/invalid-tool-name/name-over-200-characters.jsonl" Expect::Whole;
    // A NUL in a tool name: the input's request is refused
    // (`claude_code_sends_a_nul_in_a_tool_name_as_stored`); the copy's call
    // is named without it, and its result still answers it.
    claude_nul_in_a_tool_name: Claude "fixtures/claude-code/invalid-tool-name/nul-in-name.jsonl" Expect::Whole;
    // A tool search result naming a tool of 82 characters: the copy sends
    // a text block in its place, and the validator's `tool_reference_name`
    // rule holds.
    claude_tool_reference_over_64_characters: Claude "fixtures/claude-code/invalid-tool-name/tool-reference-over-64-characters.jsonl" Expect::Whole;
    // A server tool's call in a paused reply and its result in the next:
    // the input's request is refused (the client leaves the call out and
    // sends the result, `orphan_server_tool_result`); the copy, without
    // either, is valid. With the advisor, the client leaves both out
    // itself (19 of 21 units); so does the copy.
    claude_server_tool_result_in_the_next_reply: Claude "fixtures/claude-code/orphan-tool-result/server-tool-result-in-the-next-reply.jsonl" Expect::Whole;
    claude_advisor_result_in_the_next_reply: Claude "fixtures/claude-code/orphan-tool-result/advisor-result-in-the-next-reply.jsonl" Expect::Whole;
    // No record carries a link: each is linked to the one before it.
    claude_unchained_all_parents_null: Claude "fixtures/claude-code/unchained-records/all-parents-null.jsonl" Expect::Whole;

    // Claude Code 2.1.330: the sessions of tests/data/claude-code, made
    // from a repair_file fuzzer find (tests/claude_code.rs says how). Line
    // 3's call is replaced by line 7 (the same uuid) in the input's resume
    // too, which sends 6 of 7 units; re-linked in file order, the copy sent 4.
    claude_bridged_behind_a_newer_record: Claude "tests/data/claude-code/bridged-behind-a-newer-record.jsonl"
        Expect::ByDesign { sent: 6, present: 7 };
    // The same session with line 2 lost: the input's request is refused
    // (it starts with an assistant turn) and sends 4 of 6 units; the copy,
    // linked as time has it, is valid and sends all but the replaced call.
    claude_lost_line_behind_a_bridged_record: Claude "tests/data/claude-code/lost-line-behind-a-bridged-record.jsonl"
        Expect::ByDesign { sent: 5, present: 6 };
    // Two records of one reply hold the same call: the client sends it
    // once (the oracle counts it twice among the units present).
    claude_call_repeated_in_a_reply: Claude "tests/data/claude-code/call-repeated-in-a-reply.jsonl"
        Expect::ByDesign { sent: 10, present: 11 };
    // Line 2 holds bytes that are not UTF-8 inside its text: the client
    // reads them as U+FFFD and sends the record (the oracle's own count
    // cannot read that line, so it is not among the units present).
    claude_invalid_utf8_in_text: Claude "tests/data/claude-code/invalid-utf8-in-text.jsonl" Expect::Whole;
    // Members named twice, read as the client reads them: the copy is the
    // input; and a `parentUuid` named twice, re-linked where it is read.
    claude_member_named_twice: Claude "tests/data/claude-code/member-named-twice.jsonl" Expect::Whole;
    claude_parent_named_twice: Claude "tests/data/claude-code/parent-named-twice.jsonl" Expect::Whole;
    // The input sends 4 of 7 units; the copy, linked in file order, all.
    claude_copy_over_a_bridged_branch: Claude "tests/data/claude-code/copy-over-a-bridged-branch.jsonl" Expect::Whole;
    // The input's request is refused (a thinking signature); the copy,
    // without that record, has its bridged child linked past it.
    claude_bridged_to_a_removed_thinking_block: Claude "tests/data/claude-code/bridged-to-a-removed-thinking-block.jsonl" Expect::Whole;
    // A reply's call on a record without a uuid, unanswered: the input
    // sends 11 of 13 units (the client removes the call); the copy, the
    // call answered off the record it hangs from, 13 of 14. Both leave out
    // the thinking block of that reply, an earlier turn's.
    claude_call_on_a_record_without_uuid: Claude "tests/data/claude-code/call-on-a-record-without-uuid.jsonl"
        Expect::ByDesign { sent: 13, present: 14 };
    // The same session with line 7 lost (the reply's record the uuid-less
    // call hangs from): the input sends 9 of 12 units; the copy, the call
    // answered off the reply's first call record, 11 of 12 (the thinking
    // block, an earlier turn's, is left out of both).
    claude_call_without_uuid_its_parent_lost: Claude "tests/data/claude-code/call-without-uuid-its-parent-lost.jsonl"
        Expect::ByDesign { sent: 11, present: 12 };
    // Line 8's tool result has no `type`: the client removes the block
    // and the call it answered, and sends 17 of 19 units in a valid
    // request; the copy, the record removed and the call answered, all.
    claude_result_block_without_type: Claude "tests/data/claude-code/result-block-without-type.jsonl" Expect::Whole;
    // Line 8 holds a `\u` escape without hex digits in its
    // `toolUseResult`: the client skips the line, and sends 17 of 18 units
    // (the call it answered is removed); the copy, without it, all 19.
    claude_bad_unicode_escape_in_a_skipped_field: Claude "tests/data/claude-code/bad-unicode-escape-in-a-skipped-field.jsonl" Expect::Whole;
    // hook-progress-chain.jsonl with its final answer (line 20) lost: the
    // stop-hook summary after it hangs from a lost record, 8 s after the
    // last one loaded. The client sends the whole history, as lint now
    // says (it said none was sent); the copy is the input.
    claude_stop_hook_after_a_lost_answer: Claude "tests/data/claude-code/stop-hook-after-a-lost-answer.jsonl" Expect::Whole;
    // The same, the summary a new prompt: the input sends the prompt
    // alone (1 unit of 13); the copy, the prompt re-linked past the
    // progress record it hangs from, all 13.
    claude_prompt_under_a_progress_record_whose_parent_is_lost: Claude "tests/data/claude-code/prompt-under-a-progress-record-whose-parent-is-lost.jsonl" Expect::Whole;
    // The input loses the result glued after its call, and the call
    // (`claude_code_reads_the_first_record_of_a_glued_line_only`).
    claude_result_glued_to_its_call: Claude "tests/data/claude-code/result-glued-to-its-call.jsonl" Expect::Whole;
}

/// The validators the oracle judges every request with give the verdict
/// the provider gives on hand-made bodies: each 400 rule on a body that
/// breaks it, and none on bodies that keep them.
#[test]
#[cfg_attr(not(has_tool = "python3"), ignore = "needs Python 3 (python3 on PATH)")]
fn the_oracle_validators_pass_their_self_test() {
    let o = Command::new("python3")
        .arg(oracle_dir().join("selftest.py"))
        .output()
        .expect("python3 runs");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.lines().last() == Some("all passed"),
        "tests/oracle/selftest.py failed:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every Claude Code and Codex fixture has its case above (a new fixture
/// without one fails here).
#[test]
fn every_client_fixture_has_a_case() {
    let me = std::fs::read_to_string(root().join("tests/oracle.rs")).unwrap();
    let mut missing = Vec::new();
    for dir in ["fixtures/claude-code", "fixtures/codex"] {
        for e in walkdir::WalkDir::new(root().join(dir)) {
            let e = e.unwrap();
            // Paginated histories: what 0.169.0 does with each is in
            // their README, checked by tests/codex_today.rs.
            if e.path().extension().is_some_and(|x| x == "jsonl")
                && !e
                    .path()
                    .starts_with(root().join("fixtures/codex/paginated"))
            {
                let rel = e
                    .path()
                    .strip_prefix(root())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if !me.contains(&format!("\"{rel}\"")) {
                    missing.push(rel);
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "fixtures without an oracle case: {missing:#?}"
    );
}

/// lint of `session` (exit 1): its first finding of `rule`.
fn the_finding(session: &Path, rule: &str) -> serde_json::Value {
    let (code_in, doc) = lint_json(session.to_str().unwrap(), &[]);
    assert_eq!(code_in, 1, "{doc:#}");
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .cloned()
        .unwrap_or_else(|| panic!("no {rule}: {doc:#}"))
}

/// One byte that is not UTF-8, in one line: Codex does not skip the line,
/// it refuses the whole rollout, and lint says so.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn codex_refuses_a_rollout_that_is_not_utf8() {
    let (oracle, prefix) = require_oracle();
    let session = root().join("fixtures/codex/not-utf8/byte-in-a-call.jsonl");
    let f = the_finding(&session, "corrupt-record");
    assert!(
        f.to_string().contains("stream did not contain valid UTF-8"),
        "{f:#}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("oracle");
    let summary = resume(&oracle, &prefix, Client::Codex, &session, &out);
    assert_eq!(summary["rc"], 1, "{summary:#}");
    assert_eq!(summary["units_sent"], 0, "{summary:#}");
    assert!(
        summary["client_result"]
            .to_string()
            .contains("failed to load thread history"),
        "{summary:#}"
    );
    let stderr = std::fs::read_to_string(out.join("stderr.txt")).unwrap();
    assert!(
        stderr.contains("stream did not contain valid UTF-8"),
        "{stderr}"
    );
}

/// A record of a split reply with another `message.id`, on the branch the
/// resume walks, between the reply's first record and its calls: the
/// client sends the rest of the reply, then that record, then the results.
/// lint reports an `interleaved-message`, and says what the client does
/// with it, which is not what the oracle's count shows: it answers the
/// reply's calls with placeholders of its own and leaves the real results
/// out (the oracle counts a result by its id, and finds every unit sent).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_replaces_interleaved_results_with_its_own() {
    let (oracle, prefix) = require_oracle();
    let session = root().join("tests/data/claude-code/odd-message-id-on-the-chain.jsonl");
    let f = the_finding(&session, "interleaved-message");
    assert!(
        f.to_string()
            .contains("[Tool result missing due to internal error]"),
        "{f:#}"
    );
    let dir = tempfile::tempdir().unwrap();
    // The client finds a session by the id in its file name.
    let copy = dir.path().join(session.file_name().unwrap());
    std::fs::copy(&session, &copy).unwrap();
    let out = dir.path().join("oracle");
    let summary = resume(&oracle, &prefix, Client::Claude, &copy, &out);
    assert_eq!(summary["rc"], 0, "{summary:#}");
    assert_eq!(summary["valid"], true, "{summary:#}");
    let request = std::fs::read_to_string(out.join("request.json")).unwrap();
    assert_eq!(
        request
            .matches("[Tool result missing due to internal error]")
            .count(),
        2,
        "{request}"
    );
    assert!(
        !request.contains("File created successfully at: /tmp/private/hello.md"),
        "the real result was sent: {request}"
    );
}

/// Two records on one line: Claude Code 2.1.330 reads the first and skips
/// the rest of the line. Here the rest is the call's result (the healthy
/// `linear.jsonl` with lines 18 and 19 glued): the result is lost, and the
/// client removes the call it leaves unanswered, so the request holds
/// neither. The healthy file sends both.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_reads_the_first_record_of_a_glued_line_only() {
    let (oracle, prefix) = require_oracle();
    let call = "toolu_bdrk_01WC6KiMbojN1sDscXqkkFWe";
    for (session, sent) in [
        ("fixtures/claude-code/healthy/linear.jsonl", true),
        (
            "tests/data/claude-code/result-glued-to-its-call.jsonl",
            false,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir
            .path()
            .join("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl");
        std::fs::copy(root().join(session), &copy).unwrap();
        let out = dir.path().join("oracle");
        let summary = resume(&oracle, &prefix, Client::Claude, &copy, &out);
        assert_eq!(summary["rc"], 0, "{session}: {summary:#}");
        assert_eq!(summary["valid"], true, "{session}: {summary:#}");
        let request = std::fs::read_to_string(out.join("request.json")).unwrap();
        assert_eq!(
            request.matches(call).count(),
            if sent { 2 } else { 0 },
            "{session}: the call and its result"
        );
    }
}

/// The session's first prompt lost: Claude Code starts the conversation
/// with the reply to it, and the request breaks the provider's first rule
/// (`dangling-parent` says so, as an error the repair leaves).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_sends_a_reply_whose_prompt_is_lost_first() {
    let (oracle, prefix) = require_oracle();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir
        .path()
        .join("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl");
    std::fs::copy(
        root().join("tests/data/claude-code/first-prompt-lost.jsonl"),
        &copy,
    )
    .unwrap();
    let out = dir.path().join("oracle");
    let summary = resume(&oracle, &prefix, Client::Claude, &copy, &out);
    assert_eq!(summary["rc"], 0, "{summary:#}");
    assert_eq!(summary["valid"], false, "{summary:#}");
    assert!(
        summary["errors"].to_string().contains("first_not_user"),
        "{summary:#}"
    );
}

/// Real sessions damaged as a crash damages them, repaired, resumed by the
/// real client: every Claude Code session of the corpus (fixtures/corpus)
/// with one line lost in its middle (a write that never reached the disk
/// while later ones did). Whatever the input's resume does (it may send a
/// fraction of the history, or a request the provider refuses), the copy's
/// is a valid request that sends at least as much of the file's history,
/// and no result the client made up.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_corpus_sessions_with_a_lost_line_resume_once_repaired() {
    let (oracle, prefix) = require_oracle();
    let corpus = root().join("fixtures/corpus");
    assert!(corpus.is_dir(), "no corpus at {}", corpus.display());
    let mut sessions: Vec<PathBuf> = walkdir::WalkDir::new(&corpus)
        .into_iter()
        .map(Result::unwrap)
        .map(walkdir::DirEntry::into_path)
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            text.contains("\"sessionId\"") && text.lines().count() >= 8
        })
        .collect();
    sessions.sort();
    assert!(sessions.len() >= 8, "{sessions:?}");
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(usize, &PathBuf)> = sessions.iter().enumerate().collect();
    // Two at a time: each resume starts the client, a second of CPU.
    let failures: Vec<String> = std::thread::scope(|s| {
        // Collected: both workers start before either is joined.
        #[allow(clippy::needless_collect)]
        let workers: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|chunk| {
                let (oracle, prefix, dir) = (&oracle, &prefix, dir.path());
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for &(i, session) in chunk {
                        let work = dir.join(i.to_string());
                        let (input, copy) = (work.join("in"), work.join("out"));
                        std::fs::create_dir_all(&input).unwrap();
                        std::fs::create_dir_all(&copy).unwrap();
                        let name = session.file_name().unwrap();
                        let text = std::fs::read_to_string(session).unwrap();
                        let mut lines: Vec<&str> = text.lines().collect();
                        lines.remove(lines.len() / 2);
                        let damaged = input.join(name);
                        std::fs::write(&damaged, lines.join("\n") + "\n").unwrap();
                        let repaired = copy.join(name);
                        let o = run(&[
                            "repair",
                            damaged.to_str().unwrap(),
                            "-o",
                            repaired.to_str().unwrap(),
                        ]);
                        if code(&o) != 0 {
                            failed.push(format!("{}: repair failed: {}", session.display(), stderr(&o)));
                            continue;
                        }
                        let before = resume(oracle, prefix, Client::Claude, &damaged, &work.join("o1"));
                        let after = resume(oracle, prefix, Client::Claude, &repaired, &work.join("o2"));
                        let request =
                            std::fs::read_to_string(work.join("o2").join("request.json")).unwrap_or_default();
                        let ok = after["rc"] == 0
                            && after["valid"] == true
                            && after["units_sent"].as_u64() >= before["units_sent"].as_u64()
                            && !request.contains("[Tool result missing due to internal error]");
                        if !ok {
                            failed.push(format!(
                                "{}: the input sent {} of {} units (valid {}), the copy {} of {} (valid {}, rc {})",
                                session.display(),
                                before["units_sent"],
                                before["units_present"],
                                before["valid"],
                                after["units_sent"],
                                after["units_present"],
                                after["valid"],
                                after["rc"]
                            ));
                        }
                    }
                    failed
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 39, pattern 4: an image over 5 MB (generated: 7.8 MB of base64)
/// locks the user out, as Claude Code refuses to resume; the repaired
/// copy, the image replaced by a text block saying so, resumes whole.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_resumes_a_copy_whose_image_over_5_mb_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("image-over-5mb.jsonl");
    let made = Command::new("python3")
        .arg(root().join("fixtures/claude-code/gen_oversized_image.py"))
        .arg(&input)
        .output()
        .expect("python3 runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    case(input.to_str().unwrap(), Client::Claude, Expect::Whole);
}

/// Issue 39: a tool result larger by itself than the model's context
/// (generated: 1,152,000 bytes, over 200,000 tokens at 4 bytes a token).
/// With the mock answering a request over 200,000 (estimated) tokens as
/// the API answers it (`MOCK_CONTEXT_TOKENS`), Claude Code 2.1.330 sends
/// the result whole, is refused, compacts the session on its own (its
/// summary request is refused too, then retried with the earliest turns
/// cut), and goes on from the summary alone: what
/// `oversized-tool-result`'s finding says.
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_compacts_away_a_tool_result_over_the_context() {
    let (oracle, prefix) = require_oracle();
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("linear.jsonl");
    let made = Command::new("python3")
        .arg(root().join("fixtures/claude-code/gen_oversized_tool_result.py"))
        .arg(&session)
        .output()
        .expect("python3 runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (exit, doc) = lint_json(session.to_str().unwrap(), &[]);
    let found: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f["rule"].as_str().unwrap(),
                f["severity"].as_str().unwrap(),
                f["location"]["line"]
            )
        })
        .collect();
    assert_eq!(found, ["oversized-tool-result warning 8"], "{doc:#}");
    assert_eq!(exit, 0, "a warning: {doc:#}");
    let out = dir.path().join("oracle");
    let summary = resume_with(
        &oracle,
        &prefix,
        Client::Claude,
        &session,
        &out,
        &[("MOCK_CONTEXT_TOKENS", "200000")],
    );
    assert_eq!(summary["version"], "2.1.330", "{summary:#}");
    assert_eq!(summary["rc"], 0, "{summary:#}");
    // Every request the client made, in order: the messages it sent, and
    // whether the result's text was among them.
    let index = std::fs::read_to_string(out.join("req/index.jsonl")).unwrap();
    let bodies: Vec<serde_json::Value> = index
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/v1/messages"))
                && e["file"].is_string()
        })
        .map(|e| {
            let body = std::fs::read(out.join("req").join(e["file"].as_str().unwrap())).unwrap();
            serde_json::from_slice(&body).unwrap()
        })
        .collect();
    let carries = |b: &serde_json::Value| {
        b["messages"]
            .to_string()
            .contains("line 0015999 of a long tool output")
    };
    let truncated = |b: &serde_json::Value| {
        b["messages"]
            .to_string()
            .contains("[earlier conversation truncated for compaction retry]")
    };
    assert!(bodies.len() >= 3, "{} requests: {summary:#}", bodies.len());
    assert!(
        carries(&bodies[0]),
        "the first request sends the result whole"
    );
    assert!(
        bodies.iter().any(truncated),
        "a compaction retried with the earliest turns cut: {summary:#}"
    );
    let last = bodies.last().unwrap();
    assert!(
        !carries(last),
        "the last request no longer carries the result"
    );
    assert!(
        last["messages"].as_array().unwrap().len()
            < bodies[0]["messages"].as_array().unwrap().len(),
        "the resumed conversation is the summary, not the history"
    );
}

/// Issue 39: a NUL in a tool name. Claude Code 2.1.330 sends the call
/// under its name as stored, and the request is refused (`tool_use_name`):
/// lint reports `invalid-tool-name`, an error (a name over 200 characters,
/// which the client cuts, is a warning: `claude_tool_name_over_200_characters`).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn claude_code_sends_a_nul_in_a_tool_name_as_stored() {
    sends_an_invalid_name_as_stored(
        Client::Claude,
        "fixtures/claude-code/invalid-tool-name/nul-in-name.jsonl",
        23,
        "tool_use_name",
    );
}

/// openai/codex#24369: Codex 0.169.0 sends a call's name with NULs as
/// stored, and the request is invalid (`input[N].name` must match
/// `^[a-zA-Z0-9_-]+$`); the repaired copy is whole (`codex_nul_in_call_name`).
#[test]
#[cfg_attr(
    not(all(has_tool = "clients", has_tool = "python3")),
    ignore = "needs the pinned Claude Code and Codex clients and Python 3: tests/oracle/install.sh (scripts/test-all does it)"
)]
fn codex_sends_a_call_name_with_nuls_as_stored() {
    sends_an_invalid_name_as_stored(
        Client::Codex,
        "fixtures/codex/invalid-tool-name/nul-in-call-name.jsonl",
        7,
        "invalid_name",
    );
}

/// The client resumes `fixture` (one `invalid-tool-name` finding, on
/// `line`) and sends a request the validator refuses with `code`.
fn sends_an_invalid_name_as_stored(client: Client, fixture: &str, line: u64, code: &str) {
    let (oracle, prefix) = require_oracle();
    let input = root().join(fixture);
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(input.file_name().unwrap());
    std::fs::copy(&input, &session).unwrap();
    let (exit, doc) = lint_json(session.to_str().unwrap(), &[]);
    let found: Vec<(&str, u64)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap(),
                f["location"]["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        (exit, found),
        (1, vec![("invalid-tool-name", line)]),
        "{doc:#}"
    );
    let summary = resume(&oracle, &prefix, client, &session, &dir.path().join("out"));
    assert_eq!(summary["rc"], 0, "{summary:#}");
    assert_eq!(summary["valid"], false, "{summary:#}");
    assert!(
        summary["errors"].as_array().is_some_and(|e| e
            .iter()
            .any(|e| e.as_str().is_some_and(|e| e.starts_with(code)))),
        "{summary:#}"
    );
}
