/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The columns each list verb shows first (ctl/table.h renders them): who
 * and where by comm[pid], the figure that made it a finding, the state and
 * why. Every other field is in --wide and --json. A "gain" field is shown
 * in pairs and actions when the daemon's reply has one ("-" when not).
 */

#include <stddef.h>

#include "ctl/table.h"

extern const struct table_view view_tasks[];
extern const struct table_view view_actions[];
extern const struct table_view view_pairs[];
extern const struct table_view view_hogs[];

/* "42 s", "12 min", "1.5 h", "3.0 days": an age or uptime for people. */
void view_duration(double s, char *buf, size_t size);
