#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Golden tests through the real binaries:
#   affinityd --check-config --print --config-dir usr --config-dir etc --config-dir run
# for every tests/config/golden/CASE: stdout must equal CASE/expected.print;
# for every tests/config/errors/CASE: exit status non-zero and every line
# of CASE/expected.err on stderr; the shipped policies/ must pass; and when
# affctl has `check`, the printed configuration must check clean and print
# identically again (affctl check reads a non-.conf/.policy file as a bundle).
#
# tests/test-config.c runs the same cases through the library directly; this
# script is the end-to-end version, with the checks against a kernel the
# daemon makes at start: against a fixture kernel (6.1, CFS, its debugfs
# tunables), not this host's, whose features and tunables vary. The last
# case is one that only that kernel check refuses. Every run names its directories: with
# none, affinityd would read the installed ones (/usr/lib/affinityd, /etc,
# /run), and a quick start's installed policies would change the result.

set -u
: "${top_srcdir:?}" "${top_builddir:?}"
AFFINITYD="$top_builddir/affinityd"
AFFCTL="$top_builddir/affctl"
CASES="$top_srcdir/tests/config"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-config-golden.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

fail=0
n=0

# --config-dir for each of usr, etc, run that the case has (relative: messages
# say usr/...); a case with none of them gets an empty directory.
mkdir "$tmp/none" || exit 99
KERNEL="$top_srcdir/tests/fixtures/levers/v2"
dirs_of() {
	args=""
	for d in usr etc run; do
		[ -d "$d" ] && args="$args --config-dir $d"
	done
	echo "${args:- --config-dir $tmp/none}"
}

for case in "$CASES"/golden/*/; do
	name=$(basename "$case")
	cd "$case" || exit 99
	n=$((n + 1))
	# shellcheck disable=SC2046
	if ! "$AFFINITYD" --root "$KERNEL" --check-config --print $(dirs_of) >"$tmp/$name.out" 2>"$tmp/$name.err"; then
		echo "FAIL golden $name: affinityd --check-config failed:"
		cat "$tmp/$name.err"
		fail=1
		continue
	fi
	if ! diff -u expected.print "$tmp/$name.out"; then
		echo "FAIL golden $name: printed configuration differs (diff above)"
		fail=1
		continue
	fi
	echo "ok golden $name"
done

for case in "$CASES"/errors/*/; do
	name=$(basename "$case")
	cd "$case" || exit 99
	n=$((n + 1))
	# shellcheck disable=SC2046
	if "$AFFINITYD" --root "$KERNEL" --check-config $(dirs_of) >"$tmp/$name.out" 2>"$tmp/$name.err"; then
		echo "FAIL errors $name: affinityd --check-config accepted a bad configuration"
		fail=1
		continue
	fi
	missing=0
	while IFS= read -r line; do
		if ! grep -qF -- "$line" "$tmp/$name.err"; then
			echo "FAIL errors $name: missing on stderr: $line"
			missing=1
		fi
	done <expected.err
	if [ "$missing" = 1 ]; then
		echo "--- stderr was:"
		cat "$tmp/$name.err"
		fail=1
		continue
	fi
	echo "ok errors $name"
done

# The shipped files, as installed: one vendor directory.
cd "$top_srcdir" || exit 99
n=$((n + 1))
if "$AFFINITYD" --root "$KERNEL" --check-config --print --config-dir policies >"$tmp/shipped.out" 2>"$tmp/shipped.err" &&
   diff -u tests/config/shipped.print "$tmp/shipped.out"; then
	echo "ok shipped policies"
else
	echo "FAIL shipped policies:"
	cat "$tmp/shipped.err"
	fail=1
fi

# A configuration the parser takes and the kernel refuses: an EEVDF sched
# feature on the CFS fixture kernel. --check-config says so, at the key's
# line, as the daemon's start would (it exits 78 on it).
n=$((n + 1))
mkdir -p "$tmp/kernel/policies.d" || exit 99
printf '[Policy]\nDetector=always\nAction=features\n\n[Action]\nSchedFeatures=RUN_TO_PARITY\n' \
	>"$tmp/kernel/policies.d/eevdf.policy"
if "$AFFINITYD" --root "$KERNEL" --check-config --config-dir "$tmp/kernel" >/dev/null 2>"$tmp/kernel.err"; then
	echo "FAIL kernel: --check-config accepted a sched feature the fixture kernel lacks"
	fail=1
elif ! grep -qF "$tmp/kernel/policies.d/eevdf.policy:6: SchedFeatures=RUN_TO_PARITY: RUN_TO_PARITY: not a sched feature" "$tmp/kernel.err"; then
	echo "FAIL kernel: the error does not name the key's line:"
	cat "$tmp/kernel.err"
	fail=1
else
	echo "ok kernel: $(head -n 1 "$tmp/kernel.err")"
fi

# Round trip through affctl check: a good file passes, a bad one fails, and
# every printed configuration checks clean.
n=$((n + 1))
if ! "$AFFCTL" check "$top_srcdir/policies/policies.d/50-hogs.policy" >"$tmp/rt.out" 2>&1; then
	echo "FAIL affctl check rejects the shipped 50-hogs.policy:"
	cat "$tmp/rt.out"
	fail=1
fi
if "$AFFCTL" check "$CASES/errors/combos/usr/policies.d/colocate-hog.policy" >/dev/null 2>&1; then
	echo "FAIL affctl check accepts errors/combos/usr/policies.d/colocate-hog.policy"
	fail=1
fi
for out in "$tmp"/*.out; do
	[ -s "$out" ] || continue
	case $out in */rt.out) continue ;; esac
	n=$((n + 1))
	cp "$out" "$tmp/bundle.dump"
	if ! "$AFFCTL" check "$tmp/bundle.dump" >"$tmp/rt.out" 2>"$tmp/rt.err"; then
		echo "FAIL round trip $(basename "$out"): affctl check rejects the printed configuration:"
		cat "$tmp/rt.err"
		fail=1
	fi
done
echo "ok affctl check of every printed configuration"

echo "$n cases"
exit $fail
