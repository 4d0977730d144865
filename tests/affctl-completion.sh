#!/bin/bash
# The bash completion of affctl (ctl/affctl.bash): verbs, options, the
# PIDs explain takes, and for revert --all plus the PIDs the daemon has
# changed (from a real daemon that co-located a real pair). Needs root and
# 2+ CPUs for that last part.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
two_cpus
. "$top_srcdir/ctl/affctl.bash"
export PATH="$top_builddir:$PATH"   # the completion asks the affctl it finds
PINGPONG=$top_builddir/tests/workloads/pingpong
work=$(mktemp -d /tmp/affd-compl.XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
scope_enter   # the daemon under test acts on this test's processes only

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

# revert: --all and the PIDs with a change in force. The pair is held
# split (pingpong --hold: CPU_A and CPU_B) and the shipped pair policy,
# replaced by name, may change narrowed masks: released, a loaded
# machine's kernel often merged the pair by itself, and there was nothing
# to change (a skip in CI under stress-ng). IgnoreCalibration=yes: on a
# host whose calibration reads co-location as free the pair is left alone.
cfg=$work/cfg
mkdir -p "$cfg/policies.d"
cp "$top_srcdir"/policies/policies.d/*.policy "$cfg/policies.d/"
{ cat "$top_srcdir/policies/policies.d/50-pingpong.policy"; printf '\n[Action]\nAllowNarrowed=yes\nIgnoreCalibration=yes\n'; } \
	>"$cfg/policies.d/50-pingpong.policy"
start_daemon "$cfg"
"$PINGPONG" --cpus "$CPU_A,$CPU_B" --hold --duration 60 --pid-file "$work/pp.pids" >/dev/null 2>&1 &
CHILDREN+=("$!")
wait_for 10 test -s "$work/pp.pids" || fail "pingpong did not start"
{ read -r P1; read -r P2; } <"$work/pp.pids"
# held split, one member is on the pair's CPU already and only the other's
# mask changes: pp is whichever process of the two has the change
managed() {
        local p
        for p in $(awk '/^Tgid:/ { print $2 }' "/proc/$P1/status" "/proc/$P2/status" | sort -u); do
                ctl actions --json | jq -e --argjson p "$p" '[.. | objects | select(.pid? == $p)] | length > 0' \
                        >/dev/null && { pp=$p; return 0; }
        done
        return 1
}
wait_for 20 managed || { ctl pairs; fail "the daemon changed nothing of pingpong $P1/$P2, held split, in 20 s"; }
out=$(complete_line affctl --runtime-dir "$RUNDIR" revert "")
has --all "$out" || fail "revert does not offer --all: $out"
has "$pp" "$out" || fail "revert does not offer the changed process $pp: $out"
has $$ "$out" && fail "revert offers this shell ($$), which has no change"
echo "ok: verbs, options, explain PIDs, revert --all and changed PIDs"
