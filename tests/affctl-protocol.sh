#!/bin/bash
# affctl checks the daemon's protocol version before any verb: the affctl
# built with the daemon is answered; one built for protocol 1 (before
# Protocol() existed; tests/affctl-protocol-1) is refused with exit 5 and
# a message naming both versions, for every verb, before the verb runs.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_cmd jq
OLD=$top_builddir/tests/affctl-protocol-1

cfg=$(mktemp -d /tmp/affd-cfg.XXXXXX)
trap 'cleanup; rm -rf "$cfg"' EXIT
mkdir -p "$cfg/policies.d"
start_daemon "$cfg" --dry-run

v=$(ctl status --json | jq -r .protocol)
[ "$v" -ge 2 ] || fail "status reports protocol $v"

for verb in status "status --json" actions pairs hogs "tasks 5" metrics; do
        rc=0
        # shellcheck disable=SC2086
        "$OLD" --runtime-dir "$RUNDIR" $verb >"$RUNDIR/out" 2>"$RUNDIR/err" || rc=$?
        [ "$rc" = 5 ] || { cat "$RUNDIR/out" "$RUNDIR/err"; fail "affctl of protocol 1, '$verb': exit $rc, not 5"; }
        grep -q "affinityd speaks protocol version $v, this affctl 1" "$RUNDIR/err" ||
                { cat "$RUNDIR/err"; fail "'$verb': the refusal does not name both versions"; }
        [ ! -s "$RUNDIR/out" ] || { cat "$RUNDIR/out"; fail "'$verb': printed a reply it should not trust"; }
done
# The same verbs with the matching affctl.
ctl status >/dev/null || fail "the matching affctl is refused"
ctl metrics >/dev/null || fail "the matching affctl is refused (metrics)"
echo "ok: protocol $v answered, protocol 1 refused"
