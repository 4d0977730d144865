/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The manager's state, for the files of core/ that hold it: manager.c
 * (setup, the pass, effect tracking, the loop), early-pass.c and
 * manager-reports.c (the JSON reports of the control interface,
 * read-only). Nothing outside core/ includes this; the rest of the daemon
 * sees core/manager.h.
 */

#include <stdbool.h>
#include <stdint.h>

#include "apply/apply.h"
#include "config/config.h"
#include "control/bus.h"
#include "core/log.h"
#include "core/manager.h"
#include "detect/detect.h"
#include "plan/effect.h"
#include "plan/plan.h"
#include "sample/calibrate.h"
#include "sample/memnode.h"
#include "sample/proc-connector.h"
#include "sample/sample.h"
#include "sample/wake.h"

struct manager {
        int instance_fd;               /* the machine-wide lock (instance.h), held for our life */
        char prev_runtime_dir[4096];   /* the last instance's, if not ours: its journal is restored too */
        int metrics_error;             /* last MetricsTextfile= write error (logged once), 0: fine */
        sd_event *event;
        sd_event_source *timer;
        sd_event_source *sig_term, *sig_int, *sig_hup;
        sd_event_source *pc_source;

        struct log_target log;
        char *root;
        char *runtime_dir;
        char **config_dirs;
        struct manager_options opts;

        struct config *config;
        char idle_warning[512];       /* "" or why the configuration gives the daemon nothing to do */
        struct topology *topo;
        /* /sys/.../cpu/online as last read: hotplug detection. Room for any
         * list of CPUMASK_MAX CPUs (every other one of 1024 is ~2,000
         * characters): one cut short fails every later read, and hotplug
         * would never be seen again. */
        char topo_online[4096];
        struct calibration calibration; /* what co-location buys here: at start, on hotplug, once quiet */
        struct calib_job *calib_pending; /* a starved probe still running (calibrate()) */
        uint64_t calib_retry_usec;    /* a doubtful calibration is measured again from then */
        bool calib_again;             /* ...at the end of this pass (check_calibration()) */
        double calib_again_busy;      /* how busy its CPUs were in the window before */
        struct sampler *sampler;
        struct memnode_memo *memnodes; /* pairs' memory by node, read on >1-node machines only */
        struct proc_connector *pc;
        char pc_status[160];
        struct wake_sampler *wake;
        char wake_status[160];
        char tracefs_status[160];     /* what mount_tracefs() did, for status */
        struct levers *levers;
        struct lever_caps caps;
        struct apply_system sys;
        struct applier *applier;
        struct plan_state *plan;
        struct bus_server *bus;
        char bus_status[160];

        struct snapshot *snap;        /* owned by the sampler, valid until the next pass */
        struct coexist coexist_seen;  /* other placers as last logged (coexist.h) */
        struct findings findings;
        struct action_list actions;
        struct effect_tracker effects;  /* changes waiting for the effect check's verdict */

        bool dry_run;
        uint64_t interval_usec;
        bool in_pass;                 /* events drained by the pass itself start no early pass */
        uint64_t early_tat;           /* early passes: rate limiter state (see early_next_allowed()) */
        bool recheck_was_last;        /* the pass now due was brought forward by plan_recheck_soon() */
        bool next_pass_early;         /* the pass now due was brought forward for a new process */
        /* the new processes that brought it forward or came before its
         * burst (early_check()): none alive then, no burst and no pass */
        pid_t early_askers[16];
        unsigned n_early_askers;
        bool early_askers_overflow;   /* more than fit: taken as alive */
        bool early_checked;           /* its check ran: a burst is planned before it */
        uint64_t early_regular_usec;  /* when the pass was due before it was brought forward */
        uint64_t early_refund_next;   /* a given-up pass's token is given back from then on */
        bool early_limit_said;        /* the rate limit's debug line, once until the next early pass */
        sd_event_source *early_check;
        unsigned looks_left;          /* more looks after an early pass (next_pass_gap()) */
        unsigned settled_passes;      /* passes in a row that changed nothing (note_settled()) */
        /* --dry-run: the targets of the changes it reported, hashed, a ring
         * (dry_run_repeats()): 256 targets in rotation before one is news again */
        uint64_t would_seen[256];
        size_t n_would_seen, would_seen_next;
        sd_event_source *pc_rearm;    /* listens to the proc connector again when one is allowed */
        bool early_armed;             /* the dispatch in progress brought a pass forward */
        uint64_t pass_hold_limit;     /* the coming pass was held back for a new process, and may be
                                       * held back up to this time, no later (0: not held) */
        uint64_t pc_idle_tat;         /* wake-ups for events that brought nothing forward: limiter state */
        uint64_t start_usec;
        uint64_t passes;
        uint64_t passes_early;        /* of them, brought forward for a new process */
        uint64_t actions_applied, actions_failed, actions_undone;
        uint64_t actions_looked_again; /* of actions_undone: released for a second look, not a loss */
        uint64_t last_pass_cost_usec;

        /* own cost, from getrusage between passes */
        uint64_t self_cpu_prev_usec, self_wall_prev_usec;
        double self_cpu_frac;
};

/* The daemon's own CPU time so far (getrusage), for status and the metrics textfile. */
uint64_t manager_rusage_cpu_usec(void);

/* early-pass.c: process events between passes, and when a new process
 * brings the next pass forward. */
uint64_t manager_early_next_allowed(const struct manager *m);
void manager_drain_proc_connector(struct manager *m);
int manager_on_proc_connector(sd_event_source *s, int fd, uint32_t revents, void *userdata);
