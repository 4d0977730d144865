/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A small open-addressing hash map from a PID/TID (> 0) to a 32-bit slot
 * number, for the sampler's dense thread and process arrays.
 *
 * Linear probing with backward-shift deletion (no tombstones), Fibonacci
 * hashing, load kept at or below 1/2. 8 bytes per slot: 10,000 threads
 * take 256 KiB. Lookups are one or two cache lines.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sample_table_slot {
        int32_t key;       /* 0 = empty */
        uint32_t value;
};

struct sample_table {
        struct sample_table_slot *slots;
        size_t capacity;   /* 0 or a power of two */
        size_t n;
        unsigned shift;    /* 64 - log2(capacity) */
};

/* Insert or replace. key must be > 0. Returns 0 or -ENOMEM/-EINVAL. */
int sample_table_put(struct sample_table *t, int32_t key, uint32_t value);
/* Returns true and the value if the key is present. */
bool sample_table_get(const struct sample_table *t, int32_t key, uint32_t *ret);
/* Returns true if the key was present. */
bool sample_table_remove(struct sample_table *t, int32_t key);
/* Free the storage; the table is empty and reusable afterwards. */
void sample_table_done(struct sample_table *t);
