/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A small "world" that stands in for the sampler, the detector and the
 * applier around plan_run(), for the planner tests (test-plan-hog.c,
 * test-plan-spread.c). Tasks show a util, a run delay and a migration
 * rate while not pinned; each world_step() builds the snapshot, lets the
 * test's detect() fill the findings, runs plan_run(), applies the actions
 * the way the applier would (SET records the original and narrows the
 * mask, RELEASE puts it back) and calls the test's check() on what is
 * then in force.
 */

#include <stdbool.h>

#include "plan/plan.h"
#include "test-plan-machines.h"

#define MAX_TASKS 160
#define MAX_CPUS 256  /* the machines of test-plan-machines.h, up to 256 CPUs */

struct world {
        struct topo_cpu cpus[MAX_CPUS];
        struct topology topo;
        struct task tasks[MAX_TASKS];
        double mig_free[MAX_TASKS];        /* migrations/s while not pinned */
        bool in_group[MAX_TASKS];          /* test-plan-spread: covered by the spread policy */
        size_t n_tasks;
        struct wake_edge edges[8];         /* the snapshot's wake edges, as the test sets them */
        size_t n_edges;
        struct coexist coexist;            /* the snapshot's other placers (test-plan-coexist) */
        struct policy pol[2];              /* cfg.policies; the test fills them and cfg.n_policies */
        struct config cfg;
        struct plan_state *state;
        struct managed managed[256];
        size_t n_managed;
        struct findings findings;
        struct action_list out;            /* the last step's actions */
        unsigned n_sets, n_releases;       /* in the last step */
        unsigned total_sets, total_releases;
        uint64_t now;
        pid_t self_pid;                    /* the daemon's PID in plan_input (0: none) */
        bool dry_run;                      /* plan_input's: the actions are counted, not applied */

        /* Set by the test. detect: the findings of this step into w->findings (cleared before). */
        void (*detect)(struct world *w);
        /* Invariants on what is in force, after every step. */
        void (*check)(struct world *w);
};

/*
 * n_cpus online CPUs, one core each, one LLC and node; Interval=1s,
 * MaxActionsPerInterval=4, Hysteresis=3, Cooldown=30s and no policies
 * (cfg.policies is w->pol, cfg.n_policies 0); now is 1000 s.
 */
void world_init(struct world *w, int n_cpus);
void world_done(struct world *w);
/* world_init() on one of the machines of test-plan-machines.h. */
void world_init_machine(struct world *w, enum plan_machine which);

/* A SCHED_OTHER thread on last_cpu, allowed everywhere: util and run delay (ms/s) it shows, migrations/s while free. */
struct task *world_add_task(struct world *w, pid_t tid, const char *comm, double util, double delay, double mig,
                            int last_cpu);
void world_remove_task(struct world *w, pid_t tid);
struct task *world_task(struct world *w, pid_t tid);
struct managed *world_managed(struct world *w, pid_t tid);
/* CPU a task is pinned to by us, or -1. */
int world_pinned_cpu(struct world *w, pid_t tid);

/* The hog detector as detect_hogs() sees t under policy p: a finding if it is busy and
 * migrating and not pinned by us (narrowed by us: detect_policy_for would refuse it). */
void world_detect_hog(struct world *w, const struct task *t, const struct policy *p);

void world_step(struct world *w);
void world_steps(struct world *w, unsigned n);
