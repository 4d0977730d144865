#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# monitoring/: the alert rules pass `promtool check rules` and their unit
# tests (`promtool test rules`: each alert fires on its case and not on
# the healthy host beside it); the Grafana dashboard is JSON whose every
# query is PromQL promtool accepts; and the dashboard and the rules name
# only metrics the daemon writes (the names in daemon/common/metrics.c,
# the one renderer of `affctl metrics` and MetricsTextfile=) or
# node_exporter's own, and the dashboard shows every one the daemon writes.
# Needs promtool (Debian: prometheus) and jq.
set -u
: "${top_srcdir:?}"
MON=$top_srcdir/monitoring
command -v promtool >/dev/null || { echo "SKIP: no promtool (Debian package prometheus)"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/affd-monitoring.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

promtool check rules "$MON/affinityd-alerts.yml" || bad "promtool check rules"
# the tests name the rule file relative to themselves
(cd "$MON" && promtool test rules affinityd-alerts.test.yml) || bad "promtool test rules"
# every alert has a unit test
for a in $(sed -n 's/^ *- alert: *//p' "$MON/affinityd-alerts.yml"); do
	grep -q "alertname: $a\$" "$MON/affinityd-alerts.test.yml" || bad "alert $a has no unit test"
done

dash=$MON/affinityd-dashboard.json
jq -e '.panels | length > 0' "$dash" >/dev/null || bad "$dash is not JSON with panels"
[ "$(jq '[.. | objects | select(has("gridPos")) | .id] | length' "$dash")" = \
	"$(jq '[.. | objects | select(has("gridPos")) | .id] | unique | length' "$dash")" ] || bad "panel ids repeat"
jq -r '.. | objects | .expr? // empty' "$dash" >"$tmp/exprs"
[ -s "$tmp/exprs" ] || bad "no queries in the dashboard"

# Each query as a recording rule, Grafana's variables given values, for promtool to parse.
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	n=0
	while IFS= read -r e; do
		n=$((n + 1))
		e=${e//\$__rate_interval/5m}
		e=${e//\$instance/.*}
		printf '      - record: dashboard_query_%d\n        expr: %s\n' "$n" "$(jq -Rn --arg e "$e" '$e')"
	done <"$tmp/exprs"
} >"$tmp/dashboard-rules.yml"
promtool check rules "$tmp/dashboard-rules.yml" >"$tmp/check.out" 2>&1 ||
	{ cat "$tmp/check.out"; bad "a dashboard query is not PromQL (above)"; }

# The names the daemon writes, from its one renderer.
grep -o '"affinityd_[a-z_]*' "$top_srcdir/daemon/common/metrics.c" | tr -d '"' | sort -u >"$tmp/exported"
[ "$(wc -l <"$tmp/exported")" -ge 10 ] || bad "found only $(wc -l <"$tmp/exported") metric names in metrics.c"
printf '%s\n' node_textfile_mtime_seconds up >"$tmp/node"
used() {   # used FILE: the metric names its queries use
	grep -oE '\b(affinityd_[a-z_]+|node_[a-z_]+|up)\b' "$1" | sort -u
}
sed -n 's/^ *expr: *//p' "$MON/affinityd-alerts.yml" >"$tmp/rule-exprs"
for f in "$tmp/exprs" "$tmp/rule-exprs"; do
	while read -r m; do
		grep -qxF "$m" "$tmp/exported" "$tmp/node" || bad "$m: not a metric affinityd or node_exporter writes ($(basename "$f"))"
	done < <(used "$f")
done
while read -r m; do
	grep -qw "$m" "$tmp/exprs" || bad "$m: the daemon writes it, the dashboard does not show it"
done <"$tmp/exported"

[ $fail = 0 ] && echo "ok: $(grep -c . "$tmp/exprs") dashboard queries, $(grep -c . "$tmp/rule-exprs") alerts, $(wc -l <"$tmp/exported") metrics"
exit $fail
