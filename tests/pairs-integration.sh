#!/bin/bash
# Integration ([wake-affine]): ping-pong pairs against the real daemon.
#  1. a pipe ping-pong started on two CPUs and then released to all CPUs
#     (the kernel's split, not a user's taskset) is co-located within a
#     deadline, `affctl pairs` says so, and its round-trip rate rises;
#     1b. a pair a user split on purpose (both masks narrowed) is left as set;
#     1c. a pair with one member pinned by someone else: the other is moved
#     onto its CPU, the pinned one never touched, and the pin held unless
#     the effect check undoes it with the pair's own rate agreeing;
#     1d. when that someone lets the anchor go, it joins the pair's CPU and
#     the other's pin is kept;
#     1e. a chain of three (client, proxy, backend) ends on one CPU;
#     1g. a fan (a client and two threads of one echo process) ends on
#     one CPU, placed whole;
#     1f. once the pair is kept and nothing changes, the wake-up bursts
#     thin out (one pass in 4) and the pair stays held;
#  2. a pipelined stream pair is left alone, or, where a loaded machine
#     squeezes it under MaxCombinedUtil= and it is co-located, undone by the
#     effect check or no slower on one CPU;
#  3. stopping the daemon puts a co-located pair's masks back;
#  4. with --no-perf the fallback source finds the pair too (if the daemon
#     wires the fallback; otherwise noted).
# Needs root, jq and 2+ CPUs; skips (77) otherwise. The daemon is scoped to
# the test's cgroup, so a pair pinned to one CPU is the daemon's doing. How
# much co-location buys is measured first, by hand, beside the daemon (the
# same pingpong pinned to one CPU, and held split, interleaved): the rate
# check asks for a quarter of that gain, and where co-location buys under
# 10 % on this host, or no more than its runs' own spread, it says so and
# checks placement only. Where the kernel kept every ping-pong together by
# itself (a loaded machine), the test says which checks had
# nothing to act on. It fails when a pair stays split for 4 s and the
# daemon does nothing, or when a pinned pair is not shown co-located.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
require_cmd jq
two_cpus
PINGPONG=$top_builddir/tests/workloads/pingpong
STREAM=$top_builddir/tests/workloads/stream

work=$(mktemp -d /tmp/affd-pairs.XXXXXX)
cfg=$work/cfg
mkdir -p "$cfg/policies.d"
cat > "$cfg/affinityd.conf" <<'INI'
[Daemon]
Interval=500ms
Hysteresis=2
Cooldown=5s
INI
cp "$top_srcdir/policies/policies.d/50-pingpong.policy" "$cfg/policies.d/"
# Placement is checked on every host: where the start-up calibration reads
# co-location as buying nothing (two SMT siblings, say), the shipped policy
# leaves pairs to the kernel, rightly (test-plan-pair's no-gain case), and
# there would be nothing to check. The rate check below has its own
# premise, the gain measured by hand.
printf '\n[Action]\nIgnoreCalibration=yes\n' >>"$cfg/policies.d/50-pingpong.policy"
for p in 10-exclude-kernel 10-exclude-self; do
        [ -f "$top_srcdir/policies/policies.d/$p.policy" ] && cp "$top_srcdir/policies/policies.d/$p.policy" "$cfg/policies.d/"
done
trap 'cleanup; rm -rf "$work"' EXIT
scope_enter   # the daemon under test changes this test's processes only

# The mask a new process gets here: what "restored" means.
ORIG=$(allowed_of $$)

pairs_json() { ctl pairs --json 2>/dev/null; }
pair_state() {   # pair_state TID_A TID_B → state, "" if not listed
        local lo=$(( $1 < $2 ? $1 : $2 )) hi=$(( $1 < $2 ? $2 : $1 ))
        pairs_json | jq -r --arg k "pair:$lo:$hi" '[.pairs[] | select(.key == $k) | .state][0] // ""'
}
single_cpu_same() {   # both threads allowed on exactly one, the same, CPU
        local a b
        a=$(allowed_of "$1" 2>/dev/null) || return 1
        b=$(allowed_of "$2" 2>/dev/null) || return 1
        [ "$a" = "$b" ] && [[ "$a" =~ ^[0-9]+$ ]]
}
# mean rate of pingpong progress lines matching an awk condition on t and same_cpu
mean_rate() {   # mean_rate FILE split|after T: split windows before T, all from T
        awk -v cond="$2" '
                /^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                        t = v["t"] + 0; s = v["same_cpu"] + 0; r = v["rate"] + 0
                        if ((cond == "split" && s < 0.5 && t < T) || (cond == "after" && t >= T)) { sum += r; n++ } }
                END { if (n) printf "%.0f\n", sum / n; else print 0 }' T="$3" "$1"
}
last_t() { awk '/^t=/ { sub("t=", "", $1); t = $1 } END { print t + 0 }' "$1"; }
# median_rate FILE T0 T1 → the median of pingpong's 250 ms rates in [T0, T1) and their count
median_rate() {
        awk -v a="$2" -v b="$3" '/^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                t = v["t"] + 0; if (t >= a && t < b) print v["rate"] + 0 }' "$1" | sort -n |
                awk '{ r[NR] = $1 } END { if (!NR) print "0 0"; else printf "%.0f %d\n", NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2, NR }'
}
# judge_undo WHAT TID OUT T0 T_PIN T_END: TID's pin was let go. Only the
# effect check may let it go, and only where the pair's own round trips did
# not rise under the pin by more than the check's default tolerance (10 %):
# the median of pingpong's lines in [T_PIN + 0.25, T_END) against that in
# [T0, T_PIN). On a loaded machine the kernel often runs a pair together
# already, and there a pin can cost (CI under stress-ng: "split 10.1%"
# before the pin, undone at -6 %; "split 6%", undone at -21 %). With fewer
# than 4 lines before or 2 under the pin there is nothing to compare: said,
# and UNDO_JUDGED=0 (1 when compared).
# last_undo TID: the effect check's reason on TID's latest undo line
last_undo() { grep "undo affinity task:$1:" "$RUNDIR/daemon.log" | tail -1 | sed 's/.*effect check: //'; }
judge_undo() {
        local what=$1 tid=$2 out=$3 kernel nk pinned np
        UNDO_JUDGED=0
        # the mask is put back before the line is logged
        wait_for 2 grep -q "undo affinity task:$tid:.*effect check" "$RUNDIR/daemon.log" ||
                fail "$what, not by the effect check: $(allowed_of "$tid")"
        read -r kernel nk < <(median_rate "$out" "$4" "$5")
        read -r pinned np < <(median_rate "$out" "$(awk -v t="$5" 'BEGIN { print t + 0.25 }')" "$6")
        echo "# $what by the effect check: $(last_undo "$tid")"
        echo "# pingpong's own round trips/s (medians of 250 ms): ${kernel} before the pin (${nk} lines; its longest split run $(split_run_s "$out") s), ${pinned} pinned (${np} lines)"
        if [ "$nk" -lt 4 ] || [ "$np" -lt 2 ]; then
                echo "# too few lines to compare: the undo not judged by the pair's own rate"
                return 0
        fi
        UNDO_JUDGED=1
        awk -v k="$kernel" -v p="$pinned" 'BEGIN { exit !(p < k * 1.10) }' ||
                fail "the effect check undid a pin that raised the pair's own rate (${kernel} -> ${pinned} round trips/s)"
}

# placed_again TID A B: the effect check's latest word on TID was a
# release for a second look, and A and B are back on one CPU within 20 s.
# Such a release is no verdict: a gain under the bar a "before" of one
# window or two asks (beside stress-ng: +9.8 % and +2 % of bytes, where
# the pair's own round trips rose 27 % and 15 %) lets the kernel place the
# pair for the look's 5 s, and it goes back on one CPU when that moved
# clearly more; that placement's verdict is final.
placed_again() {
        local tid=$1
        latest_is_look() { last_undo "$tid" | grep -q "second look"; }
        wait_for 2 latest_is_look && wait_for 20 single_cpu_same "$2" "$3" || return 1
        echo "# released for a second look ($(last_undo "$tid")) and placed again when it ended: $(allowed_of "$tid")"
}

start_pingpong() {   # start_pingpong NAME → P1 P2 PPOUT
        PPOUT=$work/$1.out
        rm -f "$work/$1.pids"
        "$PINGPONG" --cpus "$CPU_A,$CPU_B" --duration 60 --report-interval 250 --pid-file "$work/$1.pids" >"$PPOUT" 2>&1 &
        PP=$!; CHILDREN+=("$PP")
        wait_for 10 test -s "$work/$1.pids" || fail "pingpong did not start"
        { read -r P1; read -r P2; } < "$work/$1.pids"
}
stop_pingpong() { kill -TERM "$PP" 2>/dev/null || true; wait "$PP" 2>/dev/null || true; }

# Longest run of progress windows (250 ms) with both sides on different
# CPUs, in s; split_run_s FILE
split_run_s() {
        awk '/^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                     if (v["same_cpu"] + 0 < 0.1) { n++; if (n > m) m = n } else n = 0 }
             END { printf "%.2f\n", m * 0.25 }' "$1"
}

# The share of a pingpong's round trips split across CPUs, from its 250 ms
# windows that start at FROM s or later (a pair held split until FROM, as
# the anchor's is, is not the kernel's split): each window's split share
# weighed by its round trips, for a split window holds fewer of them (a
# ninth where co-location buys 9x). No round trips at all: all split.
# split_share FILE FROM
split_share() {
        awk -v from="$2" '/^t=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                     if (v["t"] - 0.25 < from) next
                     s += (1 - v["same_cpu"]) * v["rate"]; n += v["rate"] }
             END { printf "%.3f\n", (n > 0 ? s / n : 1) }' "$1"
}
# The least split share a pin pays for on a host where co-location buys
# GAIN (measured by hand, below), by the rule affinityd(8) gives: a share
# f of split round trips costs 1 + f (GAIN - 1), a pin is worth it from 5 %
# of that, and a pair with 5 % of them split is split on any host (under
# 0.5 % it is the sampler's noise). split_share_pays GAIN
split_share_pays() {
        awk -v g="$1" 'BEGIN { f = g > 1 ? 0.05 / (g - 1) : 0.05
                               if (f > 0.05) f = 0.05; if (f < 0.005) f = 0.005; printf "%.3f\n", f }'
}

# Start a split ping-pong and wait for the daemon to co-locate it. Returns
# 0 when co-located; 1 when the pair stayed split (a failure: Interval=500ms,
# Hysteresis=2 should act in about 2-3 s); 2 when the kernel merged the pair
# by itself in every try (on a loaded machine it often does: then there is
# nothing to co-locate). Merged means together for 95 % of its round trips
# by the pair's own count: one split on half of them in every window has
# no split window, and is no merged pair.
colocate_pingpong() {
        local try run same state undone=
        for try in 1 2 3; do
                start_pingpong "$1-$try"
                # Done when the daemon pinned it (the test's cgroup is its
                # scope: nobody else's daemon does), or when 6 s passed
                # with the pair together by itself.
                co_or_merged() {
                        single_cpu_same "$P1" "$P2" && return 0
                        awk -v t="$(last_t "$PPOUT")" 'BEGIN { exit !(t >= 6) }' || return 1
                        awk -v m="$(mean_same_cpu "$PPOUT")" 'BEGIN { exit !(m >= 0.95) }'
                }
                wait_for 20 co_or_merged || true
                if single_cpu_same "$P1" "$P2"; then
                        T_PIN=$(last_t "$PPOUT")
                        state=$(pair_state "$P1" "$P2")
                        [[ $state == co-located* ]] && return 0
                        # An effect check may undo the co-location between
                        # the two reads (a 4-vCPU guest under load: "6425 ->
                        # 4722, -27 %: undo"): only masks still on one CPU
                        # beside another state contradict each other.
                        single_cpu_same "$P1" "$P2" &&
                                fail "the pair is pinned to CPU $(allowed_of "$P1") but affctl pairs says '$state'"
                        grep -q "undo affinity task:$P1:.*effect check" "$RUNDIR/daemon.log" ||
                                fail "the pair was co-located, then its pin went, not by the effect check: $(allowed_of "$P1")"
                        echo "# try $try: co-located, then undone by the effect check before its state was read: '$state'"
                        undone=1
                        stop_pingpong
                        continue
                fi
                run=$(split_run_s "$PPOUT") same=$(mean_same_cpu "$PPOUT")
                echo "# try $try: not co-located; together for $same of its round trips, longest split run ${run}s; masks $(allowed_of "$P1")/$(allowed_of "$P2"); pair state: '$(pair_state "$P1" "$P2")'"
                pairs_json | jq -c '.pairs[]?' || true
                stop_pingpong
                awk -v m="$same" 'BEGIN { exit !(m < 0.95) }' && return 1
        done
        # merged by the kernel in every try but one the effect check undid:
        # not "the kernel kept it together", a co-location that did not hold
        [ -z "$undone" ] || return 3
        return 2
}

start_daemon "$cfg" --interval 500
SRC=$(ctl status --json | jq -r '.capabilities.wake_source // "?"')
echo "# wake source: $SRC"
wake_source_checked "$SRC"

# What co-location buys on this host, by hand, with the daemon already
# watching: the same pingpong pinned to one CPU and held split (masks a user
# narrowed, which the daemon leaves as set), 2 s each, three times,
# interleaved; the medians' ratio is the gain the rate check asks a quarter
# of. Measured beside the daemon so that both sides of the comparison pay
# for its wake-up sampling: under ASan on a 1.16x host the daemon's bursts
# cost a pair ~10 %, and a co-located rate measured with the daemon against a
# split rate measured without it read +1 % where the daemon's own check
# measured +13 %.
hand_rate() {   # hand_rate NAME ARGS... → the run's round trips/s
        "$PINGPONG" "${@:2}" --duration 2 >"$work/$1.out" 2>&1 || fail "pingpong $* failed"
        awk '/^rate=/ { sub("rate=", "", $1); print $1 + 0 }' "$work/$1.out"
}
# On one CPU both on CPU_A and on CPU_B: the daemon may choose either, and
# one vCPU can be the slower of a host's (a distcheck in CI: 68.5k on CPU 0
# by hand, 49.9k co-located by the daemon on CPU 1, where its own effect
# check read -11 % and undid it).
HAND_TOGETHER=() HAND_SPLIT=()
for i in 1 2 3; do
        HAND_TOGETHER+=("$(hand_rate "hand-one-$i" --pin "$CPU_A")" "$(hand_rate "hand-one1-$i" --pin "$CPU_B")")
        HAND_SPLIT+=("$(hand_rate "hand-split-$i" --cpus "$CPU_A,$CPU_B" --hold)")
done
# medians: a split run here read 42k and 58k back to back (CI rehearsal)
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
HAND_ONE=$(median "${HAND_TOGETHER[@]}")
HAND_TWO=$(median "${HAND_SPLIT[@]}")
GAIN=$(awk -v a="$HAND_ONE" -v b="$HAND_TWO" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
echo "# this host, by hand: ${HAND_ONE} round trips/s on one CPU, ${HAND_TWO}/s split: co-location buys ${GAIN}x (runs: ${HAND_TOGETHER[*]} / ${HAND_SPLIT[*]})"
# The gain is measurable here only if every run on one CPU, either CPU,
# beat every split run: on a 1.23x host the runs read 55-66k on one CPU and
# 49-57k split (a distcheck in CI), and a quarter of the gain was within
# that spread.
SLOWEST_ONE=$(printf '%s\n' "${HAND_TOGETHER[@]}" | sort -n | head -1)
FASTEST_SPLIT=$(printf '%s\n' "${HAND_SPLIT[@]}" | sort -n | tail -1)

# The pair's rate did not rise by a quarter of the gain measured by hand
# before the daemon started. On a shared host that gain comes and goes: in
# a rehearsal one vCPU ran a fifth slower than the other for minutes, and
# a pair pinned by the daemon on a CPU where hand runs had read 70-75k ran
# 52k for the seconds it was checked. So the hand runs are taken again now
# (the test's pair stopped meanwhile), on the CPU the daemon chose: only
# if they still show a gain beyond their spread is the daemon's pair
# failed. rate_not_risen BEFORE AFTER
rate_not_risen() {
        local cpu one=() two=() lo hi g
        # the CPU of the daemon's pin (it may have been undone since)
        cpu=$(grep -o "set affinity task:$P1:[0-9]* → [0-9]*" "$RUNDIR/daemon.log" | tail -1 | awk '{ print $NF }')
        [[ $cpu =~ ^[0-9]+$ ]] || cpu=$CPU_A
        kill -STOP "$P1" "$P2" 2>/dev/null || true
        for i in 1 2 3; do
                one+=("$(hand_rate "again-one-$i" --pin "$cpu")")
                two+=("$(hand_rate "again-split-$i" --cpus "$CPU_A,$CPU_B" --hold)")
        done
        kill -CONT "$P1" "$P2" 2>/dev/null || true
        lo=$(printf '%s\n' "${one[@]}" | sort -n | head -1)
        hi=$(printf '%s\n' "${two[@]}" | sort -n | tail -1)
        g=$(awk -v a="$(median "${one[@]}")" -v b="$(median "${two[@]}")" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        echo "# by hand again, now: on CPU $cpu ${one[*]}, split ${two[*]}: ${g}x"
        if awk -v g="$g" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(g < 1.10 || lo <= hi) }'; then
                echo "# premise not met: the host's gain went (${GAIN}x before the daemon, ${g}x now on CPU $cpu): rate not compared (split $1/s, co-located $2/s)"
                return 0
        fi
        fail "rate did not rise: split $1/s, co-located $2/s; by hand ${GAIN}x before and ${g}x now on CPU $cpu, want at least a quarter of that"
}

# What could not be checked because the kernel kept the pairs together by
# itself; if set, the test says so at its end (it passes: everything the
# daemon did was checked).
NOT_CHECKED=

# 1. split pair → co-located, state says so, faster
if colocate_pingpong pp; then
        state=$(pair_state "$P1" "$P2")
        echo "# co-located at t=${T_PIN}s: $(allowed_of "$P1") / state '$state'"
        [[ $state == co-located* ]] || fail "affctl pairs state '$state', want co-located"
        # bursts skipped before the pin (step 1f asks for more after it)
        SKIPS0=$(ctl status --json | jq '.capabilities.wake_sampler.bursts_skipped_settled // 0')
        # the first screen of affctl status names what it is changing
        ctl status >"$work/status.txt"
        grep -q "affinity task:$P1:.*pair: co-locate" "$work/status.txt" ||
                { cat "$work/status.txt"; fail "affctl status does not list the pin of $P1"; }
        # wait ~3 s of progress after the pin, then compare with the split windows before it
        t_end=$(awk -v t="$T_PIN" 'BEGIN { print t + 3 }')
        after_pin() { awk -v a="$(last_t "$PPOUT")" -v b="$t_end" 'BEGIN { exit !(a >= b) }'; }
        wait_for 10 after_pin || fail "pingpong stopped reporting"
        before=$(mean_rate "$PPOUT" split "$T_PIN")
        after=$(mean_rate "$PPOUT" after "$(awk -v t="$T_PIN" 'BEGIN { print t + 1 }')")
        echo "# round trips/s: split ${before}, co-located ${after} (by hand: ${HAND_TWO} split, ${HAND_ONE} on one CPU)"
        if [ "$before" -le 0 ]; then
                # the kernel kept it together until the pin: the split rate
                # to beat is the one measured by hand
                before=$(printf '%.0f' "$HAND_TWO")
                echo "# no split window before the pin: compared with the hand-measured split rate, ${before}/s"
        fi
        if [ "$before" -le 0 ]; then
                echo "# premise not met: no split rate measured; the rate was not compared"
        elif awk -v g="$GAIN" 'BEGIN { exit !(g < 1.10) }'; then
                echo "# premise not met: co-location buys ${GAIN}x on this host (< 1.10x): placement checked, rate not compared"
        elif awk -v a="$SLOWEST_ONE" -v b="$FASTEST_SPLIT" 'BEGIN { exit !(a <= b) }'; then
                echo "# premise not met: co-location buys ${GAIN}x here, within its runs' own spread (slowest on one CPU ${SLOWEST_ONE}, fastest split ${FASTEST_SPLIT}): placement checked, rate not compared"
        elif [ -n "${ASAN_OPTIONS:-}" ]; then
                # A sanitizer build's daemon, bursting at every pass while it
                # judges the pin, costs the pair it judges: its own effect
                # check read -12 % and -20 % on a 1.4-1.6x host where hand
                # runs beside the settled daemon read +40 % (CI rehearsals).
                # The ASan stage is for memory errors; the rate is checked
                # by the plain builds' runs, quiet and under load.
                echo "# sanitizer build (ASAN_OPTIONS set): placement checked, rate not compared (split ${before}/s, co-located ${after}/s)"
        else
                # at least a quarter of the gain that pinning by hand shows here (a third
                # failed by 10 round trips/s once: 50,687 against 50,697 on a 1.54x host)
                # (the daemon's own wake-up bursts cost a watched pair some;
                # a pair it did not co-locate shows none of the gain)
                awk -v a="$after" -v b="$before" -v g="$GAIN" 'BEGIN { exit !(a >= b * (1 + (g - 1) / 4)) }' ||
                        rate_not_risen "$before" "$after"
        fi
        # 1f. settled: the pin kept and nothing left to change, the wake-up
        # bursts thin out to one pass in 4 or fewer (affinityd(8)) and the pair stays
        # held. Looked at once a second: each look starts processes, and a
        # new process gets a burst of its own.
        if [[ $SRC == perf* ]]; then
                thinned() {
                        sleep 0.9
                        ctl status --json 2>/dev/null | jq -e --argjson s0 "$SKIPS0" '.capabilities.wake_sampler |
                                .burst_every >= 4 and .bursts_skipped_settled > $s0' >/dev/null
                }
                wait_for 20 thinned ||
                        { ctl status --json | jq .capabilities.wake_sampler >&2; fail "bursts did not thin out with the pair placed and kept"; }
                if ! single_cpu_same "$P1" "$P2"; then
                        # Let go by the effect check, not by the thinning: a
                        # pair the kernel already ran together (on a loaded
                        # machine it moves both away from the load) can do
                        # more there than pinned, and then the undo must
                        # agree with the pair's own rate (CI rehearsal under
                        # stress-ng: "split 6%" when pinned, undone at
                        # "250001 -> 197222 (-21 %)").
                        # A release for a second look placed again
                        # (placed_again) is held for 15 passes, or let go
                        # with the pair's own rate agreeing; not placed
                        # again, the release is judged as an undo.
                        if placed_again "$P1" "$P1" "$P2"; then
                                t_again=$(last_t "$PPOUT")
                                holds_for_passes 15 single_cpu_same "$P1" "$P2" ||
                                        judge_undo "the pair placed again after its look was let go" "$P1" "$PPOUT" \
                                                "$(awk -v t="$t_again" 'BEGIN { print (t > 5 ? t - 5 : 0) }')" "$t_again" "$(last_t "$PPOUT")"
                        else
                                judge_undo "the pair was let go while the bursts thinned out" "$P1" "$PPOUT" \
                                        "$(awk -v t="$T_PIN" 'BEGIN { print (t > 2 ? t - 2 : 0) }')" "$T_PIN" \
                                        "$(awk -v t="$T_PIN" 'BEGIN { print t + 2.5 }')"
                        fi
                fi
                echo "# settled: $(ctl status --json | jq -r --argjson s0 "$SKIPS0" '.capabilities.wake_sampler | "\(.source), \(.bursts_skipped_settled - $s0) bursts skipped since the pin"')"
        fi
stop_pingpong
else
        [ $? -eq 2 ] || fail "ping-pong pair split but never co-located (source $SRC)"
        NOT_CHECKED="co-location of a kernel-split pair and its rate"
fi

# 1b. a pair a user split on purpose (taskset-style narrowed masks) is respected
rm -f "$work/held.pids"
"$PINGPONG" --cpus "$CPU_A,$CPU_B" --hold --duration 30 --pid-file "$work/held.pids" >"$work/held.out" 2>&1 &
PP=$!; CHILDREN+=("$PP")
wait_for 10 test -s "$work/held.pids" || fail "held pingpong did not start"
{ read -r H1; read -r H2; } < "$work/held.pids"
# for 8 of the daemon's passes: well past Hysteresis=2
masks_as_set() { [ "$(allowed_of "$H1")" = "$CPU_A" ] && [ "$(allowed_of "$H2")" = "$CPU_B" ]; }
holds_for_passes 8 masks_as_set || fail "a user's narrowed masks were changed: $(allowed_of "$H1") / $(allowed_of "$H2")"
state=$(pair_state "$H1" "$H2")
[[ $state != co-located* ]] || fail "held pair shown as co-located"
echo "# user-split pair left as set (state '${state:-not listed}')"
stop_pingpong

# 1c. one member narrowed by someone else (a client that pins itself, as
# memcaslap does), the other free: the pinned one anchors the pair, the
# free one is moved onto its CPU, and the pinned one is never touched.
# The pin is held until the effect check's verdict, and an undo is judged
# by the pair's own rate (judge_undo): then the case is tried again, up to
# 3 times. Left split, it must be one the kernel kept together for all but
# a share no pin pays for here (split_share_pays): under load the kernel
# splits a freed member now and then for a quarter second, and at 1.5x
# such a split costs the pair under 1 %. The deadline is 25 s: the
# kernel splits such a pair in clumps seconds apart, and a settled
# daemon's bursts (one pass in 40 here) see a clump only when they fall in
# it. Beside stress-ng --cpu 2 --cpu-load 40 on a 2-CPU host this test's
# configuration co-located it 0.6-12.3 s after the free (10 starts with
# the daemon settled), before the free member's moves counted as a split
# (detect-pair.c, leaves_anchor(): since, 0.57-2.60 s in 4 starts with the
# shipped configuration); bench/anchored-start.sh times it.
anchored() { [ "$(allowed_of "$A2")" = "$CPU_A" ]; }
anchor_untouched() {
        [ "$(allowed_of "$A1")" = "$CPU_A" ] || fail "the anchor's mask was changed: $(allowed_of "$A1")"
        anchored
}
# A2's pin kept by the effect check, or let go (judged after)
verdict_or_let_go() { ! anchor_untouched || grep -qE "effect check: task:$A2:[0-9]+ kept" "$RUNDIR/daemon.log"; }
# anchor_try NAME → 0 co-located and kept; 2 the kernel kept the pair
# together (nothing to co-locate); 3 undone by the effect check, the pair's
# own rate agreeing; 4 undone, too soon to compare. Fails otherwise. Leaves
# the pingpong running.
anchor_try() {
        local state a_out=$work/$1.out a_free a_pin
        rm -f "$work/$1.pids"
        # until stopped: 1d below goes on with it, up to 60 s on a slow host
        "$PINGPONG" --cpus "$CPU_A,$CPU_B" --hold --duration 0 --report-interval 250 --pid-file "$work/$1.pids" >"$a_out" 2>&1 &
        PP=$!; CHILDREN+=("$PP")
        wait_for 10 test -s "$work/$1.pids" || fail "anchor pingpong did not start"
        { read -r A1; read -r A2; } < "$work/$1.pids"
        taskset -pc "$ORIG" "$A2" >/dev/null || fail "cannot free $A2"   # A1 stays on CPU_A
        a_free=$(last_t "$a_out")
        if ! wait_for 25 anchor_untouched; then
                # the kernel kept it together, from the window after the free on,
                # for all but a share no pin pays for here
                local share least
                share=$(split_share "$a_out" "$(awk -v f="$a_free" 'BEGIN { print f + 0.25 }')")
                least=$(split_share_pays "$GAIN")
                if awk -v s="$share" -v l="$least" 'BEGIN { exit !(s < l) }'; then
                        echo "# anchored pair left to the kernel: split for $share of its round trips after the free, a pin pays from $least at ${GAIN}x"
                        return 2
                fi
                pairs_json >&2 || true
                fail "a pair anchored on CPU $CPU_A stayed split: $(allowed_of "$A1") / $(allowed_of "$A2") (state '$(pair_state "$A1" "$A2")'), split for $share of its round trips after the free, where a pin pays from $least at ${GAIN}x"
        fi
        a_pin=$(last_t "$a_out")
        state=$(pair_state "$A1" "$A2")
        [[ $state == co-located* ]] || fail "anchored pair state '$state', want co-located"
        pairs_json | jq -e '[.pairs[] | select(.why | test("pinned there by someone else"))] | length >= 1' >/dev/null ||
                { pairs_json >&2; fail "affctl pairs does not say which member someone else pinned"; }
        # held until the verdict (5 intervals), the anchor never ours
        wait_for 10 verdict_or_let_go || fail "no effect check verdict on $A2's pin in 10 s: $(allowed_of "$A2")"
        if ! anchored && placed_again "$A2" "$A1" "$A2"; then
                a_pin=$(last_t "$a_out")
                wait_for 10 verdict_or_let_go || fail "no effect check verdict on $A2's pin, placed again, in 10 s: $(allowed_of "$A2")"
        fi
        if ! anchored; then
                judge_undo "anchored pair let go" "$A2" "$a_out" \
                        "$(awk -v f="$a_free" -v t="$a_pin" 'BEGIN { print (f + 0.5 > t - 2 ? f + 0.5 : t - 2) }')" \
                        "$a_pin" "$(last_t "$a_out")"
                [ "$UNDO_JUDGED" = 1 ] && return 3
                return 4
        fi
        echo "# anchored pair: $A2 moved to the anchor's CPU $CPU_A and kept, $A1 left as set"
        return 0
}
for try in 1 2 3; do
        rc=0; anchor_try "anchor-$try" || rc=$?
        [ "$rc" -eq 3 ] || [ "$rc" -eq 4 ] || break
        stop_pingpong
done
if [ "$rc" -eq 0 ]; then
        # 1d. whoever pinned the anchor puts it back while the pair still
        # ping-pongs: A1 joins our CPU, and A2's pin (kept: its verdict is
        # in) is never let go (a release would leave the pair split for
        # Cooldown=)
        taskset -pc "$ORIG" "$A1" >/dev/null || fail "cannot free $A1"
        joined() {
                [ "$(allowed_of "$A2")" = "$CPU_A" ] || fail "A2's pin was let go when the anchor was freed: $(allowed_of "$A2")"
                [ "$(allowed_of "$A1")" = "$CPU_A" ]
        }
        # within 12 passes: the detector finds the pair again first (a
        # slow host, ASan); passes counted, not seconds
        p_freed=$(passes) || fail "no pass count from the daemon"
        joined_or_12() { joined || passes_past $(( p_freed + 12 )); }
        { wait_for 60 joined_or_12 && joined; } || { pairs_json >&2 || true
                fail "the freed anchor $A1 did not join CPU $CPU_A within 12 passes: $(allowed_of "$A1")"; }
        pairs_json | jq -e --argjson a "$A1" '[.pairs[] | select((.tid_a == $a or .tid_b == $a) and (.why | test("joined")))] | length >= 1' >/dev/null ||
                { pairs_json >&2; fail "affctl pairs does not say the freed member joined"; }
        echo "# anchor let go: $A1 joined CPU $CPU_A beside $A2"
elif [ "$rc" -eq 2 ]; then
        NOT_CHECKED="${NOT_CHECKED:+$NOT_CHECKED; }co-location around an anchor (the kernel kept the pair together)"
elif [ "$rc" -eq 3 ] || [ "$rc" -eq 4 ]; then
        NOT_CHECKED="${NOT_CHECKED:+$NOT_CHECKED; }an anchored pin kept (undone by the effect check in 3 tries; the last $([ "$rc" -eq 3 ] && echo "with the pair's own rate agreeing" || echo "too soon to compare with the pair's own rate"))"
else
        fail "anchor_try returned $rc"
fi
stop_pingpong

# The masks of the threads $3... every 0.1 s into $1/masks.log, on the
# client's clock: when they were pinned, for judging an undo by the
# group's own round trips (group_undo_agrees). Sets MASKS to its PID.
log_masks() {
        local dir=$1
        shift
        while :; do
                local line
                line=$(date +%s.%N)
                # "-" for a thread gone: the columns stay in place (and set -e lets it be)
                for t in "$@"; do line+=" $(allowed_of "$t" 2>/dev/null || echo -)"; done
                echo "$line"
                sleep 0.1
        done >"$dir/masks.log" &
        MASKS=$!; CHILDREN+=("$MASKS")
}
# group_undo_agrees NAME DIR THREADS...: the effect check let go of a
# group (a chain, a fan) on one CPU; the undo must agree with the group's
# own round trips (the client's $DIR/client.out), its windows while a
# member was first pinned against those before (within the effect check's
# default tolerance, as judge_undo). A CI rehearsal under stress-ng: the
# python chain on one CPU beside the load, -28 % and -15 %.
group_undo_agrees() {
        local name=$1 dir=$2 kernel pinned
        shift 2
        read -r kernel pinned < <(awk '
                NR == FNR { p = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) p = 1
                            if (p && !t_pin) t_pin = $1
                            if (!p && t_pin && !t_undo) t_undo = $1
                            if (!t0) t0 = $1
                            next }
                /^t=/ { split($1, a, "="); split($2, b, "="); t = a[2] + 0; r = b[2] + 0
                        if (t >= t0 + 0.5 && t < t_pin) { ks += r; kn++ }
                        if (t_pin && t >= t_pin + 0.25 && (!t_undo || t < t_undo)) { ps += r; pn++ } }
                END { printf "%.0f %.0f\n", kn ? ks / kn : 0, pn ? ps / pn : 0 }' "$dir/masks.log" "$dir/client.out")
        echo "# the effect check undid the $name's co-location: $(grep -E "undo affinity task:($(IFS='|'; echo "$*")):" "$RUNDIR/daemon.log" | tail -1 | sed 's/.*effect check: //')"
        echo "# the $name's own round trips/s: ${kernel} before the first pin, ${pinned} pinned"
        awk -v k="$kernel" -v p="$pinned" 'BEGIN { exit !(k > 0 && p > 0 && p < k * 1.10) }' ||
                fail "the effect check undid a $name's co-location that raised its own rate (${kernel} -> ${pinned} round trips/s)"
}
running() { grep -q fifo-pingpong "/proc/$1/cmdline" 2>/dev/null; }
# group_placed NAME DIR TID THREADS...: 0 when the threads of a group
# (a chain, a fan; TID one of them in each of its pairs) are all on one
# CPU within 15 s. Else 1, and it says why where that is no failure: the
# kernel kept the group together (every pair of TID watched as together,
# or one of them ours),
# the detector found a fan too busy for one CPU here (a hub), or
# the effect check undid it and the group's own rate agrees.
group_placed() {
        local name=$1 dir=$2 tid=$3
        shift 3
        wait_for 15 one_cpu_all "$@" && return 0
        # every link of TID the kernel's together, or ours: a chain whose
        # stronger pair we hold and whose third the kernel keeps beside it
        # (split 0 %, where a pin pays from 0.5 %) is left as the rule says
        if pairs_json | jq -e --argjson p "$tid" '[.pairs[] | select(.tid_a == $p or .tid_b == $p)]
                        | any(.state == "watching" and (.why | startswith("together")))
                          and all((.state == "watching" and (.why | startswith("together"))) or .state == "co-located")' >/dev/null; then
                NOT_CHECKED="${NOT_CHECKED:+$NOT_CHECKED; }a $name (the kernel kept it together)"
        elif pairs_json | jq -e --argjson p "$tid" '[.pairs[] | select(.tid_a == $p or .tid_b == $p)]
                        | length >= 1 and all(.state == "left alone: hub" and (.note | startswith("fan: ")))' >/dev/null; then
                # its three threads together over MaxCombinedUtil= on this host now (the detector's rule)
                NOT_CHECKED="${NOT_CHECKED:+$NOT_CHECKED; }a $name ($(pairs_json | jq -r --argjson p "$tid" \
                        '[.pairs[] | select(.tid_a == $p or .tid_b == $p) | .note][0]'))"
        elif grep -Eq "undo affinity task:($(IFS='|'; echo "$*")):.*effect check" "$RUNDIR/daemon.log"; then
                group_undo_agrees "$name" "$dir" "$@"
        else
                pairs_json >&2 || true
                fail "a $name was not put on one CPU: $(for t; do printf '%s / ' "$(allowed_of "$t" 2>/dev/null)"; done)"
        fi
        return 1
}
one_cpu_all() {   # the threads all allowed on exactly one, the same, CPU
        local c t
        c=$(allowed_of "$1") || return 1
        [[ $c =~ ^[0-9]+$ ]] || return 1
        for t in "${@:2}"; do [ "$(allowed_of "$t" 2>/dev/null)" = "$c" ] || return 1; done
}

# 1e. a chain: a client, a proxy and the proxy's backend (FIFOs, three
# python processes), started split (the proxy on CPU_B, the others on CPU_A):
# the stronger pair is co-located and the third joins it, all on one CPU
CH=$work/chain
mkdir "$CH" && mkfifo "$CH/c2p" "$CH/p2c" "$CH/p2b" "$CH/b2p"
taskset -c "$CPU_A" /usr/bin/python3 "$top_srcdir/tests/fifo-pingpong.py" echo "$CH/p2b" "$CH/b2p" &
C3=$!; CHILDREN+=("$C3")
taskset -c "$CPU_B" /usr/bin/python3 "$top_srcdir/tests/fifo-pingpong.py" proxy "$CH/c2p" "$CH/p2c" "$CH/b2p" "$CH/p2b" &
C2=$!; CHILDREN+=("$C2")
FIFO_PINGPONG_REPORT=0.25 taskset -c "$CPU_A" /usr/bin/python3 "$top_srcdir/tests/fifo-pingpong.py" client "$CH/p2c" "$CH/c2p" \
        >"$CH/client.out" &
C1=$!; CHILDREN+=("$C1")
wait_for 5 running "$C1" && wait_for 5 running "$C2" && wait_for 5 running "$C3" || fail "the chain did not start"
sleep 0.3
# Released whole: each taskset is a new process, which brings the daemon's
# pass forward, and a pass between two of them sees a member still pinned
# (by "someone else") and anchors the pair to it (a fan under stress-ng:
# its client placed beside one echo thread the test had not released yet,
# then let go with it once it was).
daemon_freeze
for p in "$C1" "$C2" "$C3"; do taskset -pc "$ORIG" "$p" >/dev/null; done
daemon_thaw
log_masks "$CH" "$C1" "$C2" "$C3"
if group_placed chain "$CH" "$C2" "$C1" "$C2" "$C3"; then
        pairs_json | jq -e --argjson p "$C2" '[.pairs[] | select((.tid_a == $p or .tid_b == $p) and .state == "co-located")] | length == 2' >/dev/null ||
                { pairs_json >&2; fail "the chain is on one CPU, but affctl pairs does not list both links co-located"; }
        echo "# chain: client $C1, proxy $C2 and backend $C3 on CPU $(allowed_of "$C1")"
fi
kill "$C1" "$C2" "$C3" "$MASKS" 2>/dev/null || true

# 1g. a fan: one client alternating between two threads of one echo
# process (a pgbench thread and its two backends), started split (the
# client on CPU_A, the echo threads on CPU_B): the detector finds a fan, and
# all three go to one CPU in one pass, never the client with one of them
# alone: the masks, looked at every 0.1 s, never show the client held
# with one echo thread and the other elsewhere twice in a row.
FN=$work/fan
mkdir "$FN" && mkfifo "$FN/c2s1" "$FN/s2c1" "$FN/c2s2" "$FN/s2c2"
taskset -c "$CPU_B" /usr/bin/python3 "$top_srcdir/tests/fifo-pingpong.py" echo2 "$FN/c2s1" "$FN/s2c1" "$FN/c2s2" "$FN/s2c2" &
F2=$!; CHILDREN+=("$F2")
# a later start than the echo process's, by a clock tick or more: the client by start times
sleep 0.05
FIFO_PINGPONG_REPORT=0.25 taskset -c "$CPU_A" /usr/bin/python3 "$top_srcdir/tests/fifo-pingpong.py" fan "$FN/s2c1" "$FN/c2s1" \
        "$FN/s2c2" "$FN/c2s2" >"$FN/client.out" &
F1=$!; CHILDREN+=("$F1")
wait_for 5 running "$F1" && wait_for 5 running "$F2" || fail "the fan did not start"
two_echo_threads() { [ "$(ls "/proc/$F2/task" 2>/dev/null | grep -vcx "$F2")" -ge 2 ]; }
wait_for 5 two_echo_threads || fail "the fan's echo process did not start its two threads"
mapfile -t ECHO_TIDS < <(ls "/proc/$F2/task" | grep -vx "$F2")
E1=${ECHO_TIDS[0]} E2=${ECHO_TIDS[1]}
sleep 0.3
daemon_freeze   # released whole, as the chain
taskset -apc "$ORIG" "$F2" >/dev/null
taskset -pc "$ORIG" "$F1" >/dev/null
daemon_thaw
log_masks "$FN" "$F1" "$E1" "$E2"
if group_placed fan "$FN" "$F1" "$F1" "$E1" "$E2"; then
        pairs_json | jq -e --argjson p "$F1" '[.pairs[] | select((.tid_a == $p or .tid_b == $p) and .state == "co-located"
                and (.note | startswith("fan of 2")))] | length == 2' >/dev/null ||
                { pairs_json >&2; fail "the fan is on one CPU, but affctl pairs does not list both its pairs co-located as a fan"; }
        # never half a fan: two looks in a row (one may fall between the
        # pass's three SETs) with the client and one echo thread on a CPU of their own
        awk '{ run = ($2 ~ /^[0-9]+$/ && (($3 == $2) != ($4 == $2))) ? run + 1 : 0; if (run >= 2) bad = 1 }
             END { exit bad }' "$FN/masks.log" ||
                { cat "$FN/masks.log" >&2; fail "the fan's client was held with one echo thread without the other"; }
        echo "# fan: client $F1 and echo threads $E1 $E2 on CPU $(allowed_of "$F1")"
fi
kill "$F1" "$F2" "$MASKS" 2>/dev/null || true

# 2. a stream pair (both sides busy) is left alone, or undone by the effect check
rm -f "$work/st.pids"
"$STREAM" --cpus "$CPU_A,$CPU_B" --duration 30 --work-us 20 --jitter 50 --report-interval 250 --pid-file "$work/st.pids" >"$work/st.out" 2>&1 &
ST=$!; CHILDREN+=("$ST")
wait_for 10 test -s "$work/st.pids" || fail "stream did not start"
{ read -r S1; read -r S2; } < "$work/st.pids"
# The detector's rules for a stream: MaxCombinedUtil= (the policy's 120 %:
# what its two sides get together on this machine now, measured here from
# their own run times), reads and writes a switch, and wake-ups unanswered
# before the next (affinityd.policy(5)). On a loaded machine a stream's
# sides are squeezed under the first and may pass the others in some
# passes: the detector may then co-locate it, and the effect check, which judges a pair by the bytes it
# moves through read()/write(), must undo that when it moves fewer (its
# switches go up). Where the kernel kept it mostly together anyway, one
# CPU costs it nothing and the change may stay: the stream's own message
# rate, before and after, says which.
# The daemon is stopped (SIGSTOP) while the stream is measured, split as
# the kernel placed it: it cannot co-locate it halfway through. 3 s: the
# stream's rate split, the baseline below, over the load's on/off slices
# (stress-ng's are up to 0.5 s; one second of it read 15-25k messages/s).
daemon_freeze
t_a=$(last_t "$work/st.out")
cpu_pct_over "$S1" 3 >"$work/s1.pct" & cpu_pct_over "$S2" 3 >"$work/s2.pct"; wait $!
t_b=$(last_t "$work/st.out")
daemon_thaw
stream_util=$(awk -v a="$(cat "$work/s1.pct")" -v b="$(cat "$work/s2.pct")" 'BEGIN { printf "%.0f", a + b }')
if [ "$stream_util" -lt 120 ]; then
        echo "# the stream's two sides get ${stream_util} % of a CPU together here, under MaxCombinedUtil=120 %: the detector may take it for a ping-pong"
fi
stream_together() { single_cpu_same "$S1" "$S2"; }
stream_back() { [ "$(allowed_of "$S1")" = "$ORIG" ] && [ "$(allowed_of "$S2")" = "$ORIG" ]; }
st_rate() {   # st_rate FILE FROM TO: the stream's mean messages/s over its progress lines in [FROM, TO) s
        awk -v lo="$2" -v hi="$3" '/^t=/ { split($1, a, "="); split($2, b, "="); t = a[2] + 0
                if (t >= lo && t < hi) { s += b[2]; n++ } } END { if (n) printf "%.0f", s / n; else print 0 }' "$1"
}
# Judged by what it gets done: whatever the detector makes of it (the kernel
# may also merge it between the measurement above and the daemon's look), a
# stream on one CPU must be undone by the effect check, or be no slower.
# (looked at once more after the wait: the pin may land just after it)
if wait_for 10 stream_together || stream_together; then
        t_co=$(last_t "$work/st.out")
        echo "# stream co-located at t=${t_co}s ('$(pair_state "$S1" "$S2")'); waiting for the effect check"
        # 5 samples after the one that straddles the change, at Interval=500ms
        if wait_for 15 stream_back; then
                grep -E 'undo' "$RUNDIR/daemon.log" | tail -1 | sed 's/^/# /'
                echo "# stream undone by the effect check: $(allowed_of "$S1") / $(allowed_of "$S2")"
        else
                # kept: then it must not be much slower than split (the 3 s
                # measured above) over the span the check judged: the 3 s after
                # the pin (the sample that straddles it and 5 more at
                # Interval=500ms); later the load may move onto its CPU, which
                # no check of one change foresees. How much slower: the
                # daemon's "before" is the mean of its windows before the pin,
                # and here, right after the daemon was stopped, that can be one
                # window (300-500 ms), which the load's slices move by +-15 %
                # (one stream's read 1.0-1.45e6 bytes/s, co-located 1.1-1.25e6
                # in every pass); its tolerance is 10 %: a stream it keeps may
                # have lost up to 25 % under this load; one that lost more was
                # misjudged. (On a quiet machine the detector
                # leaves the stream alone: its sides take over MaxCombinedUtil=.)
                # Like with like: the effect check compares one CPU with the
                # kernel's placement while the daemon watches, and so does
                # this, where the stream ran at least 1 s between the daemon's
                # restart and the pin. Under ASan the watching daemon cost the
                # split stream two thirds of its rate (35,883 messages/s with
                # it stopped; the check's before read a third of that), and
                # one CPU then beat the split it judged.
                # A pin within 2 s of the restart leaves no second of that to
                # measure: the CI's ASan run read 30,399 messages/s with the
                # daemon stopped, 18.4k in the daemon's before (its bytes/s
                # over 65 bytes a message) and 19,340 pinned, the pin under
                # 1 s after the restart, where a progress line or two (each
                # the ~250 ms before it, the first partly the stopped time)
                # is all there is. Then the stream is split again by hand,
                # as the kernel had it, and measured so with the daemon
                # watching (it lets go of a pair someone else changed; one
                # it places again meanwhile is not measured).
                st_before=$(st_rate "$work/st.out" "$t_a" "$t_b")
                st_after=$(st_rate "$work/st.out" "$t_co" "$(awk -v t="$t_co" 'BEGIN { print t + 3 }')")
                if awk -v t0="$t_b" -v t1="$t_co" 'BEGIN { exit !(t1 - t0 >= 2) }'; then
                        w_from=$(awk -v t="$t_b" 'BEGIN { print t + 0.5 }') w_to=$(awk -v t="$t_co" 'BEGIN { print t - 0.5 }')
                        st_watched=$(st_rate "$work/st.out" "$w_from" "$w_to")
                        w_how="between the restart and the pin"
                else
                        taskset -pc "$ORIG" "$S1" >/dev/null && taskset -pc "$ORIG" "$S2" >/dev/null ||
                                fail "could not split the kept stream again by hand"
                        w_from=$(awk -v t="$(last_t "$work/st.out")" 'BEGIN { print t + 0.5 }')
                        sleep 3
                        w_to=$(last_t "$work/st.out")
                        st_watched=$(st_rate "$work/st.out" "$w_from" "$w_to")
                        w_how="split again by hand after the verdict"
                        stream_back || { st_watched=0; w_how="split by hand, but placed again within 3 s"; }
                fi
                echo "# stream kept co-located: ${st_before} messages/s split (3 s, daemon stopped), ${st_watched} split with the daemon watching (t=${w_from}-${w_to} s, ${w_how}; 0: not measured), ${st_after} in the 3 s after the pin"
                grep -E "effect check: task:$S1:" "$RUNDIR/daemon.log" | tail -1 | sed 's/^/# /' || true
                base=$st_before
                if [ "$st_watched" -gt 0 ]; then
                        base=$st_watched
                        awk -v w="$st_watched" -v b="$st_before" 'BEGIN { exit !(w < 0.75 * b) }' &&
                                echo "# note: the watching daemon cost the split stream $(awk -v w="$st_watched" -v b="$st_before" 'BEGIN { printf "%.0f", 100 * (1 - w / b) }') % of its rate"
                fi
                awk -v a="$st_after" -v b="$base" 'BEGIN { exit !(b > 0 && a >= 0.75 * b) }' ||
                        fail "a stream co-located by mistake runs slower (${base} -> ${st_after} messages/s) and was not undone within 15 s"
        fi
else
        echo "# stream pair left alone for 10 s: '$(pair_state "$S1" "$S2")'"
        # not on one CPU; a mask of another shape would be no pin of a pair at all
        stream_back || stream_together ||
                fail "stream pair's masks changed: $(allowed_of "$S1") / $(allowed_of "$S2")"
fi
kill -TERM "$ST" 2>/dev/null || true; wait "$ST" 2>/dev/null || true

# 3. stop the daemon → the co-located pair's masks are restored
if colocate_pingpong stop; then
        echo "# second pair co-located on $(allowed_of "$P1"); stopping the daemon"
        stop_daemon
        [ "$(allowed_of "$P1")" = "$ORIG" ] && [ "$(allowed_of "$P2")" = "$ORIG" ] ||
                fail "masks not restored on stop: $(allowed_of "$P1") / $(allowed_of "$P2"), want $ORIG"
        echo "# restored on stop: $(allowed_of "$P1") / $(allowed_of "$P2")"
        stop_pingpong
else
        [ $? -eq 2 ] || fail "second ping-pong pair split but never co-located"
        NOT_CHECKED="${NOT_CHECKED:+$NOT_CHECKED, }restore on stop"
        stop_daemon
fi

# 4. the fallback (--no-perf) finds and co-locates the pair too, and never
#    shows a pair as "split 0%" (it says "unknown" when it cannot tell)
start_daemon "$cfg" --interval 500 --no-perf
SRC=$(ctl status --json | jq -r '.capabilities.wake_source // "?"')
echo "# --no-perf wake source: $SRC"
[[ $SRC == fallback:* ]] || fail "--no-perf: wake source '$SRC', want fallback:..."
if colocate_pingpong fb; then
        echo "# fallback: co-located on $(allowed_of "$P1"): $(pairs_json | jq -r --argjson a "$P1" '[.pairs[] | select(.tid_a == $a or .tid_b == $a) | .why][0]')"
        stop_pingpong
else
        [ $? -eq 2 ] || fail "fallback source: ping-pong pair split but never co-located"
        NOT_CHECKED="${NOT_CHECKED:+$NOT_CHECKED, }co-location with the fallback source"
fi
! grep -q 'split 0%' "$RUNDIR/daemon.log" || fail "the fallback logged 'split 0%'"
pairs_json | jq -e '[.pairs[] | select(.split_basis != "wakeups" and .split_fraction != null)] | length == 0' >/dev/null ||
        fail "the fallback reported a split_fraction it did not measure"
stop_daemon
# Not a skip: everything the daemon did was checked; what had nothing to
# act on (the kernel kept the pair together all along, or a pin that
# bought nothing on a loaded machine) is said.
[ -z "$NOT_CHECKED" ] || echo "# premise not met: the kernel kept these pairs together by itself (a loaded machine does), so the daemon had nothing to co-locate or keep: $NOT_CHECKED"
echo "# ok"
