#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The image of deploy/image/build-image.sh under podman, run as the
# DaemonSet runs it: the host's PID and cgroup namespaces, the unit's
# capabilities only, a read-only root, the ConfigMap's files as
# /etc/affinityd, the journal on a host directory. With a real pair on the
# host (tests/workloads/pingpong):
#   1. the daemon in the container co-locates it; affctl in the container
#      and the host's affctl (over the socket in that directory) say so,
#      naming pingpong[PID], and the metrics file shows its changes (1 or 2);
#   2. `podman stop` (SIGTERM): the masks are as they were before;
#   3. co-located again, `podman kill` (SIGKILL, nothing restored): the
#      masks stay pinned; a new container on the same journal (in dry-run,
#      so it changes nothing new) puts them back when it starts.
# Skips (77) only when no container runs here at all: a one-file image made
# of this host's /usr/bin/true is tried with each runtime podman can use.
#
# AFFINITYD_IMAGE=name: test that image (default: build one with
# build-image.sh, from AFFINITYD_DEB when set, else from the git tree).
# The image stays in podman's store afterwards (rebuilding takes minutes);
# the containers and the probe image are removed.
set -euo pipefail
. "$top_srcdir/tests/lib.sh"
require_root
two_cpus
require_cmd podman
PINGPONG=$top_builddir/tests/workloads/pingpong
NAME=affd-ctest-$$
PROBE=localhost/affd-probe:$$
work=$(mktemp -d /tmp/affd-container.XXXXXX)
container_cleanup() {
	podman rm -f -i -t 0 "$NAME" >/dev/null 2>&1 || true
	podman rm -f -i -t 0 "$NAME-2" >/dev/null 2>&1 || true
	podman rmi -f -i "$PROBE" >/dev/null 2>&1 || true
	cleanup
	rm -rf "$work"
}
trap container_cleanup EXIT

# podman asks for RLIMIT_NOFILE and RLIMIT_NPROC of 1048576 by default;
# without CAP_SYS_RESOURCE (a sandbox, a nested container) the runtime
# cannot raise them and no container starts. The daemon needs neither.
ULIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

# Can this machine run a container at all, with the host's PID and cgroup
# namespaces? Asked of an image with nothing of ours in it, with each
# runtime: crun refuses a hybrid cgroup v1/v2 host that runc runs on.
mkdir -p "$work/probe/usr/bin"
cp /usr/bin/true "$work/probe/usr/bin/"
for lib in $(ldd /usr/bin/true | grep -o '/[^ ]*'); do
	cp --parents "$lib" "$work/probe/"
done
tar -C "$work/probe" -c . | podman import -q - "$PROBE" >/dev/null || skip "podman cannot import an image here"
RUNTIME=() why=""
for rt in "" runc crun; do
	[ -z "$rt" ] || command -v "$rt" >/dev/null || continue
	if out=$(podman ${rt:+--runtime "$rt"} run --rm --pid=host --cgroupns=host "${ULIMITS[@]}" \
		"$PROBE" /usr/bin/true 2>&1); then
		RUNTIME=(${rt:+--runtime "$rt"})
		why=""
		break
	fi
	why+="${rt:-default runtime}: $out; "
done
[ -z "$why" ] || skip "no container runs here: $why"
echo "runtime: ${RUNTIME[*]:-the default one}"

IMAGE=${AFFINITYD_IMAGE:-}
if [ -z "$IMAGE" ]; then
	IMAGE=$(bash "$top_srcdir/deploy/image/build-image.sh" ${AFFINITYD_DEB:+"$AFFINITYD_DEB"}) ||
		fail "build-image.sh failed"
fi
podman image exists "$IMAGE" || fail "no image $IMAGE"

# One affinityd per machine: the container's daemon locks its own runtime
# directory, private here, so the test holds the host's instance lock (the
# one every daemon on the host takes) for it. A daemon that holds it for
# over a minute is one acting beside the container's: that is a failure.
if [ -z "${AFFD_LOCK_HELD:-}" ]; then
	trap - EXIT
	container_cleanup
	# the lock file stays, as every daemon's does: unlinked while held, a
	# daemon waiting on it and one making a new file would both hold "the" lock
	mkdir -p /run/affinityd
	AFFD_LOCK_HELD=1 AFFINITYD_IMAGE=$IMAGE \
		exec flock -w 60 -E 75 /run/affinityd/instance.lock "$BASH" "$0" "$@"
fi

# The pod's /etc/affinityd, from the manifest's ConfigMap.
/usr/bin/python3 "$top_srcdir/tests/deploy-manifest.py" "$top_srcdir" --config "$work/etc" ||
	fail "cannot write the ConfigMap's files"
# The pair is held split (pingpong --hold: CPU_A and CPU_B), and the pair
# policy (the shipped one, replaced by name from /etc/affinityd) may change
# narrowed masks: released, a host's kernel may merge the pair by itself
# before the daemon looks, and then there is nothing to co-locate. Nor is
# there where the host's calibration reads co-location as buying nothing
# (two SMT siblings, say): IgnoreCalibration=yes, for this test is of the
# container's mounts and rights.
{ cat "$top_srcdir/policies/policies.d/50-pingpong.policy"; printf '\n[Action]\nAllowNarrowed=yes\nIgnoreCalibration=yes\n'; } \
	>"$work/etc/policies.d/50-pingpong.policy"
mkdir -p "$work/run" "$work/textfile"
MOUNTS=(-v "$work/run:/run/affinityd" -v "$work/etc:/etc/affinityd:ro" -v /sys/fs/cgroup:/sys/fs/cgroup
	-v "$work/textfile:/var/lib/prometheus/node-exporter")
for d in /sys/kernel/tracing /sys/kernel/debug; do
	! mountpoint -q "$d" || MOUNTS+=(-v "$d:$d")
done
# run_container NAME [DAEMON ARGS...]: as the DaemonSet's pod spec says
run_container() {
	local name=$1; shift
	podman "${RUNTIME[@]}" run -d --name "$name" --pid=host --cgroupns=host \
		--cap-drop=all --cap-add=SYS_NICE,SYS_PTRACE,DAC_READ_SEARCH,PERFMON,SYS_ADMIN,NET_ADMIN,DAC_OVERRIDE \
		--security-opt no-new-privileges --read-only --stop-timeout 60 "${ULIMITS[@]}" \
		"${MOUNTS[@]}" "$IMAGE" "$@" >/dev/null || fail "podman run $name failed"
	wait_for 30 "$AFFCTL" --runtime-dir "$work/run" status >/dev/null 2>&1 || {
		podman logs "$name" 2>&1 | tail -30
		ls -la "$work/run"
		# what affctl got, and where the daemon's threads were (seen twice, cause unknown)
		"$AFFCTL" --runtime-dir "$work/run" status 2>&1 | tail -5 || true
		podman ps -a --filter "name=$name" --format '{{.Names}} {{.Status}}' || true
		for p in $(pgrep -x affinityd); do
			for t in /proc/"$p"/task/*; do
				echo "# affinityd $p thread ${t##*/} $(cut -d' ' -f3 "$t/stat" 2>/dev/null) wchan $(cat "$t/wchan" 2>/dev/null)"
				head -8 "$t/stack" 2>/dev/null | sed 's/^/#   /'
			done
		done
		fail "the daemon in $name never answered affctl status"
	}
}
clog() { echo "--- podman logs $1, last 30 lines:"; podman logs "$1" 2>&1 | tail -30; }
hctl() { "$AFFCTL" --runtime-dir "$work/run" "$@"; }

"$PINGPONG" --cpus "$CPU_A,$CPU_B" --hold --duration 300 --pid-file "$work/pp.pids" >/dev/null 2>&1 &
CHILDREN+=("$!")
wait_for 10 test -s "$work/pp.pids" || fail "pingpong did not start"
{ read -r P1; read -r P2; } <"$work/pp.pids"
orig1=$(allowed_of "$P1") orig2=$(allowed_of "$P2")
together() {
	local a b
	a=$(allowed_of "$P1") b=$(allowed_of "$P2")
	[ "$a" = "$b" ] && [[ $a =~ ^[0-9]+$ ]]
}
as_before() { [ "$(allowed_of "$P1")" = "$orig1" ] && [ "$(allowed_of "$P2")" = "$orig2" ]; }
together && fail "the pair is on one CPU before any daemon runs ($orig1): the test would prove nothing"

# 1. co-located from the container
run_container "$NAME"
# On failure the pair's state and the calibration come last, where a CI log's tail shows them.
wait_for 30 together || { clog "$NAME"; hctl pairs; hctl status | grep -A1 "Co-location" || true
	fail "the daemon in the container did not co-locate pingpong $P1/$P2: $(hctl pairs --wide | grep -E "pingpong\[($P1|$P2)\]" | head -2 | tr -s ' \n' ' ')"; }
echo "1: co-located on CPU $(allowed_of "$P1") (was $orig1, $orig2)"
out=$(podman exec "$NAME" affctl actions) || fail "affctl in the container failed"
# held split, one member is on the pair's CPU already: only the other's mask changes
grep -Eq "pingpong\[($P1|$P2)\]" <<<"$out" || { echo "$out"; fail "affctl actions in the container names neither pingpong[$P1] nor pingpong[$P2]"; }
hctl pairs --wide | grep -Eq "pingpong\[($P1|$P2)\] <-> pingpong\[($P1|$P2)\]" || { hctl pairs; fail "the host's affctl pairs does not show the pair"; }
prom=$work/textfile/affinityd.prom
wait_for 10 grep -Eq '^affinityd_changes_in_force\{kind="pair"\} [12]$' "$prom" ||
	{ cat "$prom" 2>/dev/null; fail "the metrics file (MetricsTextfile= of the ConfigMap) does not show the pair's change"; }

# 2. podman stop: SIGTERM, the daemon restores
podman stop -t 60 "$NAME" >/dev/null || fail "podman stop failed"
[ "$(podman inspect -f '{{.State.ExitCode}}' "$NAME")" = 0 ] ||
	{ clog "$NAME"; fail "the daemon exited $(podman inspect -f '{{.State.ExitCode}}' "$NAME") on podman stop"; }
wait_for 5 as_before || { clog "$NAME"; fail "after podman stop the masks are $(allowed_of "$P1"), $(allowed_of "$P2"), not $orig1, $orig2"; }
echo "2: podman stop put the masks back ($orig1, $orig2)"
podman rm "$NAME" >/dev/null

# 3. podman kill: nothing restored; the next container replays the journal
run_container "$NAME"
wait_for 30 together || { clog "$NAME"; fail "the second container did not co-locate the pair"; }
podman kill "$NAME" >/dev/null || fail "podman kill failed"
podman wait "$NAME" >/dev/null 2>&1 || true
together || fail "after podman kill the masks are $(allowed_of "$P1"), $(allowed_of "$P2"): restored by whom?"
echo "3: podman kill left the pair on CPU $(allowed_of "$P1")"
podman rm "$NAME" >/dev/null
run_container "$NAME-2" --dry-run
wait_for 10 as_before ||
	{ clog "$NAME-2"; fail "a new container on the killed one's journal did not put the masks back ($(allowed_of "$P1"), $(allowed_of "$P2"))"; }
echo "3: a new container on the same journal put the masks back ($orig1, $orig2)"
podman stop -t 60 "$NAME-2" >/dev/null
as_before || fail "the dry-run container changed the masks"
echo "ok: co-located from a container, restored on podman stop, and after podman kill by the next container"
