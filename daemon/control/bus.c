/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "control/bus.h"
#include "common/protocol.h"
#include "common/util.h"
#include "core/log.h"

/*
 * The private socket is open to every local user (reads are not secret),
 * and the loop is one thread, so what one user can make it hold is
 * bounded, as systemd bounds its own servers (varlink: connections in
 * total and per UID). Measured before the bounds: 5,000 idle connections
 * that never finished authenticating cost ~42 s of daemon CPU (sd-bus does
 * work per connection on each loop iteration: N²), and root's affctl
 * status took 7 s.
 *  - at most BUS_PEERS_MAX connections, of which BUS_PEERS_ROOT_RESERVE
 *    only root may take, so that root's affctl always gets in;
 *  - at most BUS_PEERS_PER_UID per other user;
 *  - a connection not through authentication and Hello within
 *    BUS_AUTH_USEC is dropped, and any connection idle for BUS_IDLE_USEC
 *    (affctl makes one call and leaves).
 */
#define BUS_PEERS_MAX 128
#define BUS_PEERS_ROOT_RESERVE 32
#define BUS_PEERS_PER_UID 16
#define BUS_AUTH_USEC (2 * USEC_PER_SEC)
#define BUS_IDLE_USEC (60 * USEC_PER_SEC)
#define BUS_REAP_USEC (500 * USEC_PER_MSEC)
/* replies written to a peer and not read yet, past which it is dropped: affctl reads each at once */
#define BUS_UNREAD_REPLIES_MAX 16

struct bus_peer {
        sd_bus *bus;
        uid_t uid;
        uint64_t accepted_usec;
};

struct bus_server {
        const struct bus_methods *methods;
        struct manager *manager;
        sd_event *event;
        const struct log_target *log;
        char *socket_path;
        int listen_fd;
        sd_event_source *listen_source;
        sd_event_source *reap_timer;
        sd_bus *system_bus;
        struct bus_peer peers[BUS_PEERS_MAX];
        unsigned n_peers;
        uint64_t refused;              /* connections refused by the bounds, for the log */
};

/* Reply with a JSON document as one string and drop our reference. */
static int reply_json(sd_bus_message *m, struct json_object *o) {
        int r = sd_bus_reply_method_return(m, "s",
                                           json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return r;
}

/* The end of every method: the manager's -errno as a D-Bus error, or its JSON. */
static int reply_or_error(sd_bus_message *m, sd_bus_error *error, int r, struct json_object *o) {
        if (r < 0) {
                json_object_put(o);
                return sd_bus_error_set_errnof(error, r, "%s", strerror(-r));
        }
        return reply_json(m, o);
}

#define JSON_METHOD(fn, call)                                                                \
        static int fn(sd_bus_message *m, void *userdata, sd_bus_error *error) {             \
                struct bus_server *b = userdata;                                             \
                struct json_object *o = NULL;                                                \
                int r = (call); /* before reading o: argument order is unspecified */       \
                return reply_or_error(m, error, r, o);                                       \
        }

JSON_METHOD(method_status, b->methods->status(b->manager, &o))
JSON_METHOD(method_actions, b->methods->actions(b->manager, &o))
JSON_METHOD(method_pairs, b->methods->pairs(b->manager, &o))
JSON_METHOD(method_hogs, b->methods->hogs(b->manager, &o))
JSON_METHOD(method_reload, b->methods->reload(b->manager, &o))

static int method_tasks(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct bus_server *b = userdata;
        struct json_object *o = NULL;
        uint32_t limit;
        int r;

        r = sd_bus_message_read(m, "u", &limit);
        if (r < 0)
                return r;
        r = b->methods->tasks(b->manager, limit, &o);
        return reply_or_error(m, error, r, o);
}

/* Answered before anything else, so a client of another version stops before misreading a reply. */
static int method_protocol(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "u", (uint32_t) AFF_PROTOCOL_VERSION);
}

/* A method of one PID (explain, revert): read it, ask the manager, reply.
 * no_such_task: -ESRCH is AFF_BUS_ERROR_NO_SUCH_TASK, not an errno. */
static int pid_method(sd_bus_message *m, struct bus_server *b, sd_bus_error *error,
                      int (*call)(struct manager *m, pid_t pid, struct json_object **ret), bool no_such_task) {
        struct json_object *o = NULL;
        uint32_t pid;
        int r;

        r = sd_bus_message_read(m, "u", &pid);
        if (r < 0)
                return r;
        r = call(b->manager, (pid_t) pid, &o);
        if (r == -ESRCH && no_such_task)
                return sd_bus_error_setf(error, AFF_BUS_ERROR_NO_SUCH_TASK,
                                         "no process %u is known to affinityd", pid);
        return reply_or_error(m, error, r, o);
}

static int method_explain(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct bus_server *b = userdata;

        return pid_method(m, b, error, b->methods->explain, true);
}

static int method_revert(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct bus_server *b = userdata;

        return pid_method(m, b, error, b->methods->revert, false);
}

static int method_set_dry_run(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct bus_server *b = userdata;
        struct json_object *o = NULL;
        int on, r;

        r = sd_bus_message_read(m, "b", &on);
        if (r < 0)
                return r;
        r = b->methods->set_dry_run(b->manager, on, &o);
        return reply_or_error(m, error, r, o);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD(AFF_METHOD_PROTOCOL, AFF_SIG_PROTOCOL, "u", method_protocol, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(AFF_METHOD_STATUS, AFF_SIG_STATUS, "s", method_status, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(AFF_METHOD_TASKS, AFF_SIG_TASKS, "s", method_tasks, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(AFF_METHOD_ACTIONS, AFF_SIG_ACTIONS, "s", method_actions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(AFF_METHOD_EXPLAIN, AFF_SIG_EXPLAIN, "s", method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(AFF_METHOD_PAIRS, AFF_SIG_PAIRS, "s", method_pairs, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(AFF_METHOD_HOGS, AFF_SIG_HOGS, "s", method_hogs, SD_BUS_VTABLE_UNPRIVILEGED),
        /* No UNPRIVILEGED flag: sd-bus lets only root call these. */
        SD_BUS_METHOD(AFF_METHOD_RELOAD, AFF_SIG_RELOAD, "s", method_reload, 0),
        SD_BUS_METHOD(AFF_METHOD_REVERT, AFF_SIG_REVERT, "s", method_revert, 0),
        SD_BUS_METHOD(AFF_METHOD_SET_DRY_RUN, AFF_SIG_SET_DRY_RUN, "s", method_set_dry_run, 0),
        SD_BUS_VTABLE_END,
};

static void peer_drop(struct bus_server *b, unsigned i) {
        sd_bus_detach_event(b->peers[i].bus);
        sd_bus_close_unref(b->peers[i].bus);
        b->peers[i] = b->peers[--b->n_peers];
}

static int on_peer_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        struct bus_server *b = userdata;
        sd_bus *bus = sd_bus_message_get_bus(m);

        for (unsigned i = 0; i < b->n_peers; i++)
                if (b->peers[i].bus == bus) {
                        peer_drop(b, i);
                        break;
                }
        return 0;
}

/* Drop connections past their deadline; O(BUS_PEERS_MAX) twice a second. */
static int on_reap(sd_event_source *s, uint64_t usec, void *userdata) {
        struct bus_server *b = userdata;
        uint64_t now = util_now_usec();

        for (unsigned i = b->n_peers; i > 0; i--) {
                struct bus_peer *p = &b->peers[i - 1];
                uint64_t nq = 0, nw = 0;

                /* replies it does not read pile up in the daemon (each a
                 * whole status, and sd-bus queues hundreds of thousands) */
                if (sd_bus_get_n_queued_write(p->bus, &nw) >= 0 && nw > BUS_UNREAD_REPLIES_MAX)
                        peer_drop(b, i - 1);
                else if (sd_bus_is_ready(p->bus) <= 0) {
                        if (now - p->accepted_usec > BUS_AUTH_USEC)
                                peer_drop(b, i - 1);
                } else if (now - p->accepted_usec > BUS_IDLE_USEC &&
                           sd_bus_get_n_queued_read(p->bus, &nq) >= 0 && nq == 0)
                        peer_drop(b, i - 1);
        }
        (void) sd_event_source_set_time(s, usec + BUS_REAP_USEC);
        return 0;
}

/* May a connection of uid come in? The bounds above. */
static bool peer_admit(const struct bus_server *b, uid_t uid) {
        unsigned same = 0;

        if (b->n_peers >= BUS_PEERS_MAX)
                return false;
        if (uid == 0)
                return true;
        if (b->n_peers >= BUS_PEERS_MAX - BUS_PEERS_ROOT_RESERVE)
                return false;
        for (unsigned i = 0; i < b->n_peers; i++)
                same += b->peers[i].uid == uid;
        return same < BUS_PEERS_PER_UID;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct bus_server *b = userdata;
        _cleanup_close_ int nfd = -1;
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        sd_bus *bus = NULL;
        sd_id128_t id;
        int r;

        nfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (nfd < 0)
                return 0; /* transient (EAGAIN, EMFILE): the listener stays */
        /* the kernel's word for who connected, before any byte is read */
        if (getsockopt(nfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !peer_admit(b, cred.uid)) {
                if (b->refused++ % 1000 == 0)
                        log_fields(b->log, LOG_NOTICE, NULL, "control socket: connection of uid %u refused (%u open, "
                                           "at most %u, %u per user): %" PRIu64 " refused so far",
                                           (unsigned) cred.uid, b->n_peers, BUS_PEERS_MAX, BUS_PEERS_PER_UID,
                                           b->refused);
                return 0;
        }

        r = sd_id128_randomize(&id);
        if (r < 0)
                return 0;
        r = sd_bus_new(&bus);
        if (r < 0)
                return 0;
        r = sd_bus_set_fd(bus, nfd, nfd);
        if (r < 0) {
                sd_bus_unref(bus);
                return 0;
        }
        /* the bus owns it now: its unref closes it, whatever fails below (a
         * second close would take a number reused meanwhile, a calibration's
         * pipe end) */
        TAKE_FD(nfd);
        if ((r = sd_bus_set_server(bus, 1, id)) < 0 ||
            (r = sd_bus_set_anonymous(bus, 1)) < 0 ||
            /* The caller's uid decides what sd-bus lets them call. */
            (r = sd_bus_negotiate_creds(bus, 1, SD_BUS_CREDS_PID | SD_BUS_CREDS_UID |
                                                        SD_BUS_CREDS_EUID | SD_BUS_CREDS_EFFECTIVE_CAPS)) < 0 ||
            (r = sd_bus_add_object_vtable(bus, NULL, AFF_BUS_PATH, AFF_BUS_INTERFACE,
                                          manager_vtable, b)) < 0 ||
            (r = sd_bus_add_match(bus, NULL,
                                  "type='signal',path='/org/freedesktop/DBus/Local',"
                                  "interface='org.freedesktop.DBus.Local',member='Disconnected'",
                                  on_peer_disconnected, b)) < 0 ||
            (r = sd_bus_start(bus)) < 0 ||
            (r = sd_bus_attach_event(bus, sd_event_source_get_event(s), SD_EVENT_PRIORITY_NORMAL)) < 0) {
                sd_bus_unref(bus);
                return 0;
        }
        b->peers[b->n_peers++] = (struct bus_peer) { .bus = bus, .uid = cred.uid, .accepted_usec = util_now_usec() };
        return 0;
}

int bus_server_new(const struct bus_methods *methods, struct manager *m, sd_event *event,
                   const struct log_target *log, const char *runtime_dir, struct bus_server **ret) {
        struct bus_server *b;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->methods = methods;
        b->manager = m;
        b->event = event;
        b->log = log;
        b->listen_fd = -1;
        if (asprintf(&b->socket_path, "%s/%s", runtime_dir, AFF_BUS_SOCKET) < 0) {
                b->socket_path = NULL;
                r = -ENOMEM;
                goto fail;
        }
        if (strlen(b->socket_path) >= sizeof(sa.sun_path)) {
                r = -ENAMETOOLONG;
                goto fail;
        }
        strcpy(sa.sun_path, b->socket_path);

        b->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (b->listen_fd < 0) {
                r = -errno;
                goto fail;
        }
        (void) unlink(b->socket_path);
        if (bind(b->listen_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = -errno;
                goto fail;
        }
        /* Reads are open to every local user; sd-bus guards the root-only methods. */
        (void) chmod(b->socket_path, 0666);
        if (listen(b->listen_fd, 64) < 0) {
                r = -errno;
                goto fail;
        }
        r = sd_event_add_io(event, &b->listen_source, b->listen_fd, EPOLLIN, on_accept, b);
        if (r < 0)
                goto fail;
        r = sd_event_add_time(event, &b->reap_timer, CLOCK_MONOTONIC, util_now_usec() + BUS_REAP_USEC,
                              100 * USEC_PER_MSEC, on_reap, b);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(b->reap_timer, SD_EVENT_ON);
        *ret = b;
        return 0;
fail:
        bus_server_free(b);
        return r;
}

int bus_server_attach_system(struct bus_server *b) {
        sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0)
                return r;
        if ((r = sd_bus_add_object_vtable(bus, NULL, AFF_BUS_PATH, AFF_BUS_INTERFACE,
                                          manager_vtable, b)) < 0 ||
            (r = sd_bus_request_name(bus, AFF_BUS_NAME, 0)) < 0 ||
            (r = sd_bus_attach_event(bus, b->event, SD_EVENT_PRIORITY_NORMAL)) < 0) {
                sd_bus_flush_close_unref(bus);
                return r;
        }
        b->system_bus = bus;
        return 0;
}

struct bus_server *bus_server_free(struct bus_server *b) {
        if (!b)
                return NULL;
        sd_event_source_disable_unref(b->listen_source);
        sd_event_source_disable_unref(b->reap_timer);
        while (b->n_peers > 0)
                peer_drop(b, b->n_peers - 1);
        if (b->listen_fd >= 0)
                close(b->listen_fd);
        if (b->socket_path)
                (void) unlink(b->socket_path);
        free(b->socket_path);
        if (b->system_bus) {
                sd_bus_detach_event(b->system_bus);
                sd_bus_flush_close_unref(b->system_bus);
        }
        free(b);
        return NULL;
}
