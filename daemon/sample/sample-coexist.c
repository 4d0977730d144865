/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the other CPU placers' state (coexist.h): sched_ext's state
 * and the kubelet static CPU manager's checkpoint, below the root prefix.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "sample/coexist.h"
#include "common/json-util.h"
#include "common/util.h"

__attribute__((format(printf, 3, 4)))
static int fail(char *why, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* One container's CPU list: must parse and not be empty (the kubelet never writes an empty one). */
static int add_cpus(const char *container, struct json_object *v, cpumask_t *acc, char *why, size_t size) {
        const char *s;
        cpumask_t m;

        if (!json_object_is_type(v, json_type_string))
                return fail(why, size, "entry %.40s: not a CPU list string", container);
        s = json_object_get_string(v);
        if (cpumask_parse_list(s, &m) < 0 || cpumask_empty(&m))
                return fail(why, size, "entry %.40s: bad CPU list \"%.40s\"", container, s);
        *acc = cpumask_or(acc, &m);
        return 0;
}

int coexist_parse_kubelet(const char *json, cpumask_t *ret_exclusive, unsigned *ret_containers,
                          char *ret_policy, size_t policy_size, char *why, size_t why_size) {
        struct json_object *o = NULL, *policy, *entries;
        enum json_tokener_error jerr;
        cpumask_t acc;
        unsigned n = 0;
        int r = 0;

        cpumask_zero(&acc);
        if (!json)
                return fail(why, why_size, "empty");
        o = json_tokener_parse_verbose(json, &jerr);
        if (!o) {
                r = fail(why, why_size, "not JSON (%s)", json_tokener_error_desc(jerr));
                goto out;
        }
        if (!json_object_is_type(o, json_type_object)) {
                r = fail(why, why_size, "not a JSON object");
                goto out;
        }
        if (!json_object_object_get_ex(o, "policyName", &policy) || !json_object_is_type(policy, json_type_string)) {
                r = fail(why, why_size, "no policyName");
                goto out;
        }
        /* "none": every container runs on the shared pool; entries, if any, mean nothing. */
        if (streq(json_object_get_string(policy), "static") &&
            json_object_object_get_ex(o, "entries", &entries) && !json_object_is_type(entries, json_type_null)) {
                if (!json_object_is_type(entries, json_type_object)) {
                        r = fail(why, why_size, "entries is not an object");
                        goto out;
                }
                json_object_object_foreach(entries, pod, v) {
                        if (json_object_is_type(v, json_type_object)) {
                                /* v2: pod UID → container name → CPU list */
                                json_object_object_foreach(v, container, cpus) {
                                        r = add_cpus(container, cpus, &acc, why, why_size);
                                        if (r < 0)
                                                goto out;
                                        n++;
                                }
                        } else {
                                /* v1 (kubelet < 1.18): container ID → CPU list */
                                r = add_cpus(pod, v, &acc, why, why_size);
                                if (r < 0)
                                        goto out;
                                n++;
                        }
                }
        }
        if (ret_policy)
                snprintf(ret_policy, policy_size, "%s", json_object_get_string(policy));
        *ret_exclusive = acc;
        *ret_containers = n;
out:
        json_object_put(o);
        return r;
}

/* Both files may have something to say: the second note follows the first. */
__attribute__((format(printf, 2, 3)))
static void note(struct coexist *c, const char *fmt, ...) {
        size_t n = strlen(c->note);
        va_list ap;

        if (n > 0 && n + 2 < sizeof(c->note)) {
                memcpy(c->note + n, "; ", 3);
                n += 2;
        }
        va_start(ap, fmt);
        vsnprintf(c->note + n, sizeof(c->note) - n, fmt, ap);
        va_end(ap);
}

static void read_sched_ext(const char *root, struct coexist *c) {
        char buf[64];
        ssize_t n;

        n = util_read_file_at(root, COEXIST_SCHED_EXT_STATE, buf, sizeof(buf));
        if (n == -ENOENT || n == -ENOTDIR)
                return;   /* no CONFIG_SCHED_CLASS_EXT: nothing to coexist with */
        if (n < 0) {
                /* Unreadable: not known to be on. Said in the note, so status shows the doubt. */
                note(c, COEXIST_SCHED_EXT_STATE ": %s; taken as not enabled", strerror((int) -n));
                return;
        }
        snprintf(c->sched_ext_state, sizeof(c->sched_ext_state), "%s", util_strip(buf));
        c->sched_ext = streq(c->sched_ext_state, "enabled");
        if (c->sched_ext && util_read_file_at(root, COEXIST_SCHED_EXT_OPS, buf, sizeof(buf)) >= 0)
                snprintf(c->sched_ext_ops, sizeof(c->sched_ext_ops), "%s", util_strip(buf));
}

static int read_kubelet(const char *root, struct coexist *c) {
        _cleanup_free_ char *text = NULL;
        char why[COEXIST_NOTE_MAX - 64];
        size_t size;
        int r;

        r = util_read_full_file_at(root, COEXIST_KUBELET_STATE, &text, &size);
        if (r == -ENOENT || r == -ENOTDIR)
                return 0;   /* no kubelet, or no CPU manager state */
        if (r == -ENOMEM)
                return r;
        c->kubelet_present = true;
        if (r < 0) {
                note(c, COEXIST_KUBELET_STATE ": %s; ignored", strerror(-r));
                return 0;
        }
        if (strlen(text) != size)
                r = fail(why, sizeof(why), "NUL byte in the file");
        else
                r = coexist_parse_kubelet(text, &c->kubelet_exclusive, &c->kubelet_containers, c->kubelet_policy,
                                          sizeof(c->kubelet_policy), why, sizeof(why));
        if (r < 0) {
                /* Ignored, not fatal: the kubelet rewrites it; until then nothing is known exclusive. */
                cpumask_zero(&c->kubelet_exclusive);
                c->kubelet_containers = 0;
                c->kubelet_policy[0] = '\0';
                note(c, COEXIST_KUBELET_STATE ": malformed: %s; ignored", why);
        }
        return 0;
}

/*
 * Measured on the development VM (10,000 calls below a /tmp root with
 * sched_ext enabled and a 1.4 KiB kubelet file of 20 containers): 23-24 µs
 * a pass for the three files and the JSON parse, so nothing is cached.
 */
int coexist_read(const char *root, struct coexist *ret) {
        *ret = (struct coexist) {};
        read_sched_ext(root, ret);
        return read_kubelet(root, ret);
}

int coexist_to_json(const struct coexist *c, struct json_object **ret) {
        struct json_object *o, *se, *k;
        char buf[4096];
        int r;

        o = json_object_new_object();
        se = json_object_new_object();
        k = json_object_new_object();
        if (!o || !se || !k) {
                json_object_put(o);
                json_object_put(se);
                json_object_put(k);
                return -ENOMEM;
        }
        r = json_add(o, "sched_ext", se);
        r = r ?: json_add(o, "kubelet", k);
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        r = json_add(se, "state", json_object_new_string(c->sched_ext_state[0] ? c->sched_ext_state : "absent"));
        r = r ?: json_add(se, "ops", json_object_new_string(c->sched_ext_ops));
        r = r ?: json_add(se, "active", json_object_new_boolean(c->sched_ext));
        r = r ?: json_add(k, "file", json_object_new_string(COEXIST_KUBELET_STATE));
        r = r ?: json_add(k, "present", json_object_new_boolean(c->kubelet_present));
        r = r ?: json_add(k, "policy", json_object_new_string(c->kubelet_policy));
        r = r ?: json_add(k, "exclusive", json_object_new_string(
                        cpumask_format_list(&c->kubelet_exclusive, buf, sizeof(buf)) ?: ""));
        r = r ?: json_add(k, "containers", json_object_new_int64(c->kubelet_containers));
        r = r ?: json_add(o, "note", json_object_new_string(c->note));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}
