/* SPDX-License-Identifier: GPL-2.0-or-later */
/* STUB: placeholder so the tree links; replaced by its owner. */
#include <errno.h>
#include "plan.h"

struct plan_state *plan_state_new(void) { return NULL; }
struct plan_state *plan_state_free(struct plan_state *s) { return NULL; }
int plan_state_block(struct plan_state *s, const char *key, uint64_t until_usec, const char *why) { return -EOPNOTSUPP; }
struct plan_target_state *plan_state_get(struct plan_state *s, const char *key) { return NULL; }
void action_list_clear(struct action_list *l) {}
int action_list_add(struct action_list *l, const struct action *a) { return -EOPNOTSUPP; }
int plan_run(struct plan_state *state, const struct plan_input *in, struct action_list *out) { return 0; }
