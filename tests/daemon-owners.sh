#!/bin/bash
# The threat model's pair rule, with real processes of two users and the
# shipped policies (Owners=trusted): an unprivileged user (uid 59999, a
# login user's range, run with setpriv: no account needed) who ping-pongs
# through two world-writable FIFOs with a root-owned echo loop does not get
# the root process pinned; the same ping-pong with both ends that user's
# is co-located (so the pair was seen, and the first case is the rule, not
# a miss); and nobody (65534), a system identity like www-data, pairs with
# root's. All are held split (the first / the last CPU allowed) and the
# pair policy may change narrowed masks (AllowNarrowed=yes), so a loaded
# machine's kernel cannot keep a released pair together and leave the rule
# nothing to do.
# Needs root, setpriv (util-linux) and 2+ CPUs.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
require_cmd setpriv
USER_UID=59999
two_cpus
work=$(mktemp -d /tmp/affd-owners.XXXXXX)
chmod 755 "$work"
cp "$top_srcdir/tests/fifo-pingpong.py" "$work/"
trap 'cleanup; rm -rf "$work"' EXIT
scope_enter   # the daemon under test changes this test's processes only

mkdir "$work/cfg"
cp -r "$top_srcdir/policies/." "$work/cfg/"
# IgnoreCalibration=yes: a host whose start-up calibration reads
# co-location as buying nothing (two SMT siblings, say) leaves pairs to the
# kernel, rightly (test-plan-pair's no-gain case); this test is of owners.
printf '\n[Action]\nAllowNarrowed=yes\nIgnoreCalibration=yes\n' >>"$work/cfg/policies.d/50-pingpong.policy"
start_daemon "$work/cfg" --interval 1000

# as UID: the command prefix that runs as that uid (none for 0); setpriv
# execs, so the $! of a simple command behind it is the python end itself
as() { [ "$1" = 0 ] || echo "setpriv --reuid=$1 --regid=$1 --clear-groups --"; }
# uid_is PID UID: the process runs the python end (not the shell before exec) as UID
uid_is() {
        [ "$(awk '/^Uid:/ { print $2 }' "/proc/$1/status" 2>/dev/null)" = "$2" ] &&
                grep -q fifo-pingpong "/proc/$1/cmdline" 2>/dev/null
}
# pingpong NAME ECHO-UID CLIENT-UID: sets ECHO and CLIENT (PIDs), held split
pingpong() {
        local d=$work/$1
        mkdir "$d" && chmod 777 "$d"
        mkfifo -m 666 "$d/a" "$d/b"
        $(as "$2") taskset -c "$CPU_A" /usr/bin/python3 "$work/fifo-pingpong.py" echo "$d/a" "$d/b" &
        ECHO=$!; CHILDREN+=("$ECHO")
        $(as "$3") taskset -c "$CPU_LAST" /usr/bin/python3 "$work/fifo-pingpong.py" client "$d/b" "$d/a" &
        CLIENT=$!; CHILDREN+=("$CLIENT")
        wait_for 5 uid_is "$ECHO" "$2" || fail "$1: echo end did not start as uid $2"
        wait_for 5 uid_is "$CLIENT" "$3" || fail "$1: client end did not start as uid $3"
}
one_cpu() { [[ $(allowed_of "$1") =~ ^[0-9]+$ ]]; }
both_one_cpu() { one_cpu "$1" && one_cpu "$2" && [ "$(allowed_of "$1")" = "$(allowed_of "$2")" ]; }

# positive control: both ends the user's → co-located
pingpong same "$USER_UID" "$USER_UID"
wait_for 15 both_one_cpu "$ECHO" "$CLIENT" ||
        { ctl pairs; fail "a user/user FIFO ping-pong was not co-located (the rule below would prove nothing)"; }
echo "# user/user: co-located on CPU $(allowed_of "$ECHO")"
kill "$ECHO" "$CLIENT"

# nobody is a system identity (a web server's workers run as it): it pairs with root's
p_sys=$(passes) || fail "no pass count from the daemon"
pingpong sys 0 65534
wait_for 15 both_one_cpu "$ECHO" "$CLIENT" ||
        { ctl pairs; fail "root's echo loop and nobody's client were not co-located"; }
p_now=$(passes) || fail "no pass count from the daemon"
took=$(( p_now - p_sys ))
echo "# root/nobody: co-located on CPU $(allowed_of "$ECHO") within $took passes"
kill "$ECHO" "$CLIENT"

# the attack: root's echo loop, the user's client → root's process untouched
pingpong cross 0 "$USER_UID"
# for twice the passes the same pair of root and nobody took to be
# co-located (an early pass and its looks count too), 10 at least
hold=$(( 2 * took > 10 ? 2 * took : 10 ))
cross_untouched() { [ "$(allowed_of "$ECHO")" = "$CPU_A" ] && [ "$(allowed_of "$CLIENT")" = "$CPU_LAST" ]; }
holds_for_passes "$hold" cross_untouched || { ctl actions
        fail "a pair of root's echo loop $ECHO (now on $(allowed_of "$ECHO"), was $CPU_A) and uid $USER_UID's client $CLIENT (now on $(allowed_of "$CLIENT"), was $CPU_LAST) was moved"; }
# its key, task:TID:START (the PID alone may be part of another number)
grep -q "task:$ECHO:" <(ctl actions --json) && fail "affctl actions lists root's echo loop"
echo "ok: a user/root ping-pong left alone for $hold passes; user/user and root/nobody co-located"
