_chatfsck() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="chatfsck"
                ;;
            chatfsck,diff)
                cmd="chatfsck__subcmd__diff"
                ;;
            chatfsck,explain)
                cmd="chatfsck__subcmd__explain"
                ;;
            chatfsck,help)
                cmd="chatfsck__subcmd__help"
                ;;
            chatfsck,inspect)
                cmd="chatfsck__subcmd__inspect"
                ;;
            chatfsck,lint)
                cmd="chatfsck__subcmd__lint"
                ;;
            chatfsck,repair)
                cmd="chatfsck__subcmd__repair"
                ;;
            chatfsck,rules)
                cmd="chatfsck__subcmd__rules"
                ;;
            chatfsck__subcmd__help,diff)
                cmd="chatfsck__subcmd__help__subcmd__diff"
                ;;
            chatfsck__subcmd__help,explain)
                cmd="chatfsck__subcmd__help__subcmd__explain"
                ;;
            chatfsck__subcmd__help,help)
                cmd="chatfsck__subcmd__help__subcmd__help"
                ;;
            chatfsck__subcmd__help,inspect)
                cmd="chatfsck__subcmd__help__subcmd__inspect"
                ;;
            chatfsck__subcmd__help,lint)
                cmd="chatfsck__subcmd__help__subcmd__lint"
                ;;
            chatfsck__subcmd__help,repair)
                cmd="chatfsck__subcmd__help__subcmd__repair"
                ;;
            chatfsck__subcmd__help,rules)
                cmd="chatfsck__subcmd__help__subcmd__rules"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        chatfsck)
            opts="-h -V --help --version lint inspect repair diff rules explain help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__diff)
            opts="-h --conversation --format --max-line-mib --table --conversation-column --index-column --role-column --content-column --messages-column --id-column --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --conversation)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json markdown" -- "${cur}"))
                    return 0
                    ;;
                --max-line-mib)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --table)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --conversation-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --role-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --content-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --messages-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --id-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__explain)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help)
            opts="lint inspect repair diff rules explain help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__diff)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__explain)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__inspect)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__lint)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__repair)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__help__subcmd__rules)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__inspect)
            opts="-o -h --last --conversation --format --output --force --max-line-mib --table --conversation-column --index-column --role-column --content-column --messages-column --id-column --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --conversation)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json markdown html" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-mib)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --table)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --conversation-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --role-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --content-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --messages-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --id-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__lint)
            opts="-o -h --last --format --select --ignore --fail-on --config --trace --skip-unreadable --output --force --max-line-mib --table --conversation-column --index-column --role-column --content-column --messages-column --id-column --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --format)
                    COMPREPLY=($(compgen -W "human json sarif github markdown html" -- "${cur}"))
                    return 0
                    ;;
                --select)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ignore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fail-on)
                    COMPREPLY=($(compgen -W "info warning error" -- "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-mib)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --table)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --conversation-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --role-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --content-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --messages-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --id-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__repair)
            opts="-o -h --last --output --in-place --emit-sql --target --dry-run --log --force --orphan-calls --no-synthesize --select --ignore --format --config --max-line-mib --table --conversation-column --index-column --role-column --content-column --messages-column --id-column --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --emit-sql)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --orphan-calls)
                    COMPREPLY=($(compgen -W "placeholder drop report" -- "${cur}"))
                    return 0
                    ;;
                --select)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ignore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json markdown" -- "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-line-mib)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --table)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --conversation-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --role-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --content-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --messages-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --id-column)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        chatfsck__subcmd__rules)
            opts="-h --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --format)
                    COMPREPLY=($(compgen -W "human json markdown" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _chatfsck -o nosort -o bashdefault -o default chatfsck
else
    complete -F _chatfsck -o bashdefault -o default chatfsck
fi
