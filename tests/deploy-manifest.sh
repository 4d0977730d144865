#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The Kubernetes manifest (deploy/kubernetes/affinityd.yaml) without a
# cluster: its structure against what the daemon needs
# (tests/deploy-manifest.py says what), and its ConfigMap's files pass
# `affctl check`. Needs python3-yaml.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
/usr/bin/python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: needs python3-yaml (Debian package)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/affd-manifest.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
/usr/bin/python3 "$top_srcdir/tests/deploy-manifest.py" "$top_srcdir" || fail=1
/usr/bin/python3 "$top_srcdir/tests/deploy-manifest.py" "$top_srcdir" --config "$tmp/etc" || exit 99
n=$(find "$tmp/etc" -type f | wc -l)
[ "$n" -gt 0 ] || { echo "FAIL: the ConfigMap gives the pod no files"; fail=1; }
if "$top_builddir/affctl" check $(find "$tmp/etc" -type f | sort); then
	echo "ok: the ConfigMap's $n files check clean"
else
	echo "FAIL: affctl check of the ConfigMap's files (above)"
	fail=1
fi
exit $fail
