// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sluice command.  Subcommands:
 *   sluice info     library, module, sysfs and debugfs state
 *   sluice version  the library's version
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/sluice.h>

#define SYSFS_DIR	"/sys/class/misc/" SLUICE_DEVICE_NAME
#define DEBUGFS_DIR	"/sys/kernel/debug/" SLUICE_DEVICE_NAME

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice COMMAND\n"
		"  info      show the library, the loaded module, its sysfs and debugfs state\n"
		"  version   show the library version\n");
}

/* Print one sysfs value; returns 0 or -errno. */
static int print_sysfs(const char *name)
{
	char path[256], buf[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", SYSFS_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	printf("sysfs    %s = %s\n", path, buf);
	return 0;
}

/* Copy a debugfs dump to stdout, indented; returns 0 or -errno. */
static int print_debugfs(const char *name)
{
	char path[256], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", DEBUGFS_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	printf("debugfs  %s:\n", path);
	while (fgets(line, sizeof(line), f))
		printf("  %s", line);
	fclose(f);
	return 0;
}

static int cmd_info(void)
{
	struct sluice_module_info info;
	int ret, err;

	printf("library  %s (ABI %u)\n", SLUICE_LIB_VERSION, SLUICE_ABI_VERSION);
	ret = sluice_module_query(NULL, &info);
	if (ret == -ENOENT) {
		fprintf(stderr, "sluice: %s: not present: the sluice module is not loaded\n",
			SLUICE_DEVICE_PATH);
		return 1;
	}
	if (ret && ret != -EPROTONOSUPPORT) {
		fprintf(stderr, "sluice: %s: %s\n", SLUICE_DEVICE_PATH, strerror(-ret));
		return 1;
	}
	printf("module   %s (ABI %u), features 0x%" PRIx64 "\n",
	       info.module_version, info.abi_version, info.features);
	if (ret) {
		fprintf(stderr, "sluice: module ABI %u, library ABI %u: incompatible\n",
			info.abi_version, SLUICE_ABI_VERSION);
		return 1;
	}

	err = print_sysfs("abi_version");
	if (!err)
		err = print_sysfs("features");
	if (err) {
		fprintf(stderr, "sluice: %s: %s\n", SYSFS_DIR, strerror(-err));
		return 1;
	}
	err = print_debugfs("info");
	if (err)
		/* debugfs may simply not be mounted: say so, it is not fatal. */
		fprintf(stderr, "sluice: %s/info: %s (is debugfs mounted?)\n",
			DEBUGFS_DIR, strerror(-err));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "info"))
		return cmd_info();
	if (!strcmp(argv[1], "version")) {
		printf("sluice %s (ABI %u)\n", SLUICE_LIB_VERSION, SLUICE_ABI_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
