# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_chatfsck_global_optspecs
    string join \n h/help V/version
end

function __fish_chatfsck_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_chatfsck_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_chatfsck_using_subcommand
    set -l cmd (__fish_chatfsck_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c chatfsck -n "__fish_chatfsck_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -s V -l version -d 'Print version'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "lint" -d 'Check histories and report every finding, with evidence (no path: every app\'s histories on this machine)'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "inspect" -d 'Show what a history holds: format, dialect, counts and a message timeline'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "repair" -d 'Write a repaired copy of a history (the input is never changed)'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "diff" -d 'Compare two histories message by message (e.g. original and repaired), or a conversation store with the trace its app wrote (every recorded prompt beside the stored history)'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "rules" -d 'List every rule: name, severity, whether repair fixes it, what it detects'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "explain" -d 'Explain a rule: what it detects, why it breaks an agent, what providers answer, the repair'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l format -d 'Output format' -r -f -a "human\t'Text for people: diagnostics with evidence excerpts, or tables'
json\t'One JSON document for programs (lint\'s: docs/json-output.md)'
sarif\t'SARIF 2.1.0, for GitHub code scanning and other SARIF viewers'
github\t'GitHub Actions workflow commands: annotations on the pull request'
markdown\t'Tables that paste into an issue, a pull request or documentation'
html\t'One self-contained HTML page (no network, no external file): timelines with tool calls linked to their results, the findings at their messages, filters. Opens from disk; attach it to a bug report'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l select -d 'Run only these rules (comma-separated rule names; replaces `select` in chatfsck.toml)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l ignore -d 'Do not run these rules (comma-separated rule names; replaces `ignore` in chatfsck.toml)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l fail-on -d 'Exit 1 when a finding of this severity or higher is found [default: error]' -r -f -a "info\t''
warning\t''
error\t''"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l config -d 'Read settings from this file instead of the nearest chatfsck.toml (searched from the current directory upwards); flags override it' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l trace -d 'Cross-check against the trace the app wrote (dispatch traces.db, Phoenix phoenix.db, OTLP JSON): report prompts sent that differ from the stored history, and cut-off answers stored as complete' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -s o -l output -d 'Write the report to this file instead of standard output (atomically; never over an input)' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l max-line-mib -d 'Longest JSONL line accepted, in MiB (a longer line is an error, not a history)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l table -d 'Read this message table of a SQLite or PostgreSQL database (one row per message; needs the four column flags)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l conversation-column -d 'Column that names the conversation of a row' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l index-column -d 'Integer column that orders the messages of a conversation' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l role-column -d 'Column holding the role (`user`, `assistant`, `system`, `tool`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l content-column -d 'Column holding the content: Anthropic content blocks or parts (JSON), or plain text' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l messages-column -d 'Conversation datasets: the member (JSON Lines) that holds each row\'s messages, when it is not `messages` (or ShareGPT\'s `conversations`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l id-column -d 'Conversation datasets: the member (JSON Lines) that names each row in findings, when it is not `id`' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l last -d 'Check the session changed last, across every app (the one you were just in)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l skip-unreadable -d 'Do not exit 2 because a file found in a directory could not be read (it is still listed, and counted in the summary); inputs named on the command line still must be read'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l force -d 'Overwrite the --output file if it exists'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l conversation -d 'Show only this conversation' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l format -d 'Output format' -r -f -a "human\t'Text for people: diagnostics with evidence excerpts, or tables'
json\t'One JSON document for programs (lint\'s: docs/json-output.md)'
markdown\t'Tables that paste into an issue, a pull request or documentation'
html\t'One self-contained HTML page (no network, no external file): timelines with tool calls linked to their results, the findings at their messages, filters. Opens from disk; attach it to a bug report'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -s o -l output -d 'Write the report to this file instead of standard output (atomically; never over an input)' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l max-line-mib -d 'Longest JSONL line accepted, in MiB (a longer line is an error, not a history)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l table -d 'Read this message table of a SQLite or PostgreSQL database (one row per message; needs the four column flags)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l conversation-column -d 'Column that names the conversation of a row' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l index-column -d 'Integer column that orders the messages of a conversation' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l role-column -d 'Column holding the role (`user`, `assistant`, `system`, `tool`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l content-column -d 'Column holding the content: Anthropic content blocks or parts (JSON), or plain text' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l messages-column -d 'Conversation datasets: the member (JSON Lines) that holds each row\'s messages, when it is not `messages` (or ShareGPT\'s `conversations`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l id-column -d 'Conversation datasets: the member (JSON Lines) that names each row in findings, when it is not `id`' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l last -d 'Inspect the session changed last, across every app'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l force -d 'Overwrite the --output file if it exists'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -s o -l output -d 'Where to write the repaired copy (a new file, in the input\'s format); for a directory INPUT, a new directory that mirrors it: every history repaired (or copied as it is) at the same relative path' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l emit-sql -d 'PostgreSQL input: write the repair as a reviewable SQL script (one transaction, idempotent INSERTs only)' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l target -d 'PostgreSQL input: apply the repair to this other database (e.g. a restored copy); never the source' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l log -d 'Write the repair log (every edit, with removed and replaced payloads verbatim) as JSON' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l orphan-calls -d 'Tool calls without a result: insert a marked placeholder result, drop the call, or leave and report it [default: placeholder, or report with --no-synthesize; chatfsck.toml\'s [repair] applies]' -r -f -a "placeholder\t'Insert a result right after the call: the real one when an execution record or trace holds it, else a clearly marked placeholder'
drop\t'Remove the unanswered call from the copy (kept in the repair log)'
report\t'Change nothing; only report the call'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l select -d 'Repair only findings of these rules (comma-separated)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l ignore -d 'Do not repair findings of these rules (comma-separated)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l format -d 'Output format of the summary' -r -f -a "human\t'Text for people: diagnostics with evidence excerpts, or tables'
json\t'One JSON document for programs (lint\'s: docs/json-output.md)'
markdown\t'Tables that paste into an issue, a pull request or documentation'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l config -d 'Read settings from this file instead of the nearest chatfsck.toml (searched from the current directory upwards); flags override it' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l max-line-mib -d 'Longest JSONL line accepted, in MiB (a longer line is an error, not a history)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l table -d 'Read this message table of a SQLite or PostgreSQL database (one row per message; needs the four column flags)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l conversation-column -d 'Column that names the conversation of a row' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l index-column -d 'Integer column that orders the messages of a conversation' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l role-column -d 'Column holding the role (`user`, `assistant`, `system`, `tool`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l content-column -d 'Column holding the content: Anthropic content blocks or parts (JSON), or plain text' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l messages-column -d 'Conversation datasets: the member (JSON Lines) that holds each row\'s messages, when it is not `messages` (or ShareGPT\'s `conversations`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l id-column -d 'Conversation datasets: the member (JSON Lines) that names each row in findings, when it is not `id`' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l last -d 'Repair the session changed last, across every app (with --in-place: the one you were just in)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l in-place -d 'Repair the file itself: a timestamped backup is kept beside it first, the repaired file replaces it atomically, and nothing is replaced if the file changed meanwhile (its app may be appending to it)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l dry-run -d 'Print the plan and write nothing'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l force -d 'Overwrite OUTPUT (and the log) if they exist; the input is never overwritten'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -l no-synthesize -d 'Never invent content: unanswered calls are reported (or dropped) instead of answered with a placeholder'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand repair" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l conversation -d 'Compare only this conversation (with a trace: or one request, `<conversation>/turn-<n>/step-<k>`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l format -d 'Output format (with a trace: human or json)' -r -f -a "human\t'Text for people: diagnostics with evidence excerpts, or tables'
json\t'One JSON document for programs (lint\'s: docs/json-output.md)'
markdown\t'Tables that paste into an issue, a pull request or documentation'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l max-line-mib -d 'Longest JSONL line accepted, in MiB (a longer line is an error, not a history)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l table -d 'Read this message table of a SQLite or PostgreSQL database (one row per message; needs the four column flags)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l conversation-column -d 'Column that names the conversation of a row' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l index-column -d 'Integer column that orders the messages of a conversation' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l role-column -d 'Column holding the role (`user`, `assistant`, `system`, `tool`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l content-column -d 'Column holding the content: Anthropic content blocks or parts (JSON), or plain text' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l messages-column -d 'Conversation datasets: the member (JSON Lines) that holds each row\'s messages, when it is not `messages` (or ShareGPT\'s `conversations`)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -l id-column -d 'Conversation datasets: the member (JSON Lines) that names each row in findings, when it is not `id`' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand diff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand rules" -l format -d 'Output format' -r -f -a "human\t'Text for people: diagnostics with evidence excerpts, or tables'
json\t'One JSON document for programs (lint\'s: docs/json-output.md)'
markdown\t'Tables that paste into an issue, a pull request or documentation'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand rules" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand explain" -s h -l help -d 'Print help'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "lint" -d 'Check histories and report every finding, with evidence (no path: every app\'s histories on this machine)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "inspect" -d 'Show what a history holds: format, dialect, counts and a message timeline'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "repair" -d 'Write a repaired copy of a history (the input is never changed)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "diff" -d 'Compare two histories message by message (e.g. original and repaired), or a conversation store with the trace its app wrote (every recorded prompt beside the stored history)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "rules" -d 'List every rule: name, severity, whether repair fixes it, what it detects'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "explain" -d 'Explain a rule: what it detects, why it breaks an agent, what providers answer, the repair'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect repair diff rules explain help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
