#!/bin/bash
# The bash completion of affctl (ctl/affctl.bash): verbs, options, the
# PIDs explain takes, and for revert --all plus the PIDs the daemon has
# changed (from a real daemon that co-located a real pair). Needs root and
# 2+ CPUs for that last part.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
. "$top_srcdir/ctl/affctl.bash"
export PATH="$top_builddir:$PATH"   # the completion asks the affctl it finds
PINGPONG=$top_builddir/tests/workloads/pingpong
work=$(mktemp -d /tmp/affd-compl.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT

# complete WORDS...: COMPREPLY for the command line WORDS (the last one being typed), one per line
complete_line() {
        COMP_WORDS=("$@")
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMPREPLY=()
        _affctl
        printf '%s\n' "${COMPREPLY[@]}"
}
has() {   # has WORD OUTPUT
        grep -qxF -- "$1" <<<"$2"
}

out=$(complete_line affctl "")
for v in status tasks actions explain pairs hogs reload revert dry-run metrics check; do
        has "$v" "$out" || fail "verb $v not offered: $out"
done
[ "$(complete_line affctl ex)" = explain ] || fail "'ex' does not complete to explain: $(complete_line affctl ex)"
[ "$(complete_line affctl --js)" = --json ] || fail "'--js' does not complete to --json"
[ "$(complete_line affctl pairs --wi)" = --wide ] || fail "'pairs --wi' does not complete to --wide"
[ "$(complete_line affctl --from-json /nonexistent-dir/x pa)" = pairs ] || fail "the file after --from-json is taken for the verb"
[ "$(complete_line affctl dry-run o | sort | tr '\n' ' ')" = "off on " ] || fail "dry-run does not offer on/off"
has $$ "$(complete_line affctl explain "")" || fail "explain does not offer this shell's PID $$"
[ -z "$(complete_line affctl explain 1 "")" ] || fail "explain offers a second argument"

# revert: --all and the PIDs with a change in force. The pair is started
# split and released; where the kernel merges it again by itself (a loaded
# machine often does) there is nothing for the daemon to change, so it is
# tried again, up to 3 times. It fails when the pair ran split for 4 s of a
# try (progress windows of 250 ms) and the daemon changed nothing.
start_daemon "$top_srcdir/policies"
managed() { ctl actions --json | jq -e --argjson p "$pp" '[.. | objects | select(.pid? == $p)] | length > 0' >/dev/null; }
split_s() { awk '/^t=/ { for (i = 1; i <= NF; i++) if ($i ~ /^same_cpu=/ && substr($i, 10) + 0 < 0.5) n++ } END { print n * 0.25 }' "$1"; }
pp=
for try in 1 2 3; do
        rm -f "$work/pp.pids"
        "$PINGPONG" --cpus 0,1 --duration 60 --report-interval 250 --pid-file "$work/pp.pids" >"$work/pp.out" 2>&1 &
        PPID_=$!; CHILDREN+=("$PPID_")
        wait_for 10 test -s "$work/pp.pids" || fail "pingpong did not start"
        { read -r P1; read -r P2; } <"$work/pp.pids"
        pp=$(awk '/^Tgid:/ { print $2 }' "/proc/$P1/status")
        wait_for 10 managed && break
        split=$(split_s "$work/pp.out")
        echo "# try $try: not co-located in 10 s; it ran split for ${split} s of them"
        awk -v s="$split" 'BEGIN { exit !(s >= 4) }' && { ctl pairs; fail "the pair ran split for ${split} s and was not co-located"; }
        kill "$PPID_" 2>/dev/null || true; wait "$PPID_" 2>/dev/null || true
        pp=
done
if [ -z "$pp" ]; then
        echo "# premise not met: the kernel kept the pair together in every try; the completion of a changed PID was not checked"
        exit 77
fi
out=$(complete_line affctl --runtime-dir "$RUNDIR" revert "")
has --all "$out" || fail "revert does not offer --all: $out"
has "$pp" "$out" || fail "revert does not offer the changed process $pp: $out"
has $$ "$out" && fail "revert offers this shell ($$), which has no change"
echo "ok: verbs, options, explain PIDs, revert --all and changed PIDs"
