/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Policy matching (policy_matches, detect_policy_for from detect.h) and
 * the safety defaults: leave alone kernel threads, real-time tasks, tasks
 * someone else narrowed, and affinityd itself, unless a policy says
 * otherwise (the shipped exclusions, README.md's Safety). See match.h for the order of the checks.
 */
#include <fnmatch.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"
#include "detect/match.h"

static bool glob_any(char * const *globs, const char *s) {
        if (!s)
                return false;
        for (; *globs; globs++)
                if (fnmatch(*globs, s, 0) == 0)
                        return true;
        return false;
}

bool policy_matches(const struct policy *p, const struct task *t) {
        const struct policy_match *m;
        const struct proc_info *pi;

        if (!p || !t)
                return false;
        m = &p->match;
        pi = t->proc;

        if (m->kthreads != MATCH_ANY && (m->kthreads == MATCH_YES) != t->kthread)
                return false;
        if (m->realtime != MATCH_ANY && (m->realtime == MATCH_YES) != task_policy_is_rt(t->policy))
                return false;

        /* Comm= matches the thread's name or its process's (threads are often renamed) */
        if (m->comm && !glob_any(m->comm, t->comm) && !(pi && glob_any(m->comm, pi->comm)))
                return false;
        /* without the process's attributes, a list that needs them cannot match */
        if (m->exe && !(pi && glob_any(m->exe, pi->exe)))
                return false;
        if (m->cmdline && !(pi && glob_any(m->cmdline, pi->cmdline)))
                return false;
        if (m->cgroup && !(pi && glob_any(m->cgroup, pi->cgroup)))
                return false;
        if (m->unit && !(pi && glob_any(m->unit, pi->unit)))
                return false;
        if (m->user) {
                size_t n = strv_length(m->user);
                bool found = false;

                if (!pi)
                        return false;
                for (size_t i = 0; i < n && !found; i++)
                        found = m->uids[i] == pi->uid;
                if (!found)
                        return false;
        }
        return true;
}

bool match_cgroup_in_scope(const struct config *c, const char *cgroup, const char *cgroup_systemd) {
        return !c || !c->daemon.scope || glob_any(c->daemon.scope, cgroup) ||
               glob_any(c->daemon.scope, cgroup_systemd);
}

bool match_in_scope(const struct config *c, const struct task *t) {
        if (!c || !c->daemon.scope)
                return true;
        return t && t->proc && match_cgroup_in_scope(c, t->proc->cgroup, t->proc->cgroup_systemd);
}

const struct policy *match_exclusion_for(const struct config *c, const struct task *t, enum detector kind) {
        if (!c || !t)
                return NULL;
        for (size_t i = 0; i < c->n_policies; i++) {
                const struct policy *p = &c->policies[i];

                if (p->enabled && p->action == ACTION_EXCLUDE &&
                    (p->detector == DETECT_ALWAYS || p->detector == kind) && policy_matches(p, t))
                        return p;
        }
        return NULL;
}

bool match_affinity_narrowed(const struct snapshot *s, const struct task *t) {
        cpumask_t ref;

        if (!s || !s->topo || !t)
                return false;
        ref = snapshot_usable(s);
        if (!cpumask_empty(&s->topo->self_allowed)) {
                cpumask_t both = cpumask_and(&ref, &s->topo->self_allowed);
                if (!cpumask_empty(&both))
                        ref = both;
        }
        return !cpumask_subset(&ref, &t->allowed);
}

const struct policy *match_policy_for(const struct config *c, const struct snapshot *s, const struct task *t,
                                      enum detector kind, pid_t self_pid, unsigned flags, const char **ret_why) {
        const struct policy *best = NULL;
        const char *why = NULL;

        if (!c || !t) {
                why = "no configuration";
                goto none;
        }

        best = match_exclusion_for(c, t, kind);
        if (best) {
                why = best->excluded_why ? best->excluded_why : "excluded by policy";
                best = NULL;
                goto none;
        }
        if (task_is_kthread(t)) {
                why = "kernel thread";
                goto none;
        }
        if (self_pid > 0 && (t->id.pid == self_pid || t->id.tid == self_pid)) {
                why = "affinityd itself";
                goto none;
        }
        if (!match_in_scope(c, t)) {
                why = "outside Scope=";
                goto none;
        }

        for (size_t i = 0; i < c->n_policies; i++) {
                const struct policy *p = &c->policies[i];

                if (!p->enabled || p->detector != kind || p->action == ACTION_EXCLUDE)
                        continue;
                /* strictly lower wins, so among equals the first loaded stays */
                if (best && p->priority >= best->priority)
                        continue;
                if (policy_matches(p, t))
                        best = p;
        }
        if (!best) {
                why = "no policy matches";
                goto none;
        }
        if (task_policy_is_rt(t->policy) && !best->allow_realtime) {
                why = "real-time task";
                goto none;
        }
        /* Even with AllowNarrowed=yes: those CPUs are the container's by contract
         * (the kubelet's static policy), not a narrowing someone may want undone. */
        if (!(flags & MATCH_AFFINITY_OURS) && !t->affinity_ours && s &&
            !cpumask_empty(&s->coexist.kubelet_exclusive) && !cpumask_empty(&t->allowed) &&
            cpumask_subset(&t->allowed, &s->coexist.kubelet_exclusive)) {
                why = "on CPUs the kubelet gave a container";
                goto none;
        }
        if (!(flags & MATCH_AFFINITY_OURS) && !t->affinity_ours && !best->allow_narrowed &&
            match_affinity_narrowed(s, t)) {
                why = "affinity narrowed by someone else";
                goto none;
        }
        if (ret_why)
                *ret_why = NULL;
        return best;

none:
        if (ret_why)
                *ret_why = why;
        return NULL;
}

const struct policy *detect_policy_for(const struct config *c, const struct snapshot *s, const struct task *t,
                                       enum detector kind, pid_t self_pid, const char **ret_why) {
        return match_policy_for(c, s, t, kind, self_pid, 0, ret_why);
}
