/* SPDX-License-Identifier: BSD-2-Clause */
/* The subcommands that live outside sluice.c, and what they share with it. */
#ifndef SLUICE_TOOLS_CMDS_H
#define SLUICE_TOOLS_CMDS_H

#include <stdbool.h>
#include <stddef.h>

struct sl_stack;

/* run.c */
int cmd_run(int argc, char **argv);
int cmd_fds(const char *name, bool json);
bool fds_is_placeholder(long pid, const char *link);
/* tcpdump.c */
int cmd_tcpdump(int argc, char **argv);
/* metrics.c */
int cmd_metrics(int argc, char **argv);
/* doctor.c */
int cmd_doctor(int argc, char **argv);
/* devlink.c: devlink parameter name of device bus/dev (a string one) into
 * out; 0 or -errno (-ENOENT: no devlink family, -ENODEV: no such device,
 * -EINVAL: no such parameter, -ENODATA: no string value). */
int devlink_param_str(const char *bus, const char *dev, const char *name, char *out, size_t len);
/* handoff.c */
int cmd_handoff(int argc, char **argv);

/* sluice.c: fn(name, where, arg) for each stack the module holds ("module"),
 * then each in /dev/shm ("shm"); -1 (errno set) if /dev/shm cannot be read. */
int for_each_stack(void (*fn)(const char *name, const char *where, void *arg), void *arg);
/* "init", "ready", "BROKEN" or "corrupt" */
const char *stack_state_name(const struct sl_stack *s);
/* "CLOSED", "LISTEN", ... "TIME_WAIT" */
const char *tcp_state_name(unsigned int st);
#define TCP_STATES	11

struct sluice_kring;
/*
 * Map the rings of a stack on a device (uapi struct sluice_kring) to read
 * them: the mapping (*len bytes; munmap() it), or NULL with *why saying
 * why not (*why empty: the stack is on no device).
 */
const struct sluice_kring *kring_map(const struct sl_stack *s, size_t *len, char *why,
				     size_t wlen);
/* The module's counters in a kring, with what each counts. */
#define KRING_COUNTERS(X)						\
	X(rx_packets, "steered to rx")					\
	X(rx_bytes, "bytes steered to rx")				\
	X(rx_drop_ring, "dropped: rx ring full")			\
	X(rx_drop_fill, "dropped: no buffer on the fill ring")		\
	X(rx_drop_size, "dropped: longer than a buffer holds")		\
	X(tx_packets, "handed to the device")				\
	X(tx_bytes, "bytes handed to the device")			\
	X(tx_drop, "refused by the device, neighbour layer or route")	\
	X(bad_index, "producer index too far ahead")			\
	X(bad_buf, "fill entries outside the region")			\
	X(bad_desc, "tx descriptors with bad length or flags")		\
	X(kicks, "tx kicks")
#define KRING_N		12

/* The first line of file path into buf, its newline taken off; 0 or -errno (sluice.c). */
int read_first_line(const char *path, char *buf, size_t len);

#endif /* SLUICE_TOOLS_CMDS_H */
