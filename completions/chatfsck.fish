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
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "lint" -d 'Check histories and report every finding, with evidence'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "inspect" -d 'Show what a history holds: format, dialect, counts and a message timeline'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "rules" -d 'List every rule: name, severity, whether repair fixes it, what it detects'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "explain" -d 'Explain a rule: what it detects, why it breaks an agent, what providers answer, the repair'
complete -c chatfsck -n "__fish_chatfsck_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l format -d 'Output format' -r -f -a "human\t'Diagnostics with evidence excerpts, for people'
json\t'One versioned JSON document (see docs/json-output.md)'
sarif\t'SARIF 2.1.0, for GitHub code scanning and other SARIF viewers'
github\t'GitHub Actions workflow commands: annotations on the pull request'
markdown\t'Tables that paste into an issue or a pull request'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l select -d 'Run only these rules (comma-separated rule names; replaces `select` in chatfsck.toml)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l ignore -d 'Do not run these rules (comma-separated rule names; replaces `ignore` in chatfsck.toml)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l fail-on -d 'Exit 1 when a finding of this severity or higher is found [default: error]' -r -f -a "error\t''
warning\t''
info\t''"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l config -d 'Read settings from this file instead of the nearest chatfsck.toml (searched from the current directory upwards); flags override it' -r -F
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -l max-line-mib -d 'Longest JSONL line accepted, in MiB (a longer line is an error, not a history)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand lint" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l conversation -d 'Show only this conversation' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l format -d 'Output format' -r -f -a "human\t''
json\t''
markdown\t'Tables that paste into a bug report'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -l max-line-mib -d 'Longest JSONL line accepted, in MiB (a longer line is an error, not a history)' -r
complete -c chatfsck -n "__fish_chatfsck_using_subcommand inspect" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand rules" -l format -d 'Output format' -r -f -a "human\t''
json\t''
markdown\t'A table for documentation'"
complete -c chatfsck -n "__fish_chatfsck_using_subcommand rules" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand explain" -s h -l help -d 'Print help'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect rules explain help" -f -a "lint" -d 'Check histories and report every finding, with evidence'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect rules explain help" -f -a "inspect" -d 'Show what a history holds: format, dialect, counts and a message timeline'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect rules explain help" -f -a "rules" -d 'List every rule: name, severity, whether repair fixes it, what it detects'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect rules explain help" -f -a "explain" -d 'Explain a rule: what it detects, why it breaks an agent, what providers answer, the repair'
complete -c chatfsck -n "__fish_chatfsck_using_subcommand help; and not __fish_seen_subcommand_from lint inspect rules explain help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
