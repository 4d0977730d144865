#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run-in-vm.sh <share-dir> <command...> - run a command as root inside the
# affinityd test VM (Debian 12, systemd 252 as PID 1, cgroup v2, kernel 6.1,
# 2 vCPUs under TCG) and exit with its exit code.
#
#   tests/vm/run-in-vm.sh /tmp/share 'uname -r; systemctl is-system-running'
#
# - <share-dir> is shared read-write over 9p and mounted at /mnt/share in the
#   guest; the command runs with bash there, cwd /mnt/share, env
#   AFFINITYD_VM_SHARE=/mnt/share. Its stdout+stderr are streamed here live.
#   The arguments are joined with spaces ("$*"): pass one quoted string for
#   pipelines and &&.
# - The root disk is booted snapshot=on: every run starts from the pristine
#   image; only files written under /mnt/share survive the run.
# - Exit code: the command's own; 124 = AFFINITYD_VM_TIMEOUT hit; 125 = harness
#   failure (no exit code came back); 126 = the guest never started the
#   command within AFFINITYD_VM_BOOT_TIMEOUT (a boot that hung: qemu is
#   killed then, not left to eat the whole lifetime); 127 = the guest froze
#   after it started the command (no heartbeat for
#   AFFINITYD_VM_FREEZE_TIMEOUT s). On 124-127 the console log tail is
#   printed.
# - AFFINITYD_VM_SAVE=dir: the guest's output, console log and boot info are
#   copied there (output.txt, console.txt, boot-info.txt) whatever the exit,
#   so a caller can print them in its own summary, and watchdog.txt says
#   "boot-hung" or "froze" when exit 126 or 127 was the watchdog's (empty
#   when it was the command's own).
#
# The image comes from build-image.sh (called here; a no-op when cached).
#
# Env knobs:
#   AFFINITYD_VM_IMAGE=dir    use this image dir, skip build-image.sh
#   AFFINITYD_VM_CACHE=dir    cache dir (see build-image.sh); run dirs go in <cache>/runs
#   AFFINITYD_VM_TIMEOUT=900  seconds for the whole VM lifetime
#   AFFINITYD_VM_BOOT_TIMEOUT=180
#                             seconds until the guest must have started the
#                             command (measured: 14 s of guest uptime, 20-40 s
#                             of wall time, at 2 and at 8 vCPUs)
#   AFFINITYD_VM_FREEZE_TIMEOUT=150
#                             seconds without the guest's heartbeat (every
#                             10 s while the command runs, from a shell of
#                             its own: a hung check does not stop it) until
#                             the guest counts as frozen
#   AFFINITYD_VM_SMP=2 AFFINITYD_VM_MEM=2G
#                             SMP is qemu's -smp value, so a topology works:
#                             AFFINITYD_VM_SMP=8,sockets=2,cores=2,threads=2
#   AFFINITYD_VM_CPU=max      qemu's -cpu model; with threads=2 use max,+topoext
#                             (see below)
#   AFFINITYD_VM_NUMA=N       N NUMA nodes (default none): the vCPUs in qemu's
#                             order (socket, core, thread) and the memory split
#                             evenly, node 0 the first CPUs; N must divide both
#   AFFINITYD_VM_APPEND=...   extra kernel command line
#   AFFINITYD_VM_KEEP=1       keep the run dir (cmd, output, rc, console.log, boot-info)
#   Debug a hung run by hand: the serial console is a socket (root, no password):
#     socat -,raw,echo=0 UNIX-CONNECT:<rundir>/console.sock
#
# Measured here (2-CPU host, TCG): the command starts ~20 s after qemu starts;
# CPU-bound code runs ~10x slower than on the host, so test function, not speed.
set -euo pipefail

log() { printf 'run-in-vm: %s\n' "$*" >&2; }

[ $# -ge 2 ] || { echo "usage: $0 <share-dir> <command...>" >&2; exit 2; }
SHARE=$(cd "$1" && pwd) || { log "no such dir: $1"; exit 125; }
shift
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${AFFINITYD_VM_CACHE:-/var/tmp/affinityd-vmtest}

if [ -n "${AFFINITYD_VM_IMAGE:-}" ]; then
    IMG=$AFFINITYD_VM_IMAGE
else
    IMG=$(bash "$HERE/build-image.sh") || { log "build-image.sh failed"; exit 125; }
fi
for f in rootfs.img vmlinuz initrd.img complete; do
    [ -e "$IMG/$f" ] || { log "incomplete image dir $IMG (no $f)"; exit 125; }
done
command -v qemu-system-x86_64 >/dev/null || { log "qemu-system-x86_64 missing: run build-image.sh as root"; exit 125; }

# Per-run dir, shared with the guest as the control dir (9p tag "affctl").
# The console socket lives in it and sun_path holds at most 107 bytes: with a
# long cache path, fall back to a short dir in /tmp.
mkdir -p "$CACHE/runs"
RUN=$(mktemp -d "$CACHE/runs/run.XXXXXX")
if [ ${#RUN} -gt 80 ]; then
    rmdir "$RUN"
    RUN=$(mktemp -d /tmp/affvm.XXXXXX)
fi
chmod 755 "$RUN"
# The command, beside a heartbeat: the guest touches $RUN/heartbeat every
# HEARTBEAT_EVERY s while it runs, from its own shell, so a check that hangs
# does not stop it; only a guest that stopped as a whole does (see the
# freeze watchdog below).
# The command runs in a bash of its own (cmd.user): its `wait`, `$!`, `exit`
# or `set -e` are its own business, not the heartbeat's.
HEARTBEAT_EVERY=10
printf '%s\n' "$*" > "$RUN/cmd.user"
{
    printf '( while :; do : > /run/affvm/heartbeat; sleep %s; done ) &\n' "$HEARTBEAT_EVERY"
    printf 'beat=$!\n'
    printf 'bash /run/affvm/cmd.user; rc=$?\n'
    printf 'kill "$beat" 2>/dev/null; exit "$rc"\n'
} > "$RUN/cmd"
: > "$RUN/output"
# snapshot=on puts its temporary overlay in $TMPDIR: keep it in the run dir
# so it goes away with it.
export TMPDIR=$RUN

QPID='' TAILPID=''
cleanup() {
    [ -n "$QPID" ] && kill "$QPID" 2>/dev/null
    [ -n "$TAILPID" ] && kill "$TAILPID" 2>/dev/null
    if [ -n "${AFFINITYD_VM_KEEP:-}" ]; then
        log "run dir kept: $RUN"
    else
        rm -rf "$RUN"
    fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 125' INT TERM

# Kernel command line:
#   affvm=1                             enables affvm-runner.service in the image
#   systemd.unified_cgroup_hierarchy=1  pure cgroup v2 (the daemon's cpu.weight path)
#   quiet loglevel=4                    each console byte is slow under TCG
#   panic=-1 (+ -no-reboot)             a guest panic ends qemu instead of hanging
# Booting via SeaBIOS (no EFI Secure Boot) leaves the kernel unlocked, so
# /sys/kernel/debug/sched/features is writable.
APPEND="root=/dev/vda rw console=ttyS0 affvm=1 systemd.unified_cgroup_hierarchy=1 quiet loglevel=4 panic=-1 ${AFFINITYD_VM_APPEND:-}"

# NUMA: one RAM backend per node (memdev=: qemu 7.2 takes -numa node,mem=
# only for machine types 5.0 and older), and cpus= ranges of qemu's CPU index,
# which counts threads within cores within sockets: with
# sockets=2,cores=2,threads=2 and 2 nodes, node N is socket N. How the guest
# numbers those CPUs is its own business: read its /sys, do not assume.
numa_args() {
    local nodes=$1 smp=$2 mem=$3 ncpu mib per_cpu per_mib n
    ncpu=${smp%%,*}
    case $mem in
        *G) mib=$(( ${mem%G} * 1024 )) ;;
        *M) mib=${mem%M} ;;
        *) log "AFFINITYD_VM_NUMA needs AFFINITYD_VM_MEM in M or G, not $mem"; return 1 ;;
    esac
    [[ $nodes =~ ^[1-9][0-9]*$ && $ncpu =~ ^[0-9]+$ ]] &&
        [ $(( ncpu % nodes )) = 0 ] && [ $(( mib % nodes )) = 0 ] ||
        { log "AFFINITYD_VM_NUMA=$nodes does not divide $ncpu CPUs and $mib MiB evenly"; return 1; }
    per_cpu=$(( ncpu / nodes )) per_mib=$(( mib / nodes ))
    for ((n = 0; n < nodes; n++)); do
        printf '%s\n' -object "memory-backend-ram,id=node$n,size=${per_mib}M" \
            -numa "node,nodeid=$n,cpus=$(( n * per_cpu ))-$(( (n + 1) * per_cpu - 1 )),memdev=node$n"
    done
}
NUMA=()
if [ -n "${AFFINITYD_VM_NUMA:-}" ]; then
    mapfile -t NUMA < <(numa_args "$AFFINITYD_VM_NUMA" "${AFFINITYD_VM_SMP:-2}" "${AFFINITYD_VM_MEM:-2G}")
    [ ${#NUMA[@]} -gt 0 ] || exit 125
fi

# /dev/kvm on these hosts is paravirtual (no VMX); a stock kernel does not
# run well on it, so always TCG. thread=multi: one host thread per vCPU;
# -cpu max: every feature TCG can emulate.
# shellcheck disable=SC2054 # commas separate qemu sub-options, not array items
QEMU=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
    -accel tcg,thread=multi -cpu "${AFFINITYD_VM_CPU:-max}"
    -smp "${AFFINITYD_VM_SMP:-2}" -m "${AFFINITYD_VM_MEM:-2G}" "${NUMA[@]}"
    -kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img" -append "$APPEND"
    -drive "file=$IMG/rootfs.img,if=virtio,format=raw,snapshot=on"
    -virtfs "local,path=$RUN,mount_tag=affctl,security_model=none,id=affctl"
    -virtfs "local,path=$SHARE,mount_tag=affshare,security_model=none,id=affshare"
    -chardev "socket,id=ser0,path=$RUN/console.sock,server=on,wait=off,logfile=$RUN/console.log"
    -serial chardev:ser0)

# Live output: the guest writes $RUN/output over 9p with cache=none.
tail -n +1 -F "$RUN/output" 2>/dev/null &
TAILPID=$!

START=$(date +%s.%N)
BOOT_TIMEOUT=${AFFINITYD_VM_BOOT_TIMEOUT:-180}
set +e
timeout -k 10 "${AFFINITYD_VM_TIMEOUT:-900}" "${QEMU[@]}" < /dev/null &
QPID=$!
# What the host gave qemu, said when a watchdog kills it: a guest that got
# little CPU was starved by the host, one that got much spun in itself.
host_view() {
    local q
    q=$(pgrep -P "$QPID" qemu-system 2>/dev/null | head -n 1)
    [ -z "$q" ] || awk -v hz="$(getconf CLK_TCK)" -v t="$(( $(date +%s) - ${START%.*} ))" \
        '{ printf "qemu used %.0f s of CPU in %d s; ", ($14 + $15) / hz, t }' "/proc/$q/stat" 2>/dev/null
    # top's second frame: the CPU each process used over the last second
    printf 'host load %s; busiest over 1 s: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" \
        "$(top -bn2 -d 1 -w 200 2>/dev/null | awk '/^ *PID/ { n++; next }
            n == 2 && NF && c++ < 4 { printf "%s%s %s%%", (c > 1 ? ", " : ""), $12, $9 }')"
}
# The boot watchdog: the runner writes boot-info just before the command.
# A CI run once spent its whole 600 s lifetime with no check started (the
# 8-vCPU topology boot, which takes ~30 s here); without this the hang looks
# like a slow test and eats the budget of the retry the caller can make.
BOOT_HUNG=
boot_deadline=$(( $(date +%s) + BOOT_TIMEOUT ))
while kill -0 "$QPID" 2>/dev/null && [ ! -s "$RUN/boot-info" ]; do
    if [ "$(date +%s)" -ge "$boot_deadline" ]; then
        BOOT_HUNG=1
        log "the guest did not start the command within $BOOT_TIMEOUT s: killing qemu ($(host_view))"
        kill "$QPID" 2>/dev/null
        break
    fi
    sleep 1
done
# The freeze watchdog: once the command runs, a heartbeat older than
# FREEZE_TIMEOUT s means the guest stopped as a whole: its checks' own
# timeouts never fired and nothing more came back. A CI run
# once went silent after a `timeout 120 systemctl start`, with no kernel
# message on the console, until qemu's 600 s were up; qemu is killed then
# (exit 127), so the caller can boot once more and say so.
# Before the first beat, boot-info's time stands for it.
FREEZE_TIMEOUT=${AFFINITYD_VM_FREEZE_TIMEOUT:-150}
FROZE=
last_beat() { stat -c %Y "$RUN/heartbeat" 2>/dev/null || stat -c %Y "$RUN/boot-info" 2>/dev/null || date +%s; }
while [ -z "$BOOT_HUNG" ] && kill -0 "$QPID" 2>/dev/null; do
    if [ $(( $(date +%s) - $(last_beat) )) -ge "$FREEZE_TIMEOUT" ] && [ ! -s "$RUN/rc" ]; then
        FROZE=1
        log "the guest froze: no heartbeat for $FREEZE_TIMEOUT s (it beats every $HEARTBEAT_EVERY s): killing qemu ($(host_view))"
        kill "$QPID" 2>/dev/null
        break
    fi
    sleep 2
done
wait "$QPID"
QRC=$?
set -e
QPID=
END=$(date +%s.%N)
# Let tail print the last lines it has not yet shown.
sleep 0.5
kill "$TAILPID" 2>/dev/null || true
wait "$TAILPID" 2>/dev/null || true
TAILPID=

log "qemu exit $QRC, VM wall time $(awk -v a="$START" -v b="$END" 'BEGIN { printf "%.1f", b - a }') s"
[ -s "$RUN/boot-info" ] && sed 's/^/run-in-vm: guest: /' "$RUN/boot-info" >&2

console_tail() {
    log "console log tail ($RUN/console.log):"
    tail -n "${1:-40}" "$RUN/console.log" 2>/dev/null | sed 's/^/  console| /' >&2 || true
}
if [ -n "${AFFINITYD_VM_SAVE:-}" ] && mkdir -p "$AFFINITYD_VM_SAVE"; then
    cp "$RUN/output" "$AFFINITYD_VM_SAVE/output.txt" 2>/dev/null || true
    cp "$RUN/console.log" "$AFFINITYD_VM_SAVE/console.txt" 2>/dev/null || true
    cp "$RUN/boot-info" "$AFFINITYD_VM_SAVE/boot-info.txt" 2>/dev/null || true
    # which watchdog ended the run, if one did: a command of the guest's own
    # may exit 126 or 127 too
    { [ -n "$BOOT_HUNG" ] && echo boot-hung; [ -n "$FROZE" ] && echo froze; } > "$AFFINITYD_VM_SAVE/watchdog.txt"
fi
if [ -n "$BOOT_HUNG" ]; then
    RC=126
    log "BOOT HUNG: no command started after $BOOT_TIMEOUT s"
    console_tail
elif [ -n "$FROZE" ]; then
    RC=127
    log "FROZE: the guest stopped after the command started (last output above)"
    console_tail
elif [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then
    RC=124
    log "TIMEOUT after ${AFFINITYD_VM_TIMEOUT:-900} s"
    console_tail
elif [ -s "$RUN/rc" ]; then
    RC=$(cat "$RUN/rc")
    [ "$RC" = 0 ] || console_tail 25
else
    RC=125
    log "no exit code came back from the guest (harness failure)"
    console_tail
fi
exit "$RC"
