/*
 * Shared by the SA clients (tools/sapaths.c, which ships with `compare --in-opensm`, and the
 * tests' tests/tools/mcjoin.c, mpquery.c): the MAD and SA header layout, big-endian field access,
 * the exit on error, the common options, opening the port and one request/response exchange
 * with the SA.
 * The including file defines `prog` (its name, for messages) and `verbose` first.
 */
#ifndef DFSSSP_RS_MAD_H
#define DFSSSP_RS_MAD_H

#include <errno.h>
#include <infiniband/umad.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* MAD header (IBA 13.4.2) and SA header (IBA 15.2.1.1): byte offsets in the 256-byte MAD */
enum {
	MAD_SIZE = 256,
	MAD_BASE_VERSION = 0,
	MAD_MGMT_CLASS = 1,
	MAD_CLASS_VERSION = 2,
	MAD_METHOD = 3,
	MAD_STATUS = 4,		/* 16 bits */
	MAD_TID = 8,		/* 64 bits */
	MAD_ATTR_ID = 16,	/* 16 bits */
	MAD_ATTR_MOD = 20,	/* 32 bits */
	SA_SM_KEY = 36,		/* 64 bits, after the 12-byte RMPP header at 24 */
	SA_ATTR_OFFSET = 44,	/* 16 bits, in 8-byte words */
	SA_COMP_MASK = 48,	/* 64 bits */
	SA_DATA = 56,		/* the record(s) */
};

enum {
	CLASS_SA = 0x03,
	SA_CLASS_VERSION = 2,
	GSI_QP = 1,
	GSI_QKEY = 0x80010000,
};

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}


/* The options every SA client takes: -C ca, -P port, -t timeout_ms, -r retries, -v. */
struct sa_opts {
	const char *ca;
	int portnum, timeout_ms, retries;
};

/* Takes getopt's option `opt` (its argument in optarg) if it is one of struct sa_opts's (or -v);
 * returns 1 if it was. */
static inline int sa_common_opt(int opt, struct sa_opts *o)
{
	switch (opt) {
	case 'C':
		o->ca = optarg;
		return 1;
	case 'P':
		o->portnum = atoi(optarg);
		return 1;
	case 't':
		o->timeout_ms = atoi(optarg);
		return 1;
	case 'r':
		o->retries = atoi(optarg);
		return 1;
	case 'v':
		verbose = 1;
		return 1;
	}
	return 0;
}

/* Finds the port `o` names (the first by default), which must know its SM, opens it and
 * registers an SA class agent speaking RMPP version `rmpp` (into *agent); returns the fd. */
static inline int sa_open(const struct sa_opts *o, umad_port_t *port, int rmpp, int *agent)
{
	int fd;

	if (umad_init() < 0)
		die("%s", "umad_init failed (no umad support? under ibsim: LD_PRELOAD the umad2sim shim)");
	if (umad_get_port(o->ca, o->portnum, port) < 0)
		die("cannot find an InfiniBand port on CA \"%s\"", o->ca ? o->ca : "(any)");
	if (port->sm_lid == 0)
		die("port %s has no SM LID yet (is the SM running and the subnet up?)", port->ca_name);
	fd = umad_open_port(port->ca_name, port->portnum);
	if (fd < 0)
		die("cannot open umad port of %s", port->ca_name);
	*agent = umad_register(fd, CLASS_SA, SA_CLASS_VERSION, rmpp, NULL);
	if (*agent < 0)
		die("%s", "cannot register an SA class agent");
	return fd;
}

static inline double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Sends the request to the SA and waits for the response `is_answer` accepts with the same
 * transaction id (the low 32 bits, as the kernel and umad2sim both put the agent in the high
 * bits). Returns the received length (at most `recv_size`), or -ETIMEDOUT. A real kernel
 * reports the timeout as a receive with status ETIMEDOUT; umad2sim has no send timeout, so the
 * receive itself times out.
 */
static inline int sa_send_and_wait(int fd, int agent, void *umad, void *resp, int recv_size, int sm_lid,
			    int timeout_ms, int (*is_answer)(const uint8_t *mad))
{
	uint8_t *req = umad_get_mad(umad);
	uint32_t tid = (uint32_t)get64(req + MAD_TID);
	double deadline;

	umad_set_addr(umad, sm_lid, GSI_QP, 0, GSI_QKEY);
	if (umad_send(fd, agent, umad, MAD_SIZE, timeout_ms, 0) < 0)
		die("umad_send failed: %s", strerror(errno));
	deadline = now_ms() + timeout_ms + 100;
	for (;;) {
		int left = (int)(deadline - now_ms());
		int len = recv_size;
		uint8_t *mad;
		int ret;

		if (left <= 0)
			return -ETIMEDOUT;
		ret = umad_recv(fd, resp, &len, left);
		if (ret < 0) {
			if (ret == -ETIMEDOUT || ret == -EAGAIN || ret == -EWOULDBLOCK ||
			    ret == -EINTR)
				continue;
			die("umad_recv failed: %s", strerror(-ret));
		}
		mad = umad_get_mad(resp);
		if ((uint32_t)get64(mad + MAD_TID) != tid) {
			if (verbose)
				fprintf(stderr, "%s: skipping a MAD of another transaction\n", prog);
			continue;
		}
		if (umad_status(resp) == ETIMEDOUT)
			return -ETIMEDOUT;
		if (umad_status(resp))
			die("receive error %s", strerror(umad_status(resp)));
		if (!is_answer(mad))
			continue;
		return len;
	}
}

#endif
