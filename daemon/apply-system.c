/* SPDX-License-Identifier: GPL-2.0-or-later */
/* STUB: placeholder so the tree links; replaced by its owner. */
#include <errno.h>
#include "apply.h"

const struct apply_ops apply_ops_system = {
        .weight_get = levers_weight_get, .weight_set = levers_weight_set,
        .feature_get = levers_feature_get, .feature_set = levers_feature_set,
        .sysctl_get = levers_sysctl_get, .sysctl_set = levers_sysctl_set,
};
