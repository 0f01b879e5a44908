/* SPDX-License-Identifier: BSD-2-Clause */
/* sluice run and sluice fds (run.c). */
#ifndef SLUICE_TOOLS_RUN_H
#define SLUICE_TOOLS_RUN_H

int cmd_run(int argc, char **argv);
int cmd_fds(const char *name);

#endif /* SLUICE_TOOLS_RUN_H */
