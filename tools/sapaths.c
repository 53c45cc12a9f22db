/*
 * sapaths: ask the SA for the PathRecord of each (source port, destination port) pair read from
 * stdin, the way an application resolving a path gets it (SubnAdmGet(PathRecord) with SGID and
 * DGID, as rdma_cm and libibverbs' helpers ask), and print the SL (and LIDs) the SA answered.
 * OpenSM takes that SL from the routing engine's path_sl callback where the engine has one.
 *
 * One query per pair: an answer holding more than one record travels by RMPP, which the umad2sim
 * shim does not segment (it cuts every MAD to 256 bytes: three PathRecords), so a query for all
 * paths from a source cannot be read in ibsim. Queries are pipelined instead: up to a window of
 * them are outstanding, matched to their answers by transaction ID; one that stays unanswered
 * (OpenSM drops requests when its SA queue is overloaded) is sent again.
 *
 * Ships with `dfsssp-rs compare --in-opensm` (compiled by build.rs, embedded in the command and
 * written to its private work directory at run time) and runs under the umad2sim shim with
 * SIM_HOST=<ibsim node name> choosing the simulated CA; it works over a real HCA as well.
 *
 * usage: sapaths [-C ca] [-P port] [-t timeout_ms] [-r retries] [-w window] [-d deadline_s] [-v]
 *   stdin:  one pair a line: "<source port GUID> <destination port GUID>" (0x... hex)
 *   stdout: one line per pair, in the order the answers come:
 *             "<source GUID> <destination GUID> <SLID> <DLID> <SL>"       (decimal LIDs and SL)
 *             "<source GUID> <destination GUID> - <why>"                 (status 0xNNNN, timeout)
 *           pairs not asked before the deadline get no line
 *   stderr: a summary line: pairs, answered, refused, unanswered, milliseconds
 * Exits 0 when the SA could be asked (whatever it answered), 1 when it could not, 2 on bad usage.
 */
#include <errno.h>
#include <infiniband/umad.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sapaths";
static int verbose;

#include "mad.h"

enum {
	METHOD_GET = 0x01,
	METHOD_GET_RESP = 0x81,
	ATTR_PATH_RECORD = 0x0035,
	RECV_SIZE = 2048,
};

/* PathRecord (IBA 15.2.5.16): byte offsets inside the record, and component mask bits */
enum {
	PR_DGID = 8,
	PR_SGID = 24,
	PR_DLID = 40,
	PR_SLID = 42,
	PR_QOS_SL = 52,		/* QoSClass:12 SL:4 */
	PR_LEN = 64,
};
#define PR_CM_DGID (1ULL << 2)
#define PR_CM_SGID (1ULL << 3)

struct pair {
	uint64_t src, dst;
	double sent_ms;		/* of the outstanding try */
	int tries;		/* sent so far */
	int state;		/* 0 not sent, 1 outstanding, 2 done */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [-C ca] [-P port] [-t timeout_ms] [-r retries] [-w window] "
		"[-d deadline_s] [-v] < pairs\n"
		"  one PathRecord query per line \"<source port GUID> <destination port GUID>\"\n",
		prog);
	exit(2);
}

/* Reads the pairs from stdin; their count in *n. */
static struct pair *read_pairs(size_t *n)
{
	size_t cap = 1024, k = 0;
	struct pair *v = malloc(cap * sizeof(*v));
	char line[256];

	if (!v)
		die("%s", "out of memory");
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long s, d;

		if (sscanf(line, "%llx %llx", &s, &d) != 2)
			continue;
		if (k == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				die("%s", "out of memory");
		}
		memset(&v[k], 0, sizeof(v[k]));
		v[k].src = s;
		v[k].dst = d;
		k++;
	}
	*n = k;
	return v;
}

/* Sends try number p->tries + 1 of pair `i`: transaction ID = the pair's index (the low 32 bits
 * come back as sent; the kernel, umad2sim and OpenSM use the upper ones). An answer to any try
 * of a pair still outstanding is taken: every try asks the same. */
static void send_query(int fd, int agent, void *umad, int sm_lid, int timeout_ms,
		       const uint8_t prefix[8], struct pair *p, size_t i)
{
	uint8_t *mad = umad_get_mad(umad), *r = mad + SA_DATA;

	memset(mad, 0, MAD_SIZE);
	mad[MAD_BASE_VERSION] = 1;
	mad[MAD_MGMT_CLASS] = CLASS_SA;
	mad[MAD_CLASS_VERSION] = SA_CLASS_VERSION;
	mad[MAD_METHOD] = METHOD_GET;
	put64(mad + MAD_TID, (uint32_t)i);
	put16(mad + MAD_ATTR_ID, ATTR_PATH_RECORD);
	put64(mad + SA_COMP_MASK, PR_CM_DGID | PR_CM_SGID);
	memcpy(r + PR_DGID, prefix, 8);
	put64(r + PR_DGID + 8, p->dst);
	memcpy(r + PR_SGID, prefix, 8);
	put64(r + PR_SGID + 8, p->src);
	umad_set_addr(umad, sm_lid, GSI_QP, 0, GSI_QKEY);
	if (umad_send(fd, agent, umad, MAD_SIZE, timeout_ms, 0) < 0)
		die("umad_send failed: %s", strerror(errno));
	p->tries++;
	p->state = 1;
	p->sent_ms = now_ms();
}

int main(int argc, char **argv)
{
	struct sa_opts o = {NULL, 0, 1000, 8};
	int window = 64, opt, fd, agent;
	double deadline_s = 0, t0, deadline;
	size_t n, next = 0, outstanding = 0, answered = 0, refused = 0, lost = 0, i;
	struct pair *pairs;
	size_t *slots;
	umad_port_t port;
	uint8_t prefix[8];
	void *umad, *resp;

	while ((opt = getopt(argc, argv, "C:P:t:r:w:d:vh")) != -1) {
		switch (opt) {
		case 'w':
			window = atoi(optarg);
			break;
		case 'd':
			deadline_s = atof(optarg);
			break;
		default:
			if (!sa_common_opt(opt, &o))
				usage();
		}
	}
	if (optind != argc || o.timeout_ms <= 0 || o.retries < 0 || window <= 0 || deadline_s < 0)
		usage();
	pairs = read_pairs(&n);
	slots = malloc((size_t)window * sizeof(*slots));
	if (!slots)
		die("%s", "out of memory");

	fd = sa_open(&o, &port, 0, &agent);
	memcpy(prefix, &port.gid_prefix, 8); /* network order already */
	umad = umad_alloc(1, umad_size() + MAD_SIZE);
	resp = umad_alloc(1, umad_size() + RECV_SIZE);
	if (!umad || !resp)
		die("%s", "out of memory");

	t0 = now_ms();
	deadline = deadline_s > 0 ? t0 + deadline_s * 1e3 : 0;
	while (next < n || outstanding) {
		double now = now_ms();
		int len = RECV_SIZE, ret, wait_ms;
		uint8_t *mad, *rec;
		uint64_t tid;
		struct pair *p;

		if (deadline && now > deadline)
			break;
		/* fill the window */
		while (outstanding < (size_t)window && next < n) {
			send_query(fd, agent, umad, port.sm_lid, o.timeout_ms, prefix, &pairs[next], next);
			slots[outstanding++] = next++;
		}
		/* answers not come in time: again, or given up */
		for (i = 0; i < outstanding;) {
			p = &pairs[slots[i]];
			if (p->state == 1 && now - p->sent_ms > o.timeout_ms) {
				if (p->tries <= o.retries) {
					if (verbose)
						fprintf(stderr, "%s: again 0x%016llx -> 0x%016llx\n", prog,
							(unsigned long long)p->src,
							(unsigned long long)p->dst);
					send_query(fd, agent, umad, port.sm_lid, o.timeout_ms, prefix, p,
						   slots[i]);
				} else {
					printf("0x%016llx 0x%016llx - timeout\n",
					       (unsigned long long)p->src, (unsigned long long)p->dst);
					p->state = 2;
					lost++;
				}
			}
			if (p->state == 2)
				slots[i] = slots[--outstanding];
			else
				i++;
		}
		if (!outstanding)
			continue;
		wait_ms = 20;
		ret = umad_recv(fd, resp, &len, wait_ms);
		if (ret < 0) {
			if (ret == -ETIMEDOUT || ret == -EAGAIN || ret == -EWOULDBLOCK || ret == -EINTR)
				continue;
			die("umad_recv failed: %s", strerror(-ret));
		}
		if (umad_status(resp))
			continue; /* a send that timed out (a real kernel): the retry timer covers it */
		mad = umad_get_mad(resp);
		if (mad[MAD_METHOD] != METHOD_GET_RESP || len < SA_DATA + PR_LEN)
			continue;
		tid = get64(mad + MAD_TID);
		i = (uint32_t)tid;
		if (i >= n || pairs[i].state != 1)
			continue; /* an answer to an earlier try, or not ours */
		p = &pairs[i];
		if ((get16(mad + MAD_STATUS) & 0x1f) == 1) {
			p->sent_ms = 0; /* busy: the timeout pass sends it again */
			continue;
		}
		rec = mad + SA_DATA;
		if (get16(mad + MAD_STATUS)) {
			printf("0x%016llx 0x%016llx - status 0x%04x\n", (unsigned long long)p->src,
			       (unsigned long long)p->dst, get16(mad + MAD_STATUS));
			refused++;
		} else {
			printf("0x%016llx 0x%016llx %u %u %u\n", (unsigned long long)p->src,
			       (unsigned long long)p->dst, get16(rec + PR_SLID), get16(rec + PR_DLID),
			       get16(rec + PR_QOS_SL) & 0x0f);
			answered++;
		}
		p->state = 2;
	}
	fflush(stdout);
	fprintf(stderr, "%s: %zu pairs, %zu answered, %zu refused, %zu unanswered, %zu not asked, %.0f ms\n",
		prog, n, answered, refused, lost, n - answered - refused - lost, now_ms() - t0);
	umad_free(umad);
	umad_free(resp);
	umad_unregister(fd, agent);
	umad_close_port(fd);
	return 0;
}
