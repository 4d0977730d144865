/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

#include <json-c/json.h>

/*
 * The daemon's state as Prometheus text exposition (format 0.0.4, what
 * node_exporter's textfile collector and every scraper read), from the
 * control interface's own documents: Status, and Pairs and Hogs for the
 * per-state counts (either may be NULL). One renderer for both routes:
 * `affctl metrics` and the MetricsTextfile= file the daemon replaces each
 * pass. Names follow the Prometheus naming guide: an affinityd_ prefix,
 * base units (seconds, bytes), _total on counters.
 */
int metrics_render(struct json_object *status, struct json_object *pairs, struct json_object *hogs, FILE *f);
