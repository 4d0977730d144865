/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>

#include "common/util.h"
#include "sample/sample-table.h"
#include "sample/snapshot.h"

const struct task *snapshot_find_task(const struct snapshot *s, pid_t tid) {
        if (!s)
                return NULL;
        if (s->task_index) {
                uint32_t i;

                if (sample_table_get(s->task_index, tid, &i) && i < s->n_tasks && s->tasks[i].id.tid == tid)
                        return &s->tasks[i];
                return NULL;
        }
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i].id.tid == tid)
                        return &s->tasks[i];
        return NULL;
}

const struct task *snapshot_find_id(const struct snapshot *s, const struct task_id *id) {
        const struct task *t = snapshot_find_task(s, id->tid);

        return t && task_id_equal(&t->id, id) ? t : NULL;
}

const struct wake_edge *snapshot_find_edge(const struct snapshot *s, pid_t waker, pid_t wakee) {
        for (size_t i = 0; s && s->edges && i < s->n_edges; i++)
                if (s->edges[i].waker_tid == waker && s->edges[i].wakee_tid == wakee)
                        return &s->edges[i];
        return NULL;
}

double snapshot_pair_response_usec(const struct snapshot *s, pid_t a, pid_t b) {
        const struct wake_edge *ab = snapshot_find_edge(s, a, b), *ba = snapshot_find_edge(s, b, a);

        /* Both, or the shorter may be the one missing and the longer (a
         * server's wait for the next request) would pass for the answer.
         * 0 counts as none: edges built without the field. */
        if (!ab || !ba || !(ab->response_usec > 0) || !(ba->response_usec > 0))
                return NAN;
        return MIN(ab->response_usec, ba->response_usec);
}

double snapshot_pair_new_response_usec(const struct snapshot *s, pid_t a, pid_t b) {
        return s->edges_kept ? NAN : snapshot_pair_response_usec(s, a, b);
}

cpumask_t snapshot_usable(const struct snapshot *s) {
        cpumask_t u = topology_usable(s->topo);

        return cpumask_andnot(&u, &s->coexist.kubelet_exclusive);
}

const struct memnode *snapshot_find_memnode(const struct snapshot *s, const struct task *t) {
        pid_t pid;

        if (!s || !t)
                return NULL;
        pid = t->proc ? t->proc->pid : t->id.pid;
        for (size_t i = 0; i < s->n_memnodes; i++) {
                const struct memnode *e = &s->memnodes[i];

                if (e->pid == pid && (!t->proc || e->start_time == t->proc->start_time) && e->total_kib > 0)
                        return e;
        }
        return NULL;
}
