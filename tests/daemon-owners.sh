#!/bin/bash
# The threat model's pair rule, with real processes of two users and the
# shipped policies (Owners=trusted): an unprivileged user (nobody) who
# ping-pongs through two world-writable FIFOs with a root-owned echo loop
# does not get the root process pinned; the same ping-pong with both ends
# nobody's is co-located (so the pair was seen, and the first case is the
# rule, not a miss). Both start split (CPU 0 / CPU 1, then let go).
# Needs root, runuser, the user nobody and 2+ CPUs.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
require_cmd runuser
id nobody >/dev/null 2>&1 || skip "needs the user nobody"
[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
work=$(mktemp -d /tmp/affd-owners.XXXXXX)
chmod 755 "$work"
cp "$top_srcdir/tests/fifo-pingpong.py" "$work/"
trap 'cleanup; rm -rf "$work"' EXIT
ORIG=$(allowed_of $$)
LAST=$(( $(nproc) - 1 ))
start_daemon "$top_srcdir/policies" --interval 1000

# pingpong NAME ECHO-USER CLIENT-USER: sets ECHO and CLIENT (PIDs), started split
pingpong() {
        local d=$work/$1
        mkdir "$d" && chmod 777 "$d"
        mkfifo -m 666 "$d/a" "$d/b"
        runuser -u "$2" -- taskset -c 0 /usr/bin/python3 "$work/fifo-pingpong.py" echo "$d/a" "$d/b" &
        ECHO=$!; CHILDREN+=("$ECHO")
        runuser -u "$3" -- taskset -c "$LAST" /usr/bin/python3 "$work/fifo-pingpong.py" client "$d/b" "$d/a" &
        CLIENT=$!; CHILDREN+=("$CLIENT")
        # runuser forks: the python processes are its children
        wait_for 5 pgrep -P "$ECHO" >/dev/null || fail "$1: echo end did not start"
        wait_for 5 pgrep -P "$CLIENT" >/dev/null || fail "$1: client end did not start"
        ECHO=$(pgrep -P "$ECHO") CLIENT=$(pgrep -P "$CLIENT")
        sleep 0.3
        taskset -p -c "$ORIG" "$ECHO" >/dev/null
        taskset -p -c "$ORIG" "$CLIENT" >/dev/null
}
one_cpu() { [[ $(allowed_of "$1") =~ ^[0-9]+$ ]]; }
both_one_cpu() { one_cpu "$1" && one_cpu "$2"; }

# positive control: both ends nobody's → co-located
pingpong same nobody nobody
wait_for 15 both_one_cpu "$ECHO" "$CLIENT" ||
        { ctl pairs; fail "a nobody/nobody FIFO ping-pong was not co-located (the rule below would prove nothing)"; }
echo "# nobody/nobody: co-located on CPU $(allowed_of "$ECHO")"
kill "$ECHO" "$CLIENT"

# the attack: root's echo loop, nobody's client → root's process untouched
pingpong cross root nobody
deadline=$(( $(date +%s) + 10 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
        one_cpu "$ECHO" && { ctl actions; fail "root's echo loop $ECHO was pinned to $(allowed_of "$ECHO") for nobody's client"; }
        one_cpu "$CLIENT" && fail "nobody's client was pinned for a pair with root's task: $(allowed_of "$CLIENT")"
        sleep 0.2
done
grep -q "$ECHO" <(ctl actions --json) && fail "affctl actions lists root's echo loop"
echo "ok: a nobody/root ping-pong left alone for 10 s; nobody/nobody co-located"
