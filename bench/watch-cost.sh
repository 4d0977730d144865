#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/watch-cost.sh: what the daemon's watching costs the requests of a
# client at a fixed rate, measured inside one run, so that the host's own
# jitter (on a shared VM it moves a 30 s run's p99 from 120 to 800 µs
# from one minute to the next, with no daemon) cancels out.
#
# Redis on a unix socket and bench/rate-client 'GET k' at --rate requests/s
# (open loop, one connection), beside a daemon in --dry-run (it watches and
# changes nothing) at --log-level debug, whose line a pass says when the
# pass and the last wake-up burst ran (boot time, the clock of the client's
# --trace). Each request is put in one class:
#
#   burst   it was in flight while the wake-up sampler's events were on
#   pass    within 2 ms of a pass (reading /proc, deciding): the daemon on a CPU
#   other   neither: what the client sees of the host itself
#
# The figure is the run's p99 over the p99 of its "other" requests: how
# much higher the tail is for the requests the watching touched being in
# it (1.00: not at all). A stock run (no daemon) is interleaved before or
# after each daemon run, for the p99 the host gave then.
#
#   bash bench/watch-cost.sh [--repeats N] [--duration S] [--rate R]
#                            [--other BINARY] [BUILDDIR]
#
# --other: a second daemon binary (another commit's build), run the same
# way in each repeat, side by side. As root, holding the machine alone (no
# other affinityd). Needs redis-server, redis-tools and gawk.
set -euo pipefail
export LC_ALL=C
REPEATS=5 DURATION=30 RATE=2000 SETTLE=3 OTHER=
while [[ $# -gt 0 ]]; do
        case $1 in
        --repeats) REPEATS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --rate) RATE=$2; shift ;;
        --other) OTHER=$2; shift ;;
        -h|--help) sed -n '3,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
        -*) echo "watch-cost.sh: unknown option '$1'" >&2; exit 2 ;;
        *) break ;;
        esac
        shift
done
B=${1:-.}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
[[ -x $B/affinityd && -x $B/bench/rate-client ]] ||
        { echo "watch-cost.sh: $B/affinityd or $B/bench/rate-client not found (give the build tree)" >&2; exit 2; }
[[ -z $OTHER || -x $OTHER ]] || { echo "watch-cost.sh: --other $OTHER is not an executable" >&2; exit 2; }
{ command -v redis-server && command -v redis-cli; } >/dev/null ||
        { echo "watch-cost.sh: needs redis-server and redis-cli (apt-get install redis-server redis-tools)" >&2; exit 2; }
# asort(): gawk's (Debian's default awk may be mawk)
command -v gawk >/dev/null || { echo "watch-cost.sh: needs gawk (apt-get install gawk)" >&2; exit 2; }
[[ $(id -u) = 0 ]] || { echo "watch-cost.sh: run as root" >&2; exit 2; }

# redis_start, servers_stop: the private Redis of bench/servers.sh
. "$SRCDIR/tests/servers-lib.sh"
WORK=$(mktemp -d /tmp/affd-watch.XXXXXX)
DPID=''
cleanup() {
        [[ -z $DPID ]] || { kill -TERM "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; }
        servers_stop
        rm -rf "$WORK"
}
trap cleanup EXIT

redis_start "$WORK" "$WORK" || { echo "watch-cost.sh: Redis did not start" >&2; exit 1; }
redis-cli -s "$RDS_SOCK" set k v >/dev/null

# start_daemon BINARY LOG: a --dry-run daemon on the shipped policies, up
# (its "running:" line, after its calibration) within 20 s, then SETTLE s
start_daemon() {
        rm -rf "$WORK/rt"
        mkdir -p "$WORK/rt"
        "$1" --runtime-dir "$WORK/rt" --config-dir "$SRCDIR/policies" --dry-run --log-level debug > "$2" 2>&1 &
        DPID=$!
        for _ in $(seq 200); do
                grep -q "running:" "$2" && break
                kill -0 "$DPID" 2>/dev/null || { echo "watch-cost.sh: the daemon exited:" >&2; cat "$2" >&2; exit 1; }
                sleep 0.1
        done
        grep -q "running:" "$2" || { echo "watch-cost.sh: the daemon did not start in 20 s" >&2; exit 1; }
        sleep "$SETTLE"
}

stop_daemon() {
        kill -TERM "$DPID" 2>/dev/null || { echo "watch-cost.sh: the daemon died during the run:" >&2; cat "$1" >&2; exit 1; }
        wait "$DPID" || true
        DPID=''
}

# attribute LOG TRACE: "p99 p99_other burst_share pass_share p50_burst p50_other p99_burst p99_pass"
# (shares in %, latencies in µs; a LOG of /dev/null: no windows, every request "other")
attribute() {
        gawk '
        FILENAME == ARGV[1] {
                if (match($0, /pass [0-9]+ at [0-9.]+-[0-9.]+/)) {
                        split(substr($0, RSTART, RLENGTH), a, /[ -]/)
                        np++; ps[np] = a[4] - 0.002; pe[np] = a[5] + 0.002
                }
                if (match($0, /last burst [0-9.]+-[0-9.]+/)) {
                        split(substr($0, RSTART + 11, RLENGTH - 11), b, "-")
                        if (!(b[1] in seen)) { seen[b[1]] = 1; nb++; bs[nb] = b[1]; be[nb] = b[2] }
                }
                next
        }
        function q(arr, m, f) { return m ? arr[int(m * f) + 1] : 0 }
        {
                t = $1; te = t + $2 / 1e6; c = "other"
                # windows come in time order: skip those that ended before this request
                while (ib < nb && be[ib + 1] < t) ib++
                while (ip < np && pe[ip + 1] < t) ip++
                if (ib < nb && bs[ib + 1] <= te) c = "burst"
                else if (ip < np && ps[ip + 1] <= te) c = "pass"
                all[++n] = $2; k[c]++; v[c, k[c]] = $2
        }
        END {
                asort(all)
                for (c in k) { delete s; for (i = 1; i <= k[c]; i++) s[i] = v[c, i]; asort(s)
                               p50[c] = q(s, k[c], 0.5); p99[c] = q(s, k[c], 0.99) }
                printf "%.1f %.1f %.2f %.2f %.1f %.1f %.1f %.1f\n", q(all, n, 0.99), p99["other"],
                       100 * k["burst"] / n, 100 * k["pass"] / n, p50["burst"], p50["other"], p99["burst"], p99["pass"]
        }' "$1" "$2"
}

one_run() {   # one_run VARIANT REPEAT
        local v=$1 i=$2 log=/dev/null bin=
        case $v in
        dryrun) bin=$B/affinityd ;;
        other) bin=$OTHER ;;
        esac
        if [[ -n $bin ]]; then
                log=$WORK/$v.$i.log
                start_daemon "$bin" "$log"
        fi
        "$B/bench/rate-client" --unix "$RDS_SOCK" --rate "$RATE" --duration "$DURATION" \
                --trace "$WORK/$v.$i.trace" 'GET k' > "$WORK/$v.$i.out"
        [[ -z $bin ]] || stop_daemon "$log"
        printf "%s %s %s\n" "$v" "$i" "$(attribute "$log" "$WORK/$v.$i.trace")" | tee -a "$WORK/runs"
}

VARIANTS=(stock dryrun)
[[ -z $OTHER ]] || VARIANTS+=(other)
echo "# redis GET at $RATE/s, $DURATION s a run, $REPEATS repeats; $(nproc) CPUs, $(uname -r)"
echo "# variant repeat p99 p99_other burst_% pass_% p50_burst p50_other p99_burst p99_pass (µs)"
for ((i = 1; i <= REPEATS; i++)); do
        n=${#VARIANTS[@]}
        for ((j = 0; j < n; j++))
                do one_run "${VARIANTS[(i + j) % n]}" "$i"; done
done
echo
gawk '
function med(x, m,   s, i) { for (i = 1; i <= m; i++) s[i] = x[i]; asort(s); return m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2 }
{ m = ++n[$1]; p99[$1, m] = $3; cost[$1, m] = $4 > 0 ? $3 / $4 : 0; bsh[$1, m] = $5; psh[$1, m] = $6
  shift[$1, m] = $8 > 0 ? $7 / $8 : 0; if (!($1 in order)) { order[$1] = ++nv; name[nv] = $1 } }
END {
        printf "%-7s %9s %22s %9s %9s %20s\n", "variant", "p99 (µs)", "p99 / p99 of the rest", "burst %", "pass %", "p50 in bursts / rest"
        for (j = 1; j <= nv; j++) {
                v = name[j]; m = n[v]
                for (i = 1; i <= m; i++) { a[i] = p99[v, i]; c[i] = cost[v, i]; b[i] = bsh[v, i]; p[i] = psh[v, i]; s[i] = shift[v, i] }
                if (v == "stock")
                        printf "%-7s %9.0f %22s %9s %9s %20s\n", v, med(a, m), "-", "-", "-", "-"
                else
                        printf "%-7s %9.0f %22.3f %9.2f %9.2f %20.3f\n", v, med(a, m), med(c, m), med(b, m), med(p, m), med(s, m)
        }
        print "(medians over the repeats; the p99 ratio is within each run, so the host'"'"'s jitter cancels)"
}' "$WORK/runs"
