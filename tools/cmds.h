/* SPDX-License-Identifier: BSD-2-Clause */
/* The subcommands that live outside sluice.c, and what they share with it. */
#ifndef SLUICE_TOOLS_CMDS_H
#define SLUICE_TOOLS_CMDS_H

#include <stdbool.h>

struct sl_stack;

/* run.c */
int cmd_run(int argc, char **argv);
int cmd_fds(const char *name, bool json);
/* metrics.c */
int cmd_metrics(int argc, char **argv);

/* sluice.c: fn(name, where, arg) for each stack the module holds ("module"),
 * then each in /dev/shm ("shm"); -1 (errno set) if /dev/shm cannot be read. */
int for_each_stack(void (*fn)(const char *name, const char *where, void *arg), void *arg);
/* "init", "ready", "BROKEN" or "corrupt" */
const char *stack_state_name(const struct sl_stack *s);
/* "CLOSED", "LISTEN", ... "TIME_WAIT" */
const char *tcp_state_name(unsigned int st);
#define TCP_STATES	11

#endif /* SLUICE_TOOLS_CMDS_H */
