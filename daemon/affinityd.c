/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
int main(void) { puts("affinityd: being built"); return 0; }
