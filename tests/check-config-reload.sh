#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Integration: reload on a running daemon.
#  - a good change takes effect (affctl reload exits 0, status shows it);
#  - a bad one is refused: affctl reload exits non-zero and names
#    file:line, the running configuration stays, the daemon keeps running;
#  - SIGHUP reloads too; a removed policy disappears.
# Runs the daemon with --dry-run and report/exclude policies only: it
# changes nothing on the machine.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_cmd jq
require_root

cfg=$(mktemp -d /tmp/affd-cfg.XXXXXX)
CLEAN_CFG=$cfg
trap 'cleanup; rm -rf "$CLEAN_CFG"' EXIT
mkdir -p "$cfg/policies.d"
cat > "$cfg/affinityd.conf" <<'INI'
[Daemon]
Interval=200ms
DryRun=yes
INI
cat > "$cfg/policies.d/50-a.policy" <<'INI'
[Policy]
Detector=hog
Action=report
INI

start_daemon "$cfg" --dry-run

policies() { ctl status --json | jq -r '.policies'; }
has_policies() { [ "$(policies)" = "$1" ]; }
wait_for 10 has_policies 1 || fail "status shows $(policies) policies, want 1"

# A good change takes effect.
cat > "$cfg/policies.d/60-b.policy" <<'INI'
[Policy]
Detector=pair
Action=report
INI
ctl reload >/dev/null || fail "affctl reload of a good configuration failed"
has_policies 2 || fail "after a good reload: $(policies) policies, want 2"
ctl reload --json | jq -e '.ok == true and .policies == 2' >/dev/null ||
        fail "reload --json does not say ok with 2 policies"

# A bad change is refused, with file:line, and the running configuration stays.
cat > "$cfg/policies.d/70-bad.policy" <<'INI'
[Policy]
Detector=hog
Action=frobnicate
Hysteresis=often
INI
set +e
out=$(ctl reload 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || fail "affctl reload of a bad configuration exited 0"
echo "$out" | grep -qF "$cfg/policies.d/70-bad.policy:3: Action=frobnicate: unknown action" ||
        fail "affctl reload does not name the bad line; it said: $out"
# each error on a line of its own, starting with its file:line
echo "$out" | grep -q "^  $cfg/policies.d/70-bad.policy:4: " ||
        fail "affctl reload does not put the second error on a line of its own; it said: $out"
echo "$out" | grep -q "keeps its running configuration" ||
        fail "affctl reload does not say the running configuration is kept; it said: $out"
kill -0 "$DAEMON_PID" 2>/dev/null || fail "daemon died on a bad reload"
has_policies 2 || fail "after a bad reload: $(policies) policies, want the old 2"
affinityd_check_rc=0
"$AFFINITYD" --check-config --config-dir "$cfg" >/dev/null 2>&1 || affinityd_check_rc=$?
[ "$affinityd_check_rc" -eq 1 ] || fail "affinityd --check-config exited $affinityd_check_rc on the bad file, want 1"

# SIGHUP reloads: fix the file, signal, and the third policy appears.
sed -i 's/^Action=frobnicate$/Action=report/; s/^Detector=hog$/Detector=steal/; /^Hysteresis=often$/d' "$cfg/policies.d/70-bad.policy"
kill -HUP "$DAEMON_PID"
wait_for 10 has_policies 3 || fail "SIGHUP did not reload: $(policies) policies, want 3"

# A reload frees the old policies while the last pass's findings, which
# affctl reads until the next pass, still name them: a ping-pong pair
# gives the pair policy a finding, and affctl asks about it right after
# each of several reloads (the ASan build turns a read of a freed policy
# into the daemon's death).
PP=$top_builddir/tests/workloads/pingpong
[ -x "$PP" ] || fail "tests/workloads/pingpong not built"
if have_two_cpus; then
        "$PP" --cpus "$CPU_A,$CPU_B" --duration 60 --pid-file "$cfg/pp.pids" >/dev/null 2>&1 &
        PP_PID=$!
        trap 'kill "$PP_PID" 2>/dev/null || true; cleanup; rm -rf "$CLEAN_CFG"' EXIT
        pp_findings() { ctl explain --json "$PP_PID" | jq -r '.threads[].findings[]'; }
        pp_found() { pp_findings 2>/dev/null | grep -q "(policy 60-b)"; }
        wait_for 15 pp_found || fail "the ping-pong pair got no finding of policy 60-b: $(pp_findings 2>&1)"
        for _ in 1 2 3 4 5; do
                ctl reload >/dev/null || fail "a good reload failed"
                out=$(pp_findings 2>&1) || fail "affctl explain failed right after a reload: $out"
                echo "$out" | grep -q "(policy 60-b)\|(policy -)" ||
                        fail "after a reload the finding names another policy: $out"
                ctl pairs --json >/dev/null || fail "affctl pairs failed right after a reload"
                ctl hogs --json >/dev/null || fail "affctl hogs failed right after a reload"
        done
        kill -0 "$DAEMON_PID" 2>/dev/null || fail "daemon died answering about findings after a reload"
        kill "$PP_PID" 2>/dev/null || true
        wait "$PP_PID" 2>/dev/null || true
        trap 'cleanup; rm -rf "$CLEAN_CFG"' EXIT
fi

# Masking a policy removes it on reload.
ln -sf /dev/null "$cfg/policies.d/60-b.policy"
ctl reload >/dev/null || fail "reload after masking failed"
has_policies 2 || fail "masked policy still counted: $(policies) policies, want 2"
ctl status --json | jq -e '[.config_files[] | select(endswith("60-b.policy"))] | length == 0' >/dev/null ||
        fail "status still lists the masked file"
echo "ok: good reload, bad reload refused with file:line, SIGHUP, masking"
