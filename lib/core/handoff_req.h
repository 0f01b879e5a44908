/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `sluice handoff PID FD` (tools/handoff.c) and the process's agent
 * (lib/preload/agent.c): one datagram each way on an AF_UNIX socket with
 * an abstract name, "sluice-handoff-PID" (SL_HO_NAME), which the process
 * holds.  The process learns who asks from the kernel (SCM_CREDENTIALS),
 * and answers to the asker's own (autobound) name.
 */
#ifndef SLUICE_CORE_HANDOFF_REQ_H
#define SLUICE_CORE_HANDOFF_REQ_H

#include <stdint.h>

#define SL_HO_NAME	"sluice-handoff-%d"
#define SL_HO_MAGIC	0x48644f31u	/* "HdO1" */

/* The request: hand fd of the receiving process to the kernel. */
struct sl_ho_req {
	uint32_t magic;
	int32_t fd;
};

/* The answer: err 0, the fd is a kernel socket now; else an errno and
 * the socket is as it was. */
struct sl_ho_ans {
	uint32_t magic;
	int32_t fd;
	int32_t err;
};

#endif
