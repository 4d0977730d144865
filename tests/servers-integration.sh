#!/bin/bash
# Integration: real servers nobody here wrote, against the real daemon
# with the shipped policies.
#  1. MariaDB with one sysbench client (oltp_point_select), started split
#     (server on the first CPU allowed, client on the last, then both let go to every CPU: the
#     kernel's split, not a user's taskset): the client thread and the
#     connection thread serving it are co-located by the daemon within
#     three of its passes that read the pair split (or, where the kernel
#     keeps it together by itself, the test says so) and stay co-located,
#     on one CPU, until the client exits;
#     `affctl pairs` names the server and the client; the effect check
#     undoes nothing, except where the client's own per-second rate fell
#     while it was co-located (a loaded machine: check_undo).
#  2. Two more clients one after the other (MariaDB's thread cache hands
#     the same server thread to each): each is co-located again, with no
#     cool-down or block left on the server thread by the one before.
#  3. One more at a fixed 1,000 requests/s (sysbench --rate): sysbench's
#     event-generator thread wakes the client thread one way per request;
#     once the pair is co-located, the generator joins its CPU (a feeder)
#     within five of the daemon's passes and 1 s, where the test's own
#     looks at /proc saw it apart. `affctl pairs` shows the pair's
#     response time, what the client waits for an answer (its round trips
#     say nothing at a fixed rate: the effect check judges such a pair by
#     it), and an undo by the effect check agrees with the client's own
#     95th-percentile latency.
#  4. Redis with one redis-benchmark connection: the same as 1.
#  5. Stopping the daemon restores every mask.
# Needs root, jq, 2+ CPUs and the servers (the README's test command
# installs mariadb-server sysbench redis-server redis-tools); skips (77)
# saying which is missing otherwise. About 100 s.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/servers-lib.sh"
require_root
require_cmd jq
two_cpus
missing=$(servers_missing_packages | tr '\n' ' ')
[ -z "$missing" ] || skip "needs the Debian packages: $missing"
if ! mountpoint -q /sys/kernel/tracing; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && MOUNTED_TRACEFS=1 || true
fi

work=$(mktemp -d /tmp/affd-servers.XXXXXX)
trap 'servers_stop; cleanup; rm -rf "$work"; [ -z "${MOUNTED_TRACEFS:-}" ] || umount /sys/kernel/tracing' EXIT
scope_enter   # the daemon under test changes this test's processes only
mariadb_start "$work" "$work" || fail "MariaDB did not start"
redis_start "$work" "$work" || fail "Redis did not start"
ORIG=$(allowed_of $$)


start_daemon "$top_srcdir/policies" --interval 1000
ctl status --json | jq -e '.capabilities.wake_source | test("perf")' >/dev/null ||
        echo "# note: the wake-up source is not perf here: $(ctl status --json | jq -c .capabilities.wake_source)"

# The pair of PID $p and PID $q in affctl pairs: of the pairs between the
# two processes, the one whose members are both there (cpu >= 0) and
# that wakes the most: at the shipped WakeRate= a client's
# start-up (its main thread connecting) can leave a second, weaker pair
# with the same server, listed "gone" once that thread is done.
PAIR_OF='[.pairs[] | select(((.pid_a == $p and .pid_b == $q) or (.pid_a == $q and .pid_b == $p))
          and .cpu_a >= 0 and .cpu_b >= 0)] | sort_by(.wake_rate_per_s) | last'
pair_field() {   # pair_field PID_SERVER PID_CLIENT JQ-EXPR
        ctl pairs --json | jq -r --argjson p "$1" --argjson q "$2" "$PAIR_OF | $3"
}
# last_cpu PID TID: the CPU the thread last ran on (field 39 of its stat;
# counted after the comm's closing parenthesis, which may hold blanks)
last_cpu() {
        local f
        read -r -a f <<<"$(sed 's/.*) //' "/proc/$1/task/$2/stat" 2>/dev/null)" || return 0
        echo "${f[36]:-}"
}
one_cpu_same() {   # both threads allowed on exactly the same single CPU
        local a b
        a=$(allowed_of "$1" 2>/dev/null) || return 1
        b=$(allowed_of "$2" 2>/dev/null) || return 1
        [ "$a" = "$b" ] && [[ $a =~ ^[0-9]+$ ]]
}
server_let_go() { [ "$(allowed_of "$1" 2>/dev/null)" = "$ORIG" ]; }
# pair_read SERVER_PID CLIENT_PID: one look at affctl pairs (a slow host
# runs few a second); sets ST ("server tid"), CT, SPLIT (the daemon's
# reading: split, together, unknown; none when it lists no such pair) and
# PASS (the daemon's pass that reading is of, from the same answer).
pair_read() {
        ST= CT= SPLIT=none PASS=
        read -r PASS ST CT SPLIT < <(ctl pairs --json | jq -r --argjson p "$1" --argjson q "$2" \
                ". as \$all | $PAIR_OF | \"\\(\$all.passes) \" + (if . == null then \"- - none\"
                 elif .pid_a == \$p then \"\\(.tid_a) \\(.tid_b) \\(.split)\" else \"\\(.tid_b) \\(.tid_a) \\(.split)\" end)")
        [ "$ST" != - ] || ST= CT=
        return 0
}

# await_colocated SERVER_PID CLIENT_PID: returns 0 once the pair is on one
# CPU; then, counting only the daemon's own passes (a slow host's passes
# and a client's start-up take what they take; a wall-clock deadline from
# a fast host failed in the QEMU guest, where a client was co-located
# 4.3-6.2 s after it started): 1 when the daemon read it split in 3
# passes and left it so (it acts in the first such pass, or the next when a member is
# newborn); 2 when it read it together in 3 passes in a row, after at most
# one split reading: the kernel keeps the pair together by itself (a loaded
# machine does), nothing to fix; 4 when it listed no such pair in 3 passes (the client has not
# started sending, sends too little, or the detector missed it: the caller
# tells which by the client's own rate); 3 when the client exited first.
# SPLIT is the daemon's last reading: split, together, unknown or none.
await_colocated() {
        local spid=$1 cpid=$2 seen=-1 n_split=0 n_together=0 n_none=0 run_together=0 cs cc
        LOOK_SAME=0 LOOK_APART=0
        while :; do
                pair_read "$spid" "$cpid"
                [ -z "$ST" ] || ! one_cpu_same "$ST" "$CT" || return 0
                # where the two last ran, read here from /proc: the daemon's
                # "together" is what is under test, not a premise
                if [ -n "$ST" ]; then
                        cs=$(last_cpu "$spid" "$ST") cc=$(last_cpu "$cpid" "$CT")
                        if [ -n "$cs" ] && [ -n "$cc" ]; then
                                if [ "$cs" = "$cc" ]; then LOOK_SAME=$((LOOK_SAME + 1)); else LOOK_APART=$((LOOK_APART + 1)); fi
                        fi
                fi
                # what it read so far, for a failure to say
                AC_READ="passes read: $n_split split, $n_together together, $n_none none; last pass ${PASS:-?}; /proc: $LOOK_SAME looks on one CPU, $LOOK_APART apart"
                kill -0 "$cpid" 2>/dev/null || return 3
                if [[ $PASS =~ ^[0-9]+$ ]] && [ "$PASS" != "$seen" ]; then
                        seen=$PASS
                        case $SPLIT in
                        split) n_split=$((n_split + 1)) run_together=0 ;;
                        together) n_together=$((n_together + 1)) run_together=$((run_together + 1)) ;;
                        none) n_none=$((n_none + 1)) ;;
                        esac
                fi
                [ "$n_split" -lt 3 ] || return 1
                # together in 3 passes in a row, also after one split
                # reading, which may be a newborn member's, not yet judged
                # (under stress-ng: 1 split, then 16 together until the
                # client ended); after two, the daemon should have acted
                [ "$n_split" -gt 1 ] || [ "$run_together" -lt 3 ] || return 2
                [ "$n_split" -gt 0 ] || [ "$n_together" -gt 0 ] || [ "$n_none" -lt 3 ] || return 4
                sleep 0.1
        done
}

# gen_tid CLIENT_PID: the client's thread that is neither its main thread
# nor the client thread CT and switches the most: sysbench --rate's event
# generator (found from /proc, not from the daemon under test).
# task_vcsw PID TID: the thread's voluntary context switches since it began
task_vcsw() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$1/task/$2/status" 2>/dev/null; }
gen_tid() {
        local t n best= max=-1
        for t in /proc/"$1"/task/*; do
                t=${t##*/}
                { [ "$t" = "$1" ] || [ "$t" = "$CT" ]; } && continue
                n=$(task_vcsw "$1" "$t") || continue
                [ "${n:-0}" -gt "$max" ] && max=$n best=$t
        done
        echo "$best"
}

# await_feeder CLIENT_PID: the event generator FT is on CT's CPU within 5
# of the daemon's passes and 1 s. Returns 0 when it is; 1 when not, and the
# test's own looks at /proc found it on another CPU than CT in at least
# half of them (what the daemon is to fix); 2 when not, and it mostly ran
# on CT's CPU anyway (the kernel keeps them together: nothing to fix);
# 3 when the client exited first; 4 when there is no such thread.
await_feeder() {
        local cpid=$1 first start looks=0 apart=0
        FT=$(gen_tid "$cpid")
        kill -0 "$cpid" 2>/dev/null || return 3
        [ -n "$FT" ] || return 4
        first=$(passes) || fail "no pass count from the daemon"
        start=$(date +%s%N)
        while :; do
                one_cpu_same "$FT" "$CT" && return 0
                kill -0 "$cpid" 2>/dev/null || return 3
                looks=$((looks + 1))
                [ "$(last_cpu "$cpid" "$FT")" = "$(last_cpu "$cpid" "$CT")" ] || apart=$((apart + 1))
                if [ $(( $(passes) - first )) -ge 5 ] && [ $(( ($(date +%s%N) - start) / 1000000 )) -ge 1000 ]; then
                        [ $((2 * apart)) -lt "$looks" ] || return 1
                        return 2
                fi
                sleep 0.1
        done
}

# check_feeder NAME CLIENT_PID: await_feeder's verdict, said or failed.
check_feeder() {
        local name=$1 r=0
        await_feeder "$2" || r=$?
        case $r in
        0) echo "# $name: its one-way waker $FT joined CPU $(allowed_of "$FT")" ;;
        2) echo "# premise not met: $name: the kernel kept the one-way waker $FT on the pair's CPU by itself" ;;
        # the client ran its whole time before the daemon co-located it
        # plus five passes: a slow host (the QEMU guest co-located one at
        # 503 wake-ups/s, 14.3 s into its 15 s; this development host,
        # 1.5 s in)
        3) echo "# premise not met: $name: the client ended within 5 of the daemon's passes of its co-location; its one-way waker's join not checked" ;;
        4) fail "$name: no thread of the client besides its main and client threads" ;;
        *) ctl pairs; tail -20 "$RUNDIR/daemon.log"
           fail "$name: its one-way waker $FT ran apart from the pair and was not moved in 5 passes" ;;
        esac
}

# The shipped pair policy's WakeRate= (per second): a pair that wakes less
# is none of the daemon's business.
WAKE_RATE=$(awk -F= '$1 == "WakeRate" { sub(/\/s$/, "", $2); print $2; exit }' \
        "$top_srcdir/policies/policies.d/50-pingpong.policy")
[[ $WAKE_RATE =~ ^[0-9]+$ ]] || fail "no WakeRate= in the shipped 50-pingpong.policy"

# switch_rate PID: the voluntary context switches per second of all of
# PID's threads over the next second, from /proc: a client with one
# connection sleeps at least once per request, so this is at least its
# request rate on this host as the kernel counts it, independent of the
# daemon under test. It is an upper bound on the wake-ups the daemon counts
# between the client thread and its server: a client not listed is only a
# failure at SURE times WakeRate= or more (in the QEMU guest, sysbench at
# 1,212 requests/s read 521 wake-ups/s in the daemon's bursts, and a run a
# little slower was under the 500/s the policy had then).
SURE=4
vol_switches() {
        local t n sum=0
        for t in /proc/"$1"/task/*; do
                n=$(task_vcsw "$1" "${t##*/}") || continue
                sum=$((sum + ${n:-0}))
        done
        echo "$sum"
}
switch_rate() {
        local a b t0 t1
        a=$(vol_switches "$1") t0=$(date +%s%N)
        sleep 1
        b=$(vol_switches "$1") t1=$(date +%s%N)
        echo $(( (b - a) * 1000000000 / (t1 - t0) ))
}

# check_client NAME SERVER_PID CLIENT_PID T0: co-located by the daemon's
# first passes that read it split, and still on one CPU at every look
# until it exits. A client the daemon never lists whose own rate on this
# host is under SURE times the policy's WakeRate= (a slow host: QEMU TCG
# runs MariaDB's point selects at ~1,200 a second) is said, with the rate
# the test measured, not failed; one above it that the daemon never lists
# is a failure.
check_client() {
        local name=$1 spid=$2 cpid=$3 t0=$4 looks=0 role try=1 r rate rate_max=-1 fast_unlisted=0
        COLOC_MS= UNDONE_MS= FT=   # nothing of the client before this one is judged with this one
        # The kernel may merge the pair by itself before the daemon looks
        # (then there is nothing to fix, and the daemon rightly waits): split
        # it again, at most twice. A pair the daemon saw split and left so
        # fails; one the kernel kept together every time is said, with the
        # roles still checked. A pair the daemon does not list is judged by
        # the client's own request rate, measured here from /proc.
        while :; do
                r=0
                await_colocated "$spid" "$cpid" || r=$?
                case $r in
                0) break ;;
                4)
                        rate=$(switch_rate "$cpid")
                        kill -0 "$cpid" 2>/dev/null || continue   # gone while measured: not a rate
                        [ "$rate" -le "$rate_max" ] || rate_max=$rate
                        if [ "$rate" -ge $((SURE * WAKE_RATE)) ]; then
                                fast_unlisted=$((fast_unlisted + 1))
                                [ "$fast_unlisted" -lt 2 ] || { ctl pairs; tail -20 "$RUNDIR/daemon.log"
                                        fail "$name: $rate switches/s (WakeRate=$WAKE_RATE/s), and the daemon listed no pair of it in 6 passes"; }
                        fi
                        continue ;;
                3)
                        if [ "$rate_max" -ge 0 ] && [ "$rate_max" -lt $((SURE * WAKE_RATE)) ]; then
                                echo "# premise not met: $name: at most $rate_max switches/s on this host (all its threads), not ${SURE}x WakeRate=$WAKE_RATE/s, and the daemon listed no pair of it; nothing sure to find"
                                ST= CT= COLOC_MS= UNDONE_MS=
                                return 0
                        fi
                        ctl pairs
                        tail -20 "$RUNDIR/daemon.log"
                        fail "$name: the client exited before it was co-located (attempt $try; its rate read at most $rate_max switches/s, -1: never read; $AC_READ)" ;;
                1)
                        # the shipped policy leaves a pair to the kernel where
                        # the host's calibration reads co-location as buying
                        # nothing (two SMT siblings, say): right, and said
                        if [ "$(pair_field "$spid" "$cpid" .state)" = "left alone: no gain on this host" ]; then
                                [ "$(allowed_of "$ST")" = "$ORIG" ] && [ "$(allowed_of "$CT")" = "$ORIG" ] ||
                                        fail "$name: 'left alone: no gain on this host', yet its masks are $(allowed_of "$ST") / $(allowed_of "$CT")"
                                echo "# premise not met: $name: $(pair_field "$spid" "$cpid" .why); the pair is left to the kernel here"
                                ST= CT= COLOC_MS= UNDONE_MS=
                                return 0
                        fi
                        ctl pairs
                        tail -20 "$RUNDIR/daemon.log"
                        fail "$name: read split in 3 of the daemon's passes and not co-located (attempt $try)" ;;
                esac
                # the daemon read it together: so must /proc, in most looks
                # (not all: the first ones may come before the merge)
                [ $((LOOK_SAME + LOOK_APART)) -eq 0 ] || [ "$LOOK_SAME" -gt "$LOOK_APART" ] || {
                        ctl pairs
                        fail "$name: the daemon reads the pair together, yet /proc saw it apart in $LOOK_APART of $((LOOK_SAME + LOOK_APART)) looks (attempt $try)"
                }
                if [ "$try" = 3 ]; then
                        echo "# premise not met: $name: the kernel kept the pair together by itself in 3 splits; nothing to co-locate"
                        role=$(pair_field "$spid" "$cpid" "if .pid_a == $spid then .role_a else .role_b end")
                        [ "$role" = server ] || fail "$name: affctl pairs calls the server side '$role'"
                        return 0
                fi
                echo "# $name: the kernel kept the pair together by itself (the daemon read it together in 3 passes); split again"
                if ! resplit "$spid" "$cpid"; then
                        echo "# $name: co-located by the daemon just before that split"
                        break
                fi
                try=$((try + 1))
        done
        COLOC_MS=$(( ($(date +%s%N) - t0) / 1000000 )) UNDONE_MS=
        echo "# $name: co-located after $COLOC_MS ms: server tid $ST, client tid $CT on CPU $(allowed_of "$ST")"
        role=$(pair_field "$spid" "$cpid" "if .pid_a == $spid then .role_a else .role_b end")
        [ "$role" = server ] || fail "$name: affctl pairs calls the server side '$role'"
        role=$(pair_field "$spid" "$cpid" "if .pid_a == $cpid then .role_a else .role_b end")
        [ "$role" = client ] || fail "$name: affctl pairs calls the client side '$role'"
        [ -z "${FEEDER:-}" ] || check_feeder "$name" "$cpid"
        [ -z "${RESPONSE:-}" ] || check_response "$name" "$spid" "$cpid"
        while kill -0 "$cpid" 2>/dev/null; do
                if [ -d "/proc/$cpid/task/$CT" ] && ! one_cpu_same "$ST" "$CT"; then
                        # the client thread may exit between the two reads (seen: "1 / ")
                        { kill -0 "$cpid" && [ -d "/proc/$cpid/task/$CT" ]; } 2>/dev/null || break
                        # the effect check's undo: judged by the client's own rate once it exits (check_undo)
                        if [ -n "${JUDGE_UNDO:-}" ] && grep -q "undo affinity task:$CT:" "$RUNDIR/daemon.log"; then
                                UNDONE_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
                                echo "# $name: the effect check undid the co-location within $UNDONE_MS ms"
                                return 0
                        fi
                        ctl pairs
                        tail -20 "$RUNDIR/daemon.log"
                        fail "$name: split again after $looks looks: $(allowed_of "$ST") / $(allowed_of "$CT" 2>/dev/null)"
                fi
                looks=$((looks + 1))
                sleep 0.1
        done
        echo "# $name: stayed co-located for $looks looks"
}

# check_undo NAME LOG [latency|rps]: an undo by the effect check (check_client,
# UNDONE_MS set) must agree with the client's own per-second figures
# (sysbench --report-interval=1): its rate while co-located no more than
# 10 % over that where the kernel placed it, the whole seconds before
# co-location (from the second on) and after the undo; with "latency" (a
# client at a fixed rate, whose rate is what it sends), its
# 95th-percentile latency no more than 10 % under; with "rps", the same
# rate from redis-benchmark's lines, one every 250 ms.
# On a loaded machine the kernel moves a pair away from the load, and one
# CPU can cost more than the split (seen under stress-ng 40 %: -23 %); a
# quiet machine's pair gains 18-32 % and is kept. After the undo only the
# first 5 s count: an undo for a second look places the pair again then
# (PLAN_SECOND_LOOK_USEC), and the seconds after would be co-located ones.
LOOK_MS=5000
UNDOS_JUDGED=0
check_undo() {
        local name=$1 log=$2 what=${3:-rate} key=tps: w=1000 kernel during
        [ -n "$UNDONE_MS" ] || return 0
        case $what in
        latency) key="(ms,95%):" ;;
        rps)    # redis-benchmark: a "GET: rps=N" line as it starts (0) and every 250 ms after,
                # read as sysbench's "[ Ts ] tps: N" for the 250 ms up to T
                tr '\r' '\n' <"$log" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rps=/) {
                        sub("rps=", "", $i); printf "[ %.2fs ] tps: %s\n", n++ * 0.25, $i } }' >"$log.rate"
                log=$log.rate what=rate w=250 ;;
        esac
        # x1000: a latency in ms compares as whole µs; w: the window of one line, in ms
        read -r kernel during < <(awk -v c="$COLOC_MS" -v u="$UNDONE_MS" -v look="$LOOK_MS" -v key="$key" -v w="$w" '
                /^\[ *[0-9.]+s \]/ && index($0, key) { t = ($2 + 0) * 1000
                        for (i = 1; i < NF; i++) if ($i == key) v = $(i + 1) * 1000
                        if ((t > w && t <= c) || (t - w >= u && t <= u + look)) { k += v; nk++ }
                        else if (t - w >= c && t <= u) { d += v; nd++ } }
                END { printf "%.0f %.0f\n", nk ? k / nk : -1, nd ? d / nd : -1 }' "$log")
        echo "# $name: the client's own $what where the kernel placed it $kernel, co-located $during (${key%:}, x1000)"
        # the check takes 5 samples after co-location, and the client runs on after the undo
        [ "$kernel" -gt 0 ] && [ "$during" -gt 0 ] ||
                fail "$name: no whole second of the client's $what co-located or not (co-located at $COLOC_MS ms, undone by $UNDONE_MS ms)"
        # A change that bought nothing may go (a second look releases one
        # without a clear gain): only a gain beyond the effect check's
        # default tolerance (10 %) is one it must not have undone.
        if [ "$what" = rate ]; then
                [ $((during * 100)) -le $((kernel * 110)) ] ||
                        fail "$name: undone by the effect check, yet co-located the client's rate rose over 10 % ($kernel -> $during)"
        else
                [ $((during * 100)) -ge $((kernel * 90)) ] ||
                        fail "$name: undone by the effect check, yet co-located the client's latency fell over 10 % ($kernel -> $during)"
        fi
        # the changes this verdict stands for: the pair's pins, and its one-way
        # waker's, which the daemon judges by the pair it feeds
        for t in "$ST" "$CT" "${FT:-}"; do
                [ -z "$t" ] || ! grep -q "undo affinity task:$t:" "$RUNDIR/daemon.log" ||
                        UNDOS_JUDGED=$((UNDOS_JUDGED + 1))
        done
}

# check_response NAME SERVER_PID CLIENT_PID: while the co-located pair
# runs, the daemon shows its response time, the client's wait (affctl pairs,
# the shorter of response_a_to_b_us and response_b_to_a_us), within 5 s.
# A client that ends first is said, not failed.
check_response() {
        local name=$1 deadline=$(( $(date +%s%N) + 5000000000 )) us
        while kill -0 "$3" 2>/dev/null; do
                us=$(pair_field "$2" "$3" '[.response_a_to_b_us, .response_b_to_a_us] | if any(. == null) then empty else min end')
                if [ -n "$us" ]; then
                        echo "# $name: the daemon reads the server's answer in ${us%.*} us"
                        return 0
                fi
                [ "$(date +%s%N)" -lt "$deadline" ] ||
                        { ctl pairs --json | jq -c .pairs; fail "$name: no response time for the pair in 5 s"; }
                sleep 0.2
        done
        echo "# premise not met: $name: the client ended before the daemon timed its server's answers"
}

# The split is the test's doing, not a user's: the daemon is frozen
# (SIGSTOP) while the test's tasksets run, so that it sees the pair split
# and both masks back as they were, never one taskset of the set. Without
# that it can co-locate the pair between the client's let-go and the
# server's (CI saw it: within the 0.3 s, as it should), and the server's
# let-go is then a change under its feet (affinityd(8) COEXISTENCE), which
# releases the pair.

# start_split CMD...: the client on the last CPU, every thread of the server
# on the first (CPU_A), both let go to all CPUs at once after 0.3 s; sets CLIENT_PID.
# The daemon still holds the server thread for its next client: it is taken
# back first (affctl revert), so that the split is not a change under the
# daemon's feet. Nothing is held before the first client: then revert
# fails, which is fine.
start_split() {
        local spid=$1; shift
        ctl revert "$spid" >/dev/null 2>&1 || true
        daemon_freeze
        taskset -a -p -c "$CPU_A" "$spid" >/dev/null
        taskset -c "$CPU_LAST" "$@" >"$work/client.log" 2>&1 &
        CLIENT_PID=$!
        sleep 0.3
        taskset -a -p -c "$ORIG" "$CLIENT_PID" >/dev/null
        taskset -a -p -c "$ORIG" "$spid" >/dev/null
        daemon_thaw
}

# resplit SERVER_PID CLIENT_PID: the running pair apart for 0.3 s again.
# 1, and nothing done, when the daemon co-located it (ST, CT) between the
# last look and its freeze: a pair the kernel keeps together but moves is
# one it may co-locate (seen under stress-ng: set at split 3.9 %, then
# undone by this taskset as "someone else's" change, and left alone).
resplit() {
        daemon_freeze
        if [ -n "${ST:-}" ] && one_cpu_same "$ST" "$CT"; then
                daemon_thaw
                return 1
        fi
        taskset -a -p -c "$CPU_A" "$1" >/dev/null
        taskset -a -p -c "$CPU_LAST" "$2" >/dev/null
        sleep 0.3
        taskset -a -p -c "$ORIG" "$2" >/dev/null
        taskset -a -p -c "$ORIG" "$1" >/dev/null
        daemon_thaw
}

for i in 1 2 3; do
        t0=$(date +%s%N)
        start_split "$MDB_PID" "${SB[@]}" --threads=1 --time=15 --report-interval=1 oltp_point_select run
        JUDGE_UNDO=1 check_client "MariaDB client $i" "$MDB_PID" "$CLIENT_PID" "$t0"
        wait "$CLIENT_PID" || { cat "$work/client.log"; fail "sysbench failed"; }
        check_undo "MariaDB client $i" "$work/client.log"
        grep -q "queries:" "$work/client.log" || { cat "$work/client.log"; fail "sysbench printed no result"; }
        echo "# MariaDB client $i: $(awk '/queries:/ { print $3, $4, $5 }' "$work/client.log")"
        # The client left: the daemon lets the server thread go at its next
        # pass (a member exited), with no cool-down for the next client. Wait
        # for that, so that the next start_split's revert undoes nothing:
        # reverting a pin the daemon still held is an operator's undo, after
        # which it rightly waits Cooldown= (seen once: client 3 not
        # co-located within 4 s).
        [ -z "$ST" ] || wait_for 5 server_let_go "$ST" ||
                fail "MariaDB client $i: the server thread $ST still at $(allowed_of "$ST") 5 s after its client left"
done

t0=$(date +%s%N)
start_split "$MDB_PID" "${SB[@]}" --threads=1 --rate=1000 --time=15 --report-interval=1 oltp_point_select run
FEEDER=1 RESPONSE=1 JUDGE_UNDO=1 check_client "MariaDB at 1,000/s" "$MDB_PID" "$CLIENT_PID" "$t0"
wait "$CLIENT_PID" || { cat "$work/client.log"; fail "sysbench --rate failed"; }
check_undo "MariaDB at 1,000/s" "$work/client.log" latency
for t in "$CT" "${FT:-}"; do
        [ -z "$t" ] || grep -E "effect check: task:$t:[0-9]+ kept|undo affinity task:$t:" "$RUNDIR/daemon.log" |
                sed 's/^/# MariaDB at 1,000\/s: /' || true
done
[ -z "$ST" ] || wait_for 5 server_let_go "$ST" ||
        fail "MariaDB at 1,000/s: the server thread $ST still at $(allowed_of "$ST") 5 s after its client left"

t0=$(date +%s%N)
start_split "$RDS_PID" redis-benchmark -s "$RDS_SOCK" -c 1 -n 500000 -t get -q
JUDGE_UNDO=1 check_client "Redis client" "$RDS_PID" "$CLIENT_PID" "$t0"
wait "$CLIENT_PID" || fail "redis-benchmark failed"
check_undo "Redis client" "$work/client.log" rps
echo "# Redis: $(tr '\r' '\n' <"$work/client.log" | grep GET: | tail -1)"

undone=$(ctl status --json | jq -r .counts.actions_undone)
# every undo is of a pair judged by its client's own figures above
[ "$undone" -le "$UNDOS_JUDGED" ] ||
        { grep "undo" "$RUNDIR/daemon.log"; fail "the effect check undid $undone change(s), $UNDOS_JUDGED of them judged by their clients"; }

stop_daemon
for p in "$MDB_PID" "$RDS_PID"; do
        for t in /proc/"$p"/task/*; do
                a=$(allowed_of "${t##*/}" 2>/dev/null) || continue
                [ "$a" = "$ORIG" ] || fail "thread ${t##*/} of $p left at $a after stop (was $ORIG)"
        done
done
echo "ok: MariaDB (3 clients in turn, one at a fixed rate with its one-way waker) and Redis co-located, kept, restored"
