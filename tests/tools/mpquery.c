/*
 * mpquery: ask the SA for MultiPathRecords, the way a client that wants several paths (or
 * uses the MultiPathRecord API, e.g. for APM) does: one SubnAdmGetMulti(MultiPathRecord) per
 * destination, from this port's GID to the destination port's GID, answered by
 * SubnAdmGetMultiResp with PathRecords. `saquery` cannot send this query.
 *
 * Built by the end-to-end tests (tests/common/mod.rs) with `gcc ... -libumad` and run under the
 * umad2sim shim with SIM_HOST=<ibsim node name> choosing the simulated CA.
 *
 * usage: mpquery [-C ca] [-P port] [-t timeout_ms] [-r retries] [-v] PORT_GUID...
 *   PORT_GUID  the destination port's GUID (0x...); its GID is the default subnet prefix
 *              fe80::/64 followed by the GUID
 * Prints one line per PathRecord in the answers, in order:
 *   "<dest GUID> slid <SLID> dlid <DLID> sl <SL>"
 * Exits 0 when every query was answered with at least one record, 1 otherwise (the reason on
 * stderr), 2 on bad usage.
 */
#include <errno.h>
#include <infiniband/umad.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* RMPP header (IBA 13.6.2.1): byte offsets */
enum {
	RMPP_VERSION = 24,
	RMPP_TYPE = 25,
	RMPP_FLAGS = 26,	/* RespTime:5 Flags:3 */
	RMPP_SEGMENT = 28,	/* 32 bits */
	RMPP_PAYLOAD_LEN = 32,	/* 32 bits */
	SA_HEADER_LEN = 20,	/* SM_Key .. ComponentMask: counted in the RMPP payload length */
};

enum {
	METHOD_GET_MULTI = 0x14,
	METHOD_GET_MULTI_RESP = 0x94,
	ATTR_PATH_RECORD = 0x0035,
	ATTR_MULTIPATH_RECORD = 0x003a,
	RMPP_TYPE_DATA = 1,
	RMPP_FLAG_ACTIVE = 1,
	RMPP_FLAG_FIRST = 2,
	RMPP_FLAG_LAST = 4,
	RECV_SIZE = 8192,	/* room for an answer reassembled from several segments */
};

/* MultiPathRecord (IBA 15.2.5.20): byte offsets inside the record */
enum {
	MPR_NUM_PATH = 5,	/* Reversible:1 NumbPath:7 */
	MPR_SGID_COUNT = 15,
	MPR_DGID_COUNT = 16,
	MPR_GIDS = 24,		/* SGIDs, then DGIDs, 16 bytes each */
	MPR_LEN_1_1 = MPR_GIDS + 32,
};

/* MultiPathRecord component mask bits (OpenSM's IB_MPR_COMPMASK_*) */
#define MPR_CM_REVERSIBLE (1ULL << 5)
#define MPR_CM_NUMB_PATH (1ULL << 6)
#define MPR_CM_SGID_COUNT (1ULL << 19)
#define MPR_CM_DGID_COUNT (1ULL << 20)

/* PathRecord (IBA 15.2.5.16): byte offsets inside the record */
enum {
	PR_DGID = 8,
	PR_DLID = 40,
	PR_SLID = 42,
	PR_QOS_SL = 52,		/* QoSClass:12 SL:4 */
	PR_LEN = 64,
};

static const char *prog = "mpquery";
static int verbose;

#include "../../tools/mad.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [-C ca] [-P port] [-t timeout_ms] [-r retries] [-v] PORT_GUID...\n"
		"  one MultiPathRecord query from this port to each destination port GUID\n",
		prog);
	exit(2);
}

/* Fills the SubnAdmGetMulti(MultiPathRecord) for one SGID and one DGID, one path. */
static void build_request(uint8_t *mad, const uint8_t sgid[16], const uint8_t dgid[16],
			  uint64_t tid)
{
	uint8_t *r = mad + SA_DATA;

	memset(mad, 0, MAD_SIZE);
	mad[MAD_BASE_VERSION] = 1;
	mad[MAD_MGMT_CLASS] = CLASS_SA;
	mad[MAD_CLASS_VERSION] = SA_CLASS_VERSION;
	mad[MAD_METHOD] = METHOD_GET_MULTI;
	put64(mad + MAD_TID, tid);
	put16(mad + MAD_ATTR_ID, ATTR_MULTIPATH_RECORD);
	/* GetMulti requests travel by RMPP (OpenSM rejects them without the Active flag): one
	 * segment, first and last. */
	mad[RMPP_VERSION] = 1;
	mad[RMPP_TYPE] = RMPP_TYPE_DATA;
	mad[RMPP_FLAGS] = RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST;
	put32(mad + RMPP_SEGMENT, 1);
	put32(mad + RMPP_PAYLOAD_LEN, SA_HEADER_LEN + MPR_LEN_1_1);

	r[MPR_NUM_PATH] = 0x80 | 1; /* reversible, one path */
	r[MPR_SGID_COUNT] = 1;
	r[MPR_DGID_COUNT] = 1;
	memcpy(r + MPR_GIDS, sgid, 16);
	memcpy(r + MPR_GIDS + 16, dgid, 16);
	put64(mad + SA_COMP_MASK, MPR_CM_REVERSIBLE | MPR_CM_NUMB_PATH | MPR_CM_SGID_COUNT |
					  MPR_CM_DGID_COUNT);
}

/* The answer mpquery waits for: a GetMultiResp. */
static int is_get_multi_resp(const uint8_t *mad)
{
	return mad[MAD_METHOD] == METHOD_GET_MULTI_RESP;
}

int main(int argc, char **argv)
{
	struct sa_opts o = {NULL, 0, 2000, 5};
	int opt, fd, agent;
	umad_port_t port;
	uint8_t sgid[16];
	void *umad, *resp;

	while ((opt = getopt(argc, argv, "C:P:t:r:vh")) != -1) {
		switch (opt) {
		default:
			if (!sa_common_opt(opt, &o))
				usage();
		}
	}
	if (optind == argc || o.timeout_ms <= 0 || o.retries < 0)
		usage();

	/* RMPP version 1: over a real HCA the kernel then segments and reassembles. */
	fd = sa_open(&o, &port, 1, &agent);
	/* GIDs = subnet prefix : port GUID, both already in network order */
	memcpy(sgid, &port.gid_prefix, 8);
	memcpy(sgid + 8, &port.port_guid, 8);

	umad = umad_alloc(1, umad_size() + MAD_SIZE);
	resp = umad_alloc(1, umad_size() + RECV_SIZE);
	if (!umad || !resp)
		die("%s", "out of memory");

	srand((unsigned)(getpid() ^ time(NULL)));
	for (int i = optind; i < argc; i++) {
		char *end;
		uint64_t dguid = strtoull(argv[i], &end, 0);
		uint8_t dgid[16], *mad, *rec;
		int try, len = -ETIMEDOUT, nrec = 0;
		uint16_t status = 0, stride;

		if (*end || !dguid)
			die("bad port GUID \"%s\"", argv[i]);
		memcpy(dgid, sgid, 8); /* the same subnet prefix */
		put64(dgid + 8, dguid);
		for (try = 0; try <= o.retries; try++) {
			uint64_t tid = (uint64_t)rand() << 16 ^ (uint64_t)(i + 1) << 48 ^ (unsigned)try;
			build_request(umad_get_mad(umad), sgid, dgid, tid);
			if (verbose)
				fprintf(stderr, "%s: MultiPathRecord to 0x%016llx try %d\n", prog,
					(unsigned long long)dguid, try);
			len = sa_send_and_wait(fd, agent, umad, resp, RECV_SIZE, (int)port.sm_lid,
					       o.timeout_ms, is_get_multi_resp);
			if (len >= 0) {
				status = get16((uint8_t *)umad_get_mad(resp) + MAD_STATUS);
				if ((status & 0x1f) == 1) { /* busy: try again a little later */
					usleep(100000);
					len = -EBUSY;
					continue;
				}
				break;
			}
			fprintf(stderr, "%s: no answer for %s within %d ms%s\n", prog, argv[i],
				o.timeout_ms, try < o.retries ? ", retrying" : "");
		}
		if (len == -ETIMEDOUT)
			die("query to %s: the SA never answered", argv[i]);
		if (len == -EBUSY)
			die("query to %s: the SA stayed busy", argv[i]);
		mad = umad_get_mad(resp);
		if (status) {
			fprintf(stderr, "%s: query to %s failed: MAD status 0x%04x\n", prog, argv[i],
				status);
			exit(1);
		}
		if (get16(mad + MAD_ATTR_ID) != ATTR_PATH_RECORD)
			die("query to %s: the answer holds no PathRecords", argv[i]);
		/* The records follow each other AttributeOffset 8-byte words apart. */
		stride = (uint16_t)(get16(mad + SA_ATTR_OFFSET) * 8);
		if (stride < PR_LEN)
			stride = PR_LEN;
		for (rec = mad + SA_DATA; rec + PR_LEN <= mad + len; rec += stride) {
			if (!get16(rec + PR_DLID))
				break;
			printf("0x%016llx slid %u dlid %u sl %u\n",
			       (unsigned long long)get64(rec + PR_DGID + 8), get16(rec + PR_SLID),
			       get16(rec + PR_DLID), get16(rec + PR_QOS_SL) & 0x0f);
			nrec++;
		}
		fflush(stdout);
		if (!nrec)
			die("query to %s: no PathRecord in the answer", argv[i]);
	}
	umad_free(umad);
	umad_free(resp);
	umad_unregister(fd, agent);
	umad_close_port(fd);
	return 0;
}
