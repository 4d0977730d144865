/* SPDX-License-Identifier: GPL-2.0-or-later */
/* STUB: placeholder so the tree links; replaced by its owner. */
#include <errno.h>
#include "apply.h"

int applier_new(const char *runtime_dir, const struct apply_ops *ops, void *userdata, struct applier **ret) { return -EOPNOTSUPP; }
struct applier *applier_free(struct applier *a) { return NULL; }
int applier_recover(struct applier *a) { return 0; }
int applier_apply(struct applier *a, const struct action *act, uint64_t now_usec, bool dry_run) { return -EOPNOTSUPP; }
int applier_restore_all(struct applier *a) { return 0; }
int applier_restore_pid(struct applier *a, pid_t pid) { return 0; }
int applier_reconcile(struct applier *a) { return 0; }
int applier_list(struct applier *a, const struct managed **ret, size_t *ret_n) { *ret = NULL; *ret_n = 0; return 0; }
