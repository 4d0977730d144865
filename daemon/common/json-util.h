/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The one json-c helper every module that answers affctl needs. */

#include <errno.h>
#include <json-c/json.h>

/* Add v to o under k, taking v over; -ENOMEM if v is NULL (a failed
 * json_object_new_*) or the add fails, with v freed either way. */
static inline int json_add(struct json_object *o, const char *k, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, k, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}
