# bash completion for affctl(8): verbs, options, and the PIDs explain and
# revert take (processes affinityd has changed first, for revert).
# Needs nothing of bash-completion's helpers, so it also works where that
# package is not installed (source this file).

_affctl_pids() {
        local p
        for p in /proc/[0-9]*; do
                printf '%s\n' "${p#/proc/}"
        done
}

# PIDs with a change in force, from `affctl actions --json`: what revert can undo.
_affctl_managed_pids() {
        affctl "${_affctl_opts[@]}" actions --json 2>/dev/null |
                sed -n 's/^ *"pid": *\([0-9][0-9]*\).*/\1/p' | sort -un
}

_affctl() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        local verbs="status tasks actions explain pairs hogs reload revert dry-run metrics check"
        local opts="--runtime-dir --json --wide --from-json --verbose --help"
        local verb="" i
        _affctl_opts=()

        for ((i = 1; i < COMP_CWORD; i++)); do
                case ${COMP_WORDS[i]} in
                --runtime-dir) _affctl_opts=(--runtime-dir "${COMP_WORDS[i + 1]}"); i=$((i + 1)) ;;
                --from-json) i=$((i + 1)) ;;
                -*) ;;
                *) verb=${COMP_WORDS[i]}; break ;;
                esac
        done

        if [ "$prev" = --runtime-dir ]; then
                mapfile -t COMPREPLY < <(compgen -d -- "$cur")
                return
        fi
        # a reply saved with --json
        if [ "$prev" = --from-json ]; then
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
                return
        fi
        if [ -z "$verb" ]; then
                if [[ $cur == -* ]]; then
                        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
                else
                        mapfile -t COMPREPLY < <(compgen -W "$verbs" -- "$cur")
                fi
                return
        fi
        # only the first argument of a verb is completed (check: any number of files)
        local nargs=0
        for ((i = i + 1; i < COMP_CWORD; i++)); do
                [[ ${COMP_WORDS[i]} == -* ]] || nargs=$((nargs + 1))
        done
        case $verb in
        explain)
                [ $nargs -eq 0 ] && mapfile -t COMPREPLY < <(compgen -W "$(_affctl_pids)" -- "$cur") ;;
        revert)
                [ $nargs -eq 0 ] && mapfile -t COMPREPLY < <(compgen -W "--all $(_affctl_managed_pids)" -- "$cur") ;;
        dry-run)
                [ $nargs -eq 0 ] && mapfile -t COMPREPLY < <(compgen -W "on off" -- "$cur") ;;
        status)
                mapfile -t COMPREPLY < <(compgen -W "--verbose --json --wide --from-json" -- "$cur") ;;
        check)
                mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
        tasks | actions | pairs | hogs)
                mapfile -t COMPREPLY < <(compgen -W "--json --wide --from-json" -- "$cur") ;;
        *)
                mapfile -t COMPREPLY < <(compgen -W "--json" -- "$cur") ;;
        esac
}
complete -F _affctl affctl
