/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The json-c helpers of the modules that answer affctl and of affctl itself. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* o's member at a dotted path ("self.cpu_percent"), or NULL. */
static inline struct json_object *json_path(struct json_object *o, const char *path) {
        char buf[128], *save = NULL;

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
                if (!json_object_object_get_ex(o, k, &o))
                        return NULL;
        return o;
}

/* json_path()'s member only if it has type t, else NULL: a reply the
 * daemon did not write (affctl --from-json FILE) may hold anything, and
 * json-c asserts on an array call on an object and crashes on the reverse. */
static inline struct json_object *json_path_of(struct json_object *o, const char *path, enum json_type t) {
        struct json_object *v = json_path(o, path);

        return v && json_object_is_type(v, t) ? v : NULL;
}

/* The length of the array at path; 0 if there is none or it is no array. */
static inline size_t json_array_length_at(struct json_object *o, const char *path) {
        struct json_object *a = json_path_of(o, path, json_type_array);

        return a ? json_object_array_length(a) : 0;
}
