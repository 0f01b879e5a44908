// SPDX-License-Identifier: BSD-2-Clause
/*
 * One devlink parameter's value, read over generic netlink, for sluice
 * doctor (mlx5's flow_steering_mode: "dmfs" or "smfs", a runtime string
 * parameter, Documentation/networking/devlink/mlx5.rst; the driver has no
 * module parameter or sysfs file for it).  Reading needs no privilege
 * (the kernel's devlink PARAM_GET has no GENL_ADMIN_PERM).
 *
 * The exchange: CTRL_CMD_GETFAMILY "devlink" gives the family's id; then
 * DEVLINK_CMD_PARAM_GET with BUS_NAME, DEV_NAME, PARAM_NAME answers with
 * PARAM { NAME, TYPE, VALUES_LIST { VALUE { CMODE, DATA } ... } }.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/devlink.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "cmds.h"

#define NL_BUF	8192

struct nlmsg {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char attrs[512];
};

/* Append attribute type with len bytes of data; 0 or -ENOSPC. */
static int put_attr(struct nlmsg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)m + NLMSG_ALIGN(m->n.nlmsg_len));
	size_t total = NLA_HDRLEN + len;

	if (NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(total) > sizeof(*m))
		return -ENOSPC;
	a->nla_type = type;
	a->nla_len = (uint16_t)total;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	m->n.nlmsg_len = (uint32_t)(NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(total));
	return 0;
}

static int put_str(struct nlmsg *m, uint16_t type, const char *s)
{
	return put_attr(m, type, s, strlen(s) + 1);
}

/* Send m, take one answer into buf; its length, or -errno (the kernel's
 * error, or -EIO for an answer that is not one). */
static int exchange(int fd, struct nlmsg *m, char *buf, size_t len)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h;
	ssize_t n;

	if (sendto(fd, m, m->n.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	n = recv(fd, buf, len, 0);
	if (n < 0)
		return -errno;
	h = (struct nlmsghdr *)buf;
	if (!NLMSG_OK(h, (size_t)n))
		return -EIO;
	if (h->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(h);

		return e->error ? e->error : -EIO;
	}
	return (int)n;
}

static void *attr_data(struct nlattr *a)
{
	return (char *)a + NLA_HDRLEN;
}

static size_t attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

/* The first attribute of type among the len bytes of attributes at start
 * (an answer's, or a nest's), each checked to lie inside; NULL if none. */
static struct nlattr *attr_find(void *start, size_t len, uint16_t type)
{
	char *p = start, *end = p + len;

	while (p + NLA_HDRLEN <= end) {
		struct nlattr *a = (struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
			return NULL;
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		p += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

/* The attributes of the generic netlink message h. */
static void *msg_attrs(struct nlmsghdr *h, size_t *len)
{
	*len = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	return (char *)NLMSG_DATA(h) + GENL_HDRLEN;
}

/* The generic netlink family id of devlink; >0, or -errno (-ENOENT: the
 * kernel has no devlink). */
static int family_id(int fd, char *buf)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlattr *a;
	struct nlmsg m;
	void *attrs;
	size_t len;
	int n;

	memset(&m, 0, sizeof(m));
	m.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.n.nlmsg_type = GENL_ID_CTRL;
	m.n.nlmsg_flags = NLM_F_REQUEST;
	m.n.nlmsg_seq = 1;
	m.g.cmd = CTRL_CMD_GETFAMILY;
	m.g.version = 1;
	if (put_str(&m, CTRL_ATTR_FAMILY_NAME, DEVLINK_GENL_NAME))
		return -ENOSPC;
	n = exchange(fd, &m, buf, NL_BUF);
	if (n < 0)
		return n;
	if (h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) || h->nlmsg_len > (unsigned int)n)
		return -EIO;
	attrs = msg_attrs(h, &len);
	a = attr_find(attrs, len, CTRL_ATTR_FAMILY_ID);
	return a && attr_len(a) >= 2 ? *(uint16_t *)attr_data(a) : -EIO;
}

/* The string value in PARAM (VALUES_LIST, its first VALUE's DATA: the
 * one configuration mode a runtime parameter has). */
static int param_value(struct nlattr *param, char *out, size_t len)
{
	struct nlattr *l, *v, *d;

	l = attr_find(attr_data(param), attr_len(param), DEVLINK_ATTR_PARAM_VALUES_LIST);
	v = l ? attr_find(attr_data(l), attr_len(l), DEVLINK_ATTR_PARAM_VALUE) : NULL;
	d = v ? attr_find(attr_data(v), attr_len(v), DEVLINK_ATTR_PARAM_VALUE_DATA) : NULL;
	if (!d)
		return -ENODATA;
	snprintf(out, len, "%.*s", (int)strnlen(attr_data(d), attr_len(d)), (char *)attr_data(d));
	return 0;
}

int devlink_param_str(const char *bus, const char *dev, const char *name, char *out, size_t len)
{
	struct sockaddr_nl me = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 2 };
	static char buf[NL_BUF];
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlattr *a;
	struct nlmsg m;
	void *attrs;
	size_t alen;
	int fd, fam, n, ret;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		ret = -errno;
		goto out;
	}
	fam = family_id(fd, buf);
	if (fam < 0) {
		ret = fam;
		goto out;
	}
	memset(&m, 0, sizeof(m));
	m.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.n.nlmsg_type = (uint16_t)fam;
	m.n.nlmsg_flags = NLM_F_REQUEST;
	m.n.nlmsg_seq = 2;
	m.g.cmd = DEVLINK_CMD_PARAM_GET;
	m.g.version = DEVLINK_GENL_VERSION;
	if (put_str(&m, DEVLINK_ATTR_BUS_NAME, bus) || put_str(&m, DEVLINK_ATTR_DEV_NAME, dev) ||
	    put_str(&m, DEVLINK_ATTR_PARAM_NAME, name)) {
		ret = -ENAMETOOLONG;
		goto out;
	}
	n = exchange(fd, &m, buf, sizeof(buf));
	if (n < 0) {
		ret = n;
		goto out;
	}
	if (h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) || h->nlmsg_len > (unsigned int)n) {
		ret = -EIO;
		goto out;
	}
	attrs = msg_attrs(h, &alen);
	a = attr_find(attrs, alen, DEVLINK_ATTR_PARAM);
	ret = a ? param_value(a, out, len) : -ENODATA;
out:
	close(fd);
	return ret;
}
