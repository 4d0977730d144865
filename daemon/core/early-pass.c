/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Early passes: the proc connector's events between passes, and the two
 * rate limiters that decide when a new process brings the next pass
 * forward (a new process may be half of a ping-pong pair) and when the
 * connector is listened to again. Part of the manager (manager-internal.h);
 * the pass itself is in manager.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "common/util.h"
#include "detect/match.h"
#include "core/manager-internal.h"

/* Listen between passes again (what came meanwhile is dispatched at once). */
static int on_pc_rearm(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;

        if (m->pc_source)
                (void) sd_event_source_set_enabled(m->pc_source, SD_EVENT_ON);
        return 0;
}

/*
 * To the millisecond: with 100 ms of slack (sd-event fires such a timer
 * at the end of its window when no other wake-up comes sooner) the 50 ms
 * off after an exit became up to 150, into the early pass a process had
 * brought forward just before. Most likely so in a CI rehearsal: a
 * process 150 ms after /bin/true (whose exit came after its start, and
 * turned listening off) never held that pass back (early-pass-hold.sh;
 * 0 of 15 runs here). These timers are few, one per burst of events.
 */
#define PC_REARM_ACCURACY_USEC USEC_PER_MSEC

static void pc_rearm_at(struct manager *m, uint64_t when) {
        if (!m->pc_rearm)
                (void) sd_event_add_time(m->event, &m->pc_rearm, CLOCK_MONOTONIC, when, PC_REARM_ACCURACY_USEC,
                                         on_pc_rearm, m);
        else if (sd_event_source_set_time(m->pc_rearm, when) >= 0)
                (void) sd_event_source_set_enabled(m->pc_rearm, SD_EVENT_ONESHOT);
}

#define EARLY_PASS_DELAY_USEC (300 * USEC_PER_MSEC)
#define EARLY_PASS_MIN_GAP_USEC (10 * USEC_PER_SEC)
/* A burst of 3 (then one per gap): the commands that start a workload
 * (a shell, `affctl status` to see the daemon is up) are new processes too
 * and must not use up the one the workload needs. */
#define EARLY_PASS_BURST 3

/* Generic cell rate algorithm: early_tat advances by the gap per early pass
 * (from the time its process came at the latest, new_process_seen()); one
 * is allowed while it is at most BURST - 1 gaps ahead. */
uint64_t manager_early_next_allowed(const struct manager *m) {
        uint64_t ahead = (EARLY_PASS_BURST - 1) * EARLY_PASS_MIN_GAP_USEC;
        return m->early_tat > ahead ? m->early_tat - ahead : 0;
}

/*
 * A new process may be half of a ping-pong pair: at a 1 s interval a pair
 * started just after a pass was seen at the next pass and, when the kernel
 * held it together in that pass's wake-up burst, fixed only at the one after
 * (`perf bench sched pipe` 0.925x hand-pinned over a 21 s run, the
 * fix 2 s in). So the next pass is brought forward to EARLY_PASS_DELAY after
 * the first new process of an interval (its threads have rates over their
 * life from 100 ms on, and the wake sampler bursts just before), at most
 * EARLY_PASS_BURST at once and then one per EARLY_PASS_MIN_GAP: on a machine
 * that forks all the time that is one extra pass every 10 s. The delay runs
 * from the event's kernel time stamp (CLOCK_MONOTONIC): an event read late,
 * after listening was off for a while, is not delayed twice; the burst
 * before the pass is then shortened to fit (EARLY_PASS_LEAD_MIN).
 */
#define EARLY_PASS_LEAD_MIN_USEC (100 * USEC_PER_MSEC)
/* After an early pass is armed, listen again this soon (new_process_seen()). */
#define EARLY_PASS_LISTEN_AGAIN_USEC (50 * USEC_PER_MSEC)
/* Older event time stamps are counted as now (new_process_seen()). */
#define EARLY_CAME_MAX_AGE_USEC (3 * EARLY_PASS_MIN_GAP_USEC)
/* The early check runs this long before the burst would start. */
#define EARLY_CHECK_MARGIN_USEC (5 * USEC_PER_MSEC)

static void early_asker_add(struct manager *m, pid_t pid) {
        for (unsigned i = 0; i < m->n_early_askers; i++)
                if (m->early_askers[i] == pid)
                        return;
        if (m->n_early_askers < ELEMENTSOF(m->early_askers))
                m->early_askers[m->n_early_askers++] = pid;
        else
                m->early_askers_overflow = true;
}

static bool early_askers_alive(const struct manager *m) {
        if (m->early_askers_overflow)
                return true;
        for (unsigned i = 0; i < m->n_early_askers; i++)
                if (sample_process_runs(m->root, m->early_askers[i]))
                        return true;
        return false;
}

/*
 * Just before the burst of a pass brought forward: is any process that
 * asked for it still there? A process gone within ~165 ms of its start (a
 * shell's command, a health check's probe, a monitoring agent's fork) has
 * no pair to find, and the pass would cost a burst and its two looks
 * theirs: beside a /bin/true every 2 s, a quiet daemon took an early
 * pass every 10 s and had the sampler on 3 % of the time, 1.3-1.8 % when
 * those were given up. Then the pass goes back to when it was due, and
 * its token is given back, once per EARLY_PASS_MIN_GAP: the workload a
 * shell starts next may need it, but a machine forking short-lived
 * processes all the time must not arm a pass, and wake the daemon for
 * it, at each one (it arms at most two per EARLY_PASS_MIN_GAP then).
 * Listening waits as after an event that brought nothing
 * (pc_idle_next_listen()).
 * The connector is drained first: a workload started meanwhile (after
 * the shell that started it) asks too, and holds the pass back to its
 * own time.
 */
static uint64_t pc_idle_next_listen(struct manager *m, uint64_t now);

static int on_early_check(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;
        uint64_t at, now;

        /* a check left from a pass that ran already (a stalled loop) */
        if (!m->next_pass_early || m->early_checked)
                return 0;
        manager_drain_proc_connector(m);
        if (!m->next_pass_early || m->early_checked || sd_event_source_get_time(m->timer, &at) < 0)
                return 0;
        m->early_checked = true;
        if (early_askers_alive(m)) {
                wake_sampler_expect_call(m->wake, at);
                return 0;
        }
        if (sd_event_source_set_time(m->timer, m->early_regular_usec) < 0)
                return 0;
        m->next_pass_early = false;
        m->pass_hold_limit = 0;
        now = util_now_usec();
        if (now >= m->early_refund_next) {
                m->early_tat -= EARLY_PASS_MIN_GAP_USEC;   /* advanced by as much when it was armed */
                m->early_refund_next = now + EARLY_PASS_MIN_GAP_USEC;
        }
        if (m->pc_source) {
                (void) sd_event_source_set_enabled(m->pc_source, SD_EVENT_OFF);
                pc_rearm_at(m, MAX(manager_early_next_allowed(m), pc_idle_next_listen(m, now)));
        }
        log_fields(&m->log, LOG_DEBUG, NULL, "new process: gone before the early pass; the pass is due at %.3f s (boot)",
                   util_boottime_s_of(m->early_regular_usec));
        return 0;
}

/*
 * The burst of the early pass due at `at`: placed now when it must start
 * about now, or after the check above, just before it would start.
 */
static void early_burst_plan(struct manager *m, uint64_t at, uint64_t now) {
        uint64_t lead = wake_sampler_burst_lead_usec(m->wake), check;
        int r;

        m->early_checked = false;
        if (lead == 0 || at < now + lead + EARLY_CHECK_MARGIN_USEC) {
                m->early_checked = true;
                wake_sampler_expect_call(m->wake, at);
                return;
        }
        check = at - lead - EARLY_CHECK_MARGIN_USEC;
        if (!m->early_check)
                r = sd_event_add_time(m->event, &m->early_check, CLOCK_MONOTONIC, check, USEC_PER_MSEC,
                                      on_early_check, m);
        else {
                r = sd_event_source_set_time(m->early_check, check);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->early_check, SD_EVENT_ONESHOT);
        }
        if (r < 0) {
                /* no check, then: the burst as before */
                m->early_checked = true;
                wake_sampler_expect_call(m->wake, at);
        }
}

/*
 * When a new process came, for the rate limit: it counts a process from
 * its event's kernel time stamp, not from when the event was read. While
 * no early pass is allowed the connector is not listened to (until one
 * is, pc_rearm_at()), so what came since the last pass (which drains it,
 * and starts nothing) is read at the moment a pass is allowed again.
 * Counted then, those events took that token, and the next for 10 s more,
 * from a process that came 10 s after the last of them: in a CI rehearsal
 * under stress-ng, early-pass.sh's affctl calls, read 6 s late, took the
 * pass its /bin/true had waited 11 s for (1 of 3 runs here). A time stamp
 * more than EARLY_CAME_MAX_AGE old is not one to count by (no spell
 * without listening is that long; a clock namespace's offset).
 */
static uint64_t process_came_usec(uint64_t event_usec, uint64_t now) {
        return event_usec > 0 && event_usec <= now && now - event_usec <= EARLY_CAME_MAX_AGE_USEC ? event_usec : now;
}

static void new_process_seen(struct manager *m, uint64_t event_usec, pid_t pid) {
        uint64_t now, came, at, next, allowed;

        if (m->in_pass || !m->timer)
                return;
        if (m->next_pass_early && !m->early_checked)
                early_asker_add(m, pid);
        now = util_now_usec();
        came = process_came_usec(event_usec, now);
        /* old news, read after its delay was over: the delay runs from now */
        event_usec = came + EARLY_PASS_DELAY_USEC < now ? now : came;
        at = MAX(event_usec + EARLY_PASS_DELAY_USEC, now + EARLY_PASS_LEAD_MIN_USEC);
        if (sd_event_source_get_time(m->timer, &next) < 0)
                return;
        if (next < at) {
                /*
                 * The regular pass comes before the new process has run long
                 * enough to be seen (its threads' rates, a wake-up burst with it
                 * in): that pass would be spent blind and the pair fixed an
                 * interval later. Measured with MariaDB + sysbench, a client
                 * started 50 ms before a pass was co-located after 1.15 s, one
                 * started 300 ms after one after 0.32 s. So the pass is held
                 * back to `at`: the same pass, later, not an extra one (no
                 * token). By EARLY_PASS_DELAY in all, so that a stream of new
                 * processes cannot hold it back for ever; not once a pass,
                 * because the first hold is often for the tool that starts
                 * the workload (a shell's fork, by a few ms) and the
                 * workload's own client comes after it.
                 */
                uint64_t limit = m->pass_hold_limit ?: next + EARLY_PASS_DELAY_USEC;

                at = MIN(at, limit);
                if (at <= next || sd_event_source_set_time(m->timer, at) < 0)
                        return;
                m->pass_hold_limit = limit;
                /* an early pass not checked yet: its check places the burst */
                if (m->wake && (!m->next_pass_early || m->early_checked))
                        wake_sampler_expect_call(m->wake, at);
                /* a batch read late holds it back by microseconds per event:
                 * a line for each said nothing */
                if (at - next >= USEC_PER_MSEC)
                        log_fields(&m->log, LOG_DEBUG, NULL,
                                   "new process: next pass held back by %" PRIu64 " ms, to %.3f s (boot)",
                                   (at - next) / USEC_PER_MSEC, util_boottime_s_of(at));
                return;
        }
        if (next <= at + EARLY_PASS_DELAY_USEC)
                return;   /* the pass is due anyway */
        if (came < manager_early_next_allowed(m)) {
                /* said once until the next early pass: the events of a
                 * spell without listening are read together */
                if (!m->early_limit_said)
                        log_fields(&m->log, LOG_DEBUG, NULL,
                                   "new process: too many early passes lately (%d at once, then one per %" PRIu64
                                   " s); the next is allowed for a process from %.3f s (boot)",
                                   EARLY_PASS_BURST, EARLY_PASS_MIN_GAP_USEC / USEC_PER_SEC,
                                   util_boottime_s_of(manager_early_next_allowed(m)));
                m->early_limit_said = true;
                return;
        }
        if (sd_event_source_set_time(m->timer, at) < 0)
                return;
        m->early_tat = MAX(m->early_tat, came) + EARLY_PASS_MIN_GAP_USEC;
        m->early_limit_said = false;
        m->early_armed = true;
        m->next_pass_early = true;
        m->early_regular_usec = next;
        m->n_early_askers = 0;
        m->early_askers_overflow = false;
        early_asker_add(m, pid);
        /*
         * Listened to again soon, not only at the early pass: the process
         * that brought it forward is often the shell or the tool that
         * starts the workload, and the workload's own process comes a few
         * hundred ms later. Heard, it holds the pass back to its own
         * +EARLY_PASS_DELAY (above, 300 ms past the pass's time at most);
         * unheard, the pass ran
         * with its client 100 ms old and the pair waited for the next one
         * (bench/servers.sh, nginx + wrk and memcached + memcaslap:
         * co-located after 1.12 s).
         */
        allowed = MIN(MAX(manager_early_next_allowed(m), at), now + EARLY_PASS_LISTEN_AGAIN_USEC);
        pc_rearm_at(m, allowed);
        early_burst_plan(m, at, now);
        log_fields(&m->log, LOG_DEBUG, NULL, "new process: next pass brought forward by %" PRIu64 " ms, to %.3f s (boot)",
                   (next - at) / USEC_PER_MSEC, util_boottime_s_of(at));
}

/*
 * Only a process the daemon may change brings a pass forward: with
 * [Daemon] Scope= set, a build next door forking hundreds of processes
 * would otherwise spend the early passes (and their rate limit) before the
 * process in scope starts. One read of /proc/PID/cgroup, only when a scope
 * is set. A child starts in its parent's cgroup: a short-lived one (a
 * shell's /bin/true, gone before the event is read) is judged by the
 * parent it was forked from (parent 0: none known).
 */
static bool new_process_in_scope(struct manager *m, pid_t pid, pid_t parent) {
        _cleanup_free_ char *cg = NULL, *sd = NULL;

        if (!m->config->daemon.scope)
                return true;
        if (sample_read_cgroup(m->root, pid, &cg, &sd) < 0 &&
            (parent <= 0 || sample_read_cgroup(m->root, parent, &cg, &sd) < 0))
                return false;
        return match_cgroup_in_scope(m->config, cg, sd);
}

static int on_proc_event(const struct proc_event *ev, void *userdata) {
        struct manager *m = userdata;
        uint64_t at = ev->timestamp_ns / NSEC_PER_USEC;

        switch (ev->what) {
        case PROC_EVENT_FORK_:
                sampler_note_fork(m->sampler, ev->pid, ev->tid);
                if (ev->pid == ev->tid && new_process_in_scope(m, ev->pid, ev->parent_pid))
                        new_process_seen(m, at, ev->pid);
                break;
        case PROC_EVENT_EXEC_:
                sampler_note_exec(m->sampler, ev->pid);
                if (new_process_in_scope(m, ev->pid, 0))
                        new_process_seen(m, at, ev->pid);
                break;
        case PROC_EVENT_EXIT_:
                sampler_note_exit(m->sampler, ev->pid, ev->tid);
                break;
        default:
                break;
        }
        return 0;
}

/*
 * The sampler acts on process events only at the next pass, so they are
 * drained at the start of each pass; between passes the fd is watched only
 * while an early pass may come (new_process_seen()): one wake-up, then off
 * until an early pass is allowed again.
 * Waking on every event cost a context switch per batch: on this shared
 * machine (~35 forks/s from builds) that was about 11 wake-ups a second, a
 * fifth of the daemon's CPU with 10,000 idle threads.
 */
void manager_drain_proc_connector(struct manager *m) {
        int r;

        if (!m->pc_source)
                return;
        r = proc_connector_dispatch(m->pc, on_proc_event, m);

        if (r == -ENOBUFS)
                sampler_note_lost(m->sampler);   /* events dropped: list /proc next pass */

        if (r < 0 && r != -EAGAIN && r != -ENOBUFS) {
                /* Keep running on the periodic scan alone (fallback). */
                snprintf(m->pc_status, sizeof(m->pc_status), "failed: %s; periodic scan only", strerror(-r));
                log_errno(&m->log, LOG_WARNING, r, "proc connector failed, using periodic scans only");
                m->pc_source = sd_event_source_disable_unref(m->pc_source);
                sampler_set_process_events(m->sampler, false);
        }
}

/*
 * Events that bring no pass forward (exits, threads, new processes when no
 * early pass is allowed) turn listening off for PC_IDLE_OFF, and for longer
 * once such wake-ups come more often than PC_IDLE_BURST per second (GCRA,
 * one per PC_IDLE_GAP). A flat second off after each one missed the
 * workload a benchmark started just after `affctl status` exited: its pair
 * waited for the regular pass (scenario 2: co-located 0.65-0.77 s in,
 * instead of ~0.35 s).
 */
#define PC_IDLE_OFF_USEC (50 * USEC_PER_MSEC)
#define PC_IDLE_GAP_USEC (500 * USEC_PER_MSEC)
#define PC_IDLE_BURST 2

static uint64_t pc_idle_next_listen(struct manager *m, uint64_t now) {
        uint64_t ahead = PC_IDLE_BURST * PC_IDLE_GAP_USEC;

        m->pc_idle_tat = MAX(m->pc_idle_tat, now) + PC_IDLE_GAP_USEC;
        return MAX(now + PC_IDLE_OFF_USEC, m->pc_idle_tat > ahead ? m->pc_idle_tat - ahead : 0);
}

int manager_on_proc_connector(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct manager *m = userdata;

        m->early_armed = false;
        manager_drain_proc_connector(m);
        if (!m->pc_source)
                return 0;
        /* Off until the early pass (new_process_seen() set the time), or
         * briefly (above) when nothing was brought forward. Passes drain
         * meanwhile. */
        (void) sd_event_source_set_enabled(m->pc_source, SD_EVENT_OFF);
        if (m->early_armed)
                return 0;
        /*
         * While a pass brought forward is due, its window stays heard every
         * EARLY_PASS_LISTEN_AGAIN: a wake-up that brought nothing (the exit
         * of the process that brought it forward, read after its fork, or
         * anyone's event machine-wide) must not spend the idle budget that
         * the workload's own start, a moment later, needs to hold that pass
         * back. Under stress-ng a CI rehearsal heard such a start 430 ms
         * late, after the pass, in 3 tries of 3 (early-pass-hold.sh). At
         * most (300 + 300) / 50 wake-ups an early pass, and at most two
         * of those per 10 s (one given up: on_early_check()).
         */
        if (m->next_pass_early)
                pc_rearm_at(m, util_now_usec() + EARLY_PASS_LISTEN_AGAIN_USEC);
        else
                pc_rearm_at(m, MAX(manager_early_next_allowed(m), pc_idle_next_listen(m, util_now_usec())));
        return 0;
}
