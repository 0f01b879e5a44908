// SPDX-License-Identifier: BSD-2-Clause
/*
 * The library's device calls without the module: they must fail with the
 * errno that tells a user what is wrong, and never touch the output.
 */
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "tap.h"

int main(void)
{
	struct sluice_module_info info, orig;
	int fd;

	memset(&info, 0x5a, sizeof(info));
	orig = info;

	tap_eq(sluice_dev_open("/nonexistent/sluice"), -ENOENT,
	       "open of a missing device is -ENOENT");
	tap_eq(sluice_module_query("/nonexistent/sluice", &info), -ENOENT,
	       "query without the module is -ENOENT");
	tap_ok(!memcmp(&info, &orig, sizeof(info)), "failed query leaves info untouched");

	/* /dev/null opens but is no Sluice device. */
	tap_eq(sluice_module_query("/dev/null", &info), -ENOTTY,
	       "query of a non-Sluice device is -ENOTTY");
	tap_ok(!memcmp(&info, &orig, sizeof(info)), "-ENOTTY leaves info untouched");

	fd = sluice_dev_open("/dev/null");
	tap_ok(fd >= 0, "sluice_dev_open returns an fd");
	if (fd >= 0) {
		tap_ok(fcntl(fd, F_GETFD) & FD_CLOEXEC, "the fd is close-on-exec");
		close(fd);
	}
	return tap_done();
}
