/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "sample/sample-table.h"

#define SAMPLE_TABLE_MIN_CAPACITY 64

static size_t slot_of(const struct sample_table *t, int32_t key) {
        /* Fibonacci hashing: TIDs are dense and sequential; multiply to spread them. */
        return (size_t) (((uint64_t) (uint32_t) key * UINT64_C(0x9E3779B97F4A7C15)) >> t->shift);
}

static int table_resize(struct sample_table *t, size_t capacity) {
        struct sample_table_slot *old = t->slots;
        size_t old_capacity = t->capacity;
        unsigned shift = 64;

        for (size_t c = capacity; c > 1; c >>= 1)
                shift--;
        t->slots = calloc(capacity, sizeof(*t->slots));
        if (!t->slots) {
                t->slots = old;
                return -ENOMEM;
        }
        t->capacity = capacity;
        t->shift = shift;
        for (size_t i = 0; i < old_capacity; i++) {
                size_t j;

                if (old[i].key == 0)
                        continue;
                for (j = slot_of(t, old[i].key); t->slots[j].key != 0; j = (j + 1) & (capacity - 1))
                        ;
                t->slots[j] = old[i];
        }
        free(old);
        return 0;
}

int sample_table_put(struct sample_table *t, int32_t key, uint32_t value) {
        size_t i;

        if (key <= 0)
                return -EINVAL;
        if ((t->n + 1) * 2 > t->capacity) {
                int r = table_resize(t, t->capacity ? t->capacity * 2 : SAMPLE_TABLE_MIN_CAPACITY);
                if (r < 0)
                        return r;
        }
        for (i = slot_of(t, key); t->slots[i].key != 0; i = (i + 1) & (t->capacity - 1))
                if (t->slots[i].key == key) {
                        t->slots[i].value = value;
                        return 0;
                }
        t->slots[i] = (struct sample_table_slot) { .key = key, .value = value };
        t->n++;
        return 0;
}

bool sample_table_get(const struct sample_table *t, int32_t key, uint32_t *ret) {
        if (t->capacity == 0 || key <= 0)
                return false;
        for (size_t i = slot_of(t, key); t->slots[i].key != 0; i = (i + 1) & (t->capacity - 1))
                if (t->slots[i].key == key) {
                        if (ret)
                                *ret = t->slots[i].value;
                        return true;
                }
        return false;
}

bool sample_table_remove(struct sample_table *t, int32_t key) {
        size_t mask = t->capacity - 1, i, j;

        if (t->capacity == 0 || key <= 0)
                return false;
        for (i = slot_of(t, key); t->slots[i].key != key; i = (i + 1) & mask)
                if (t->slots[i].key == 0)
                        return false;

        /* Backward-shift: pull later entries of the probe run into the hole
         * unless their home slot lies cyclically in (hole, their slot]. */
        for (j = (i + 1) & mask; t->slots[j].key != 0; j = (j + 1) & mask) {
                size_t home = slot_of(t, t->slots[j].key);
                bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
                if (stays)
                        continue;
                t->slots[i] = t->slots[j];
                i = j;
        }
        t->slots[i] = (struct sample_table_slot) {};
        t->n--;
        return true;
}

void sample_table_done(struct sample_table *t) {
        free(t->slots);
        *t = (struct sample_table) {};
}
