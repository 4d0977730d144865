/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
int main(void) { puts("affctl: being built"); return 0; }
