#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# affctl's tables against golden files, through the real binary and no
# daemon: for every tests/affctl-tables/CASE.json (a reply as --json gives
# it; the verb is the name up to the first '-'),
#   COLUMNS=80  affctl VERB --from-json CASE.json   must equal CASE.80
#   COLUMNS=200 affctl VERB --from-json CASE.json   must equal CASE.200
#   affctl VERB --wide --from-json CASE.json        must equal CASE.wide
# and no line at 80 or 200 may be wider than that; without COLUMNS and
# with stdout not a terminal the width is 80; --json gives the reply back
# unchanged. AFFCTL_TABLES_UPDATE=1 writes the golden files instead (read
# the diff before committing them). A .reply file is a reply checked by
# its own lines below.

set -u
: "${top_srcdir:?}" "${top_builddir:?}"
AFFCTL="$top_builddir/affctl"
CASES="$top_srcdir/tests/affctl-tables"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/affctl-tables.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# widths in characters: "…" is one column, three bytes
export LC_ALL=C.UTF-8

fail=0
n=0

# check NAME GOLDEN OUTPUT: OUTPUT equals GOLDEN (or becomes it when updating)
check() {
	if [ "${AFFCTL_TABLES_UPDATE:-}" = 1 ]; then
		cp "$3" "$2" || exit 99
		echo "updated $(basename "$2")"
	elif ! diff -u "$2" "$3"; then
		echo "FAIL $1: differs from $(basename "$2") (diff above)"
		fail=1
	else
		echo "ok $1"
	fi
}

for json in "$CASES"/*.json; do
	case=$(basename "$json" .json)
	verb=${case%%-*}
	for width in 80 200; do
		n=$((n + 1))
		if ! COLUMNS=$width "$AFFCTL" "$verb" --from-json "$json" >"$tmp/$case.$width" 2>"$tmp/err"; then
			echo "FAIL $case at $width: affctl failed:"
			cat "$tmp/err"
			fail=1
			continue
		fi
		check "$case at $width" "$CASES/$case.$width" "$tmp/$case.$width"
		widest=$(wc -L <"$tmp/$case.$width")
		if [ "$widest" -gt "$width" ]; then
			echo "FAIL $case at $width: a line of $widest characters:"
			awk -v w="$width" 'length($0) > w' "$tmp/$case.$width"
			fail=1
		fi
	done
	n=$((n + 1))
	COLUMNS=80 "$AFFCTL" "$verb" --wide --from-json "$json" >"$tmp/$case.wide" || fail=1
	check "$case --wide" "$CASES/$case.wide" "$tmp/$case.wide"

	# not a terminal, no COLUMNS: 80
	n=$((n + 1))
	env -u COLUMNS "$AFFCTL" "$verb" --from-json "$json" >"$tmp/$case.pipe" </dev/null
	if cmp -s "$tmp/$case.pipe" "$CASES/$case.80"; then
		echo "ok $case in a pipe is 80 wide"
	else
		echo "FAIL $case: without COLUMNS, in a pipe, the output is not the 80-column one"
		diff -u "$CASES/$case.80" "$tmp/$case.pipe"
		fail=1
	fi

	# --json: the reply as it came
	n=$((n + 1))
	"$AFFCTL" "$verb" --json --from-json "$json" >"$tmp/$case.out.json"
	if python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
		"$json" "$tmp/$case.out.json"; then
		echo "ok $case --json unchanged"
	else
		echo "FAIL $case: --json does not give the reply back unchanged"
		fail=1
	fi
done

# status (lines not cut to a width, so no golden file): where the daemon
# calls one level free and another pays, the free one is named, and only
# it (affctl prints the daemon's verdict, it does not judge the gains
# again: core's probe read 0 and is not free, and a level the daemon
# calls free is named whatever its gain); where every level pays, nothing
# is said of one; where every pair is left alone, that is said

# status_says WHAT REPLY MUST NOT: the Co-location line of status from
# REPLY matches MUST and nothing in it matches NOT
status_says() {
	n=$((n + 1))
	"$AFFCTL" status --from-json "$2" >"$tmp/status" 2>&1
	if grep -q "^ *Co-location: $3" "$tmp/status" && ! grep -q "$4" "$tmp/status"; then
		echo "ok status $1"
	else
		echo "FAIL status $1, not so:"
		cat "$tmp/status"
		fail=1
	fi
}
reply="$CASES/status-one-level-free.reply"
status_says "names the level the daemon calls free, and only it" "$reply" \
	".*; a pair split only within smt is left to the kernel" "within smt,"
sed 's/"gain":1.01,"free":true/"gain":1.2,"free":false/' "$reply" >"$tmp/paying.reply"
status_says "says nothing of a level left alone where every level pays" "$tmp/paying.reply" \
	"buys smt 1.20x" "left to the kernel"
sed 's/"believed":true,"free":false/"believed":true,"free":true/' "$reply" >"$tmp/free.reply"
status_says "says every pair is left to the kernel where the daemon says so" "$tmp/free.reply" \
	".*; under the threshold: pairs are left to the kernel" "within smt"
sed 's/"gain":1.6,"free":false/"gain":1.6,"free":true/' "$reply" >"$tmp/verdict.reply"
status_says "names the levels by the daemon's verdict, not their gains" "$tmp/verdict.reply" \
	".*; a pair split only within smt, llc is left to the kernel" "within smt is"

# --from-json stands in for one read-only reply, not for a verb that changes state
n=$((n + 1))
"$AFFCTL" reload --from-json "$CASES/pairs.json" 2>/dev/null
rc=$?
if [ "$rc" = 2 ]; then
	echo "ok reload --from-json refused"
else
	echo "FAIL reload --from-json: exit $rc, want 2 (usage)"
	fail=1
fi

# a saved reply of the wrong shape (edited, or from another tool) gives a
# status with what it has, not a crash: json-c aborts on an array call on
# an object and crashes on an object walk of an array
for shape in '{"capabilities":[]}' '{"changes":{},"would_do":{}}' '{"counts":{"findings_by_kind":[]}}' \
	'{"colocation":{"measured":true,"levels":{}}}' '{"warnings":{"a":1},"config_files":{}}' \
	'{"topology":{"notes":{}}}' '[]'; do
	n=$((n + 1))
	printf '%s\n' "$shape" >"$tmp/shape.json"
	"$AFFCTL" status --from-json "$tmp/shape.json" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" = 0 ]; then
		echo "ok status --from-json $shape"
	else
		echo "FAIL status --from-json $shape: exit $rc, want 0: $(cat "$tmp/err")"
		fail=1
	fi
done

[ "$n" -gt 4 ] || { echo "FAIL: only $n checks ran (no cases in $CASES?)"; exit 1; }
exit $fail
