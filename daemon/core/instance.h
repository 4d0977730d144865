/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/protocol.h"

/*
 * One affinityd per machine. Two daemons act on the same tasks whatever
 * runtime dirs they were given, and each restores only its own journal, so
 * the second would undo or pin under the first's feet and leak its pins
 * after a crash. The lock is <root>/run/affinityd/instance.lock, in the
 * default runtime dir whatever --runtime-dir says (the root prefix names
 * the machine: a daemon reading a fixture tree locks inside it; the unit's
 * ProtectSystem=strict leaves only its RuntimeDirectory= writable in /run),
 * flock()ed for the daemon's life; it holds "PID RUNTIME-DIR" so the one
 * refused can name the holder.
 */
#define INSTANCE_LOCK_DIR AFF_RUNTIME_DIR
#define INSTANCE_LOCK_NAME "instance.lock"
#define INSTANCE_LOCK INSTANCE_LOCK_DIR "/" INSTANCE_LOCK_NAME
/* A predecessor killed an instant ago still holds it until it has exited. */
#define INSTANCE_WAIT_USEC (5 * UINT64_C(1000000))

/*
 * Take the lock, waiting up to wait_usec for a holder to go. Returns the
 * lock's fd (keep it open); -EBUSY with msg saying who holds it; -ENOENT
 * when <root>/run does not exist (no machine-wide place to lock: the
 * caller decides); other -errno. ret_prev_dir gets the runtime dir of the
 * instance that held it last when that was another one ("" if not).
 */
int instance_lock(const char *root, const char *runtime_dir, uint64_t wait_usec, char *msg, size_t msg_size,
                  char *ret_prev_dir, size_t prev_size);

/* After a stop that restored everything: the lock names no runtime dir,
 * for the next instance has nothing to restore from this one's. */
int instance_forget(int fd);
