/* SPDX-License-Identifier: BSD-2-Clause */
/* User-space shim (tests/fuzz): everything lives in linux/types.h here. */
#include <linux/types.h>
