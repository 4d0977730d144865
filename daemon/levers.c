/* SPDX-License-Identifier: GPL-2.0-or-later */
/* STUB: placeholder so the tree links; replaced by its owner. */
#include <errno.h>
#include "levers.h"

int levers_new(const char *root, struct levers **ret) { return -EOPNOTSUPP; }
struct levers *levers_free(struct levers *l) { return NULL; }
int levers_probe(struct levers *l, struct lever_caps *ret) { return -EOPNOTSUPP; }
int levers_features_list(struct levers *l, char ***ret_names, bool **ret_enabled, size_t *ret_n) { return -EOPNOTSUPP; }
bool levers_feature_known(struct levers *l, const char *name) { return false; }
int levers_weight_get(void *userdata, const char *cgroup, uint64_t *ret) { return -EOPNOTSUPP; }
int levers_weight_set(void *userdata, const char *cgroup, uint64_t weight) { return -EOPNOTSUPP; }
int levers_feature_get(void *userdata, const char *name, bool *ret_enabled) { return -EOPNOTSUPP; }
int levers_feature_set(void *userdata, const char *name, bool enable) { return -EOPNOTSUPP; }
int levers_sysctl_get(void *userdata, const char *name, char *buf, size_t size) { return -EOPNOTSUPP; }
int levers_sysctl_set(void *userdata, const char *name, const char *value) { return -EOPNOTSUPP; }
uint64_t levers_weight_to_shares(uint64_t weight) { return 1024; }
uint64_t levers_shares_to_weight(uint64_t shares) { return 100; }
