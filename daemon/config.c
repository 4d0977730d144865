/* SPDX-License-Identifier: GPL-2.0-or-later */
/* STUB: placeholder so the tree links; replaced by its owner. */
#include <errno.h>
#include "config.h"

struct config *config_new(void) { return NULL; }
struct config *config_free(struct config *c) { return NULL; }
void config_errors_clear(struct config_errors *e) {}
int config_load(const struct config_paths *paths, struct config **ret, struct config_errors *ret_errors) { return -EOPNOTSUPP; }
int config_load_files(char * const *files, struct config **ret, struct config_errors *ret_errors) { return -EOPNOTSUPP; }
int config_print(const struct config *c, FILE *f) { return -EOPNOTSUPP; }
const char *detector_to_string(enum detector d) { return "?"; }
const char *policy_action_to_string(enum policy_action a) { return "?"; }
