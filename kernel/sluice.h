/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internal declarations shared by the files of sluice.ko.
 */
#ifndef _SLUICE_INTERNAL_H
#define _SLUICE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/types.h>
#include <uapi/sluice.h>

#define SLUICE_MODULE_VERSION	"0.1.0"

/* ioctl commands by _IOC_NR; the table in chrdev.c is indexed by these. */
enum sluice_cmd_nr {
	SLUICE_NR_VERSION = _IOC_NR(SLUICE_IOC_VERSION),
	SLUICE_NR_COUNT,
};

struct sluice_cmd_stats {
	atomic64_t calls;
	atomic64_t errors;
};

/* Module-wide counters, shown in debugfs. */
struct sluice_stats {
	atomic_t open_files;
	atomic64_t unknown_cmds;
	struct sluice_cmd_stats cmd[SLUICE_NR_COUNT];
};

extern struct sluice_stats sluice_stats;

const char *sluice_cmd_name(unsigned int nr);

/* uarg.c: extensible ioctl argument copying */
int sluice_arg_in(void *karg, size_t ksize, size_t min_size,
		  const void __user *uarg);
int sluice_arg_out(void __user *uarg, void *karg, size_t ksize);

/* chrdev.c */
int sluice_chrdev_init(void);
void sluice_chrdev_exit(void);

/* debugfs.c */
void sluice_debugfs_init(void);
void sluice_debugfs_exit(void);

#endif /* _SLUICE_INTERNAL_H */
