/*
 * mcjoin: join (and create) InfiniBand multicast groups through the SA, the way a host's IPoIB
 * driver or an MPI library does: one SubnAdmSet(MCMemberRecord) per group, sent from this port
 * to the SM's LID, answered by SubnAdmGetResp with the group's record (its MLID).
 *
 * Built by the end-to-end tests (tests/common/mod.rs) with `gcc ... -libumad` and run under the
 * umad2sim shim with SIM_HOST=<ibsim node name> choosing the simulated CA. It works the same
 * over a real HCA (the kernel's umad then handles the send timeout; see send_and_wait).
 *
 * usage: mcjoin [-C ca] [-P port] [-t timeout_ms] [-r retries] [-q qkey] [-v]
 *               [-b] [-f MGID]... [-s MGID]... [-l MGID]...
 *   -b        join the IPoIB broadcast group of the default partition as a full member
 *             (ff12:401b:ffff::ffff:ffff, which OpenSM creates itself)
 *   -f MGID   join MGID as a full member (JoinState 1), creating the group if it does not
 *             exist; MGID "0" (or "::") asks the SA to assign a new MGID
 *   -s MGID   join MGID as a send-only non-member (JoinState 4); the group must exist
 *   -l MGID   leave MGID as a full member (SubnAdmDelete of the membership, JoinState 1)
 * Prints one line per request, in order: "<MGID> mlid 0x<MLID> join <state>" (or "leave").
 * Exits 0 when every join succeeded, 1 on the first failure (with the reason on stderr),
 * 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
	METHOD_SET = 0x02,
	METHOD_DELETE = 0x15,
	METHOD_GET_RESP = 0x81,	/* the answer to a Set */
	METHOD_DELETE_RESP = 0x95,
	ATTR_MCMEMBER_RECORD = 0x0038,
};

/* MCMemberRecord (IBA 15.2.5.17): byte offsets inside the record, 52 bytes used */
enum {
	MCR_MGID = 0,		/* 16 bytes */
	MCR_PORT_GID = 16,	/* 16 bytes */
	MCR_QKEY = 32,		/* 32 bits */
	MCR_MLID = 36,		/* 16 bits */
	MCR_MTU = 38,		/* selector:2 MTU:6 */
	MCR_TCLASS = 39,
	MCR_PKEY = 40,		/* 16 bits */
	MCR_RATE = 42,		/* selector:2 rate:6 */
	MCR_LIFE = 43,		/* selector:2 packet lifetime:6 */
	MCR_SL_FLOW_HOP = 44,	/* SL:4 FlowLabel:20 HopLimit:8 */
	MCR_SCOPE_STATE = 48,	/* Scope:4 JoinState:4 */
	MCR_PROXY = 49,		/* ProxyJoin:1 reserved:7 */
};

/* MCMemberRecord component mask bits (IBA table 201; OpenSM's IB_MCR_COMPMASK_*) */
#define CM_MGID (1ULL << 0)
#define CM_PORT_GID (1ULL << 1)
#define CM_QKEY (1ULL << 2)
#define CM_MLID (1ULL << 3)
#define CM_MTU_SEL (1ULL << 4)
#define CM_MTU (1ULL << 5)
#define CM_TCLASS (1ULL << 6)
#define CM_PKEY (1ULL << 7)
#define CM_RATE_SEL (1ULL << 8)
#define CM_RATE (1ULL << 9)
#define CM_SL (1ULL << 12)
#define CM_FLOW (1ULL << 13)
#define CM_SCOPE (1ULL << 15)
#define CM_JOIN_STATE (1ULL << 16)

/* JoinState bits */
#define JOIN_FULL 1
#define JOIN_SEND_ONLY_NON 4

/* PathRecord-style selectors in the MTU and rate bytes */
#define SEL_GREATER_THAN 0

/* Encodings: MTU 1 = 256 bytes, rate 2 = 2.5 Gb/s (the smallest of each) */
#define MTU_256 1
#define RATE_2_5 2

#define DEFAULT_PKEY 0xffff

static const char *prog = "mcjoin";
static int verbose;

struct join {
	uint8_t mgid[16];
	int state;		/* JOIN_FULL or JOIN_SEND_ONLY_NON */
	int ipoib;		/* the broadcast group OpenSM owns: join without creation fields */
	int leave;		/* leave (SubnAdmDelete) instead of join */
};

#include "../../tools/mad.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [-C ca] [-P port] [-t timeout_ms] [-r retries] [-q qkey] [-v]\n"
		"       [-b] [-f MGID]... [-s MGID]... [-l MGID]...\n"
		"  -b       join the IPoIB broadcast group ff12:401b:ffff::ffff:ffff (full member)\n"
		"  -f MGID  join as full member, creating the group if needed (\"0\": SA assigns one)\n"
		"  -s MGID  join as send-only non-member (the group must exist)\n"
		"  -l MGID  leave the group (a full member's SubnAdmDelete)\n",
		prog);
	exit(2);
}

static void parse_mgid(const char *text, uint8_t mgid[16])
{
	if (!strcmp(text, "0")) {
		memset(mgid, 0, 16);
		return;
	}
	if (inet_pton(AF_INET6, text, mgid) != 1)
		die("bad MGID \"%s\" (want IPv6 notation, e.g. ff12:1234::1, or 0)", text);
	if (mgid[0] != 0xff && memcmp(mgid, (uint8_t[16]){0}, 16))
		die("MGID \"%s\" is not a multicast GID (must start with ff)", text);
}

static const char *mgid_str(const uint8_t mgid[16], char buf[INET6_ADDRSTRLEN])
{
	return inet_ntop(AF_INET6, mgid, buf, INET6_ADDRSTRLEN);
}

/* Human-readable MAD status (IBA 13.4.7 generic bits, 15.2.1.1 SA-specific codes). */
static const char *status_str(uint16_t status)
{
	static char buf[160];
	static const char *sa[] = {
		"success", "ERR_NO_RESOURCES", "ERR_REQ_INVALID", "ERR_NO_RECORDS",
		"ERR_TOO_MANY_RECORDS", "ERR_REQ_INVALID_GID", "ERR_REQ_INSUFFICIENT_COMPONENTS",
		"ERR_REQ_DENIED", "ERR_STATUS_PRIO_SUGGESTED",
	};
	unsigned code = status >> 8;
	const char *generic;
	switch (status & 0x1f) {
	case 0:
		generic = "";
		break;
	case 1:
		generic = "busy ";
		break;
	case 2:
		generic = "redirect ";
		break;
	case 4:
		generic = "bad version ";
		break;
	case 8:
		generic = "method not supported ";
		break;
	case 0xc:
		generic = "method/attribute not supported ";
		break;
	case 0x1c:
		generic = "invalid attribute value ";
		break;
	default:
		generic = "generic error ";
	}
	snprintf(buf, sizeof buf, "0x%04x (%s%s)", status, generic,
		 code < sizeof sa / sizeof sa[0] ? sa[code] : "SA status unknown");
	return buf;
}

/* Fills the SubnAdmSet(MCMemberRecord) for one join; returns the component mask. */
static uint64_t build_request(uint8_t *mad, const struct join *j, const uint8_t port_gid[16],
			      uint32_t qkey, uint64_t tid)
{
	uint8_t *r = mad + SA_DATA;
	uint64_t mask = CM_MGID | CM_PORT_GID | CM_JOIN_STATE;

	memset(mad, 0, MAD_SIZE);
	mad[MAD_BASE_VERSION] = 1;
	mad[MAD_MGMT_CLASS] = CLASS_SA;
	mad[MAD_CLASS_VERSION] = SA_CLASS_VERSION;
	mad[MAD_METHOD] = j->leave ? METHOD_DELETE : METHOD_SET;
	put64(mad + MAD_TID, tid);
	put16(mad + MAD_ATTR_ID, ATTR_MCMEMBER_RECORD);
	put32(mad + MAD_ATTR_MOD, 0);
	put64(mad + SA_SM_KEY, 0);
	put16(mad + SA_ATTR_OFFSET, 0);

	memcpy(r + MCR_MGID, j->mgid, 16);
	memcpy(r + MCR_PORT_GID, port_gid, 16);
	/* scope from the MGID (its flags/scope byte), join state in the low nibble */
	r[MCR_SCOPE_STATE] = (uint8_t)((j->mgid[1] & 0x0f) << 4 | j->state);
	r[MCR_PKEY] = 0xff;
	r[MCR_PKEY + 1] = 0xff;
	mask |= CM_PKEY;

	if (!j->ipoib && !j->leave && j->state == JOIN_FULL) {
		/*
		 * What OpenSM needs to create the group (osm_sa_mcmember_record.c,
		 * REQUIRED_MC_CREATE_COMP_MASK: Q_Key, TClass, P_Key, FlowLabel, SL), the same values
		 * from every member so that joins of an existing group validate too. MTU and rate
		 * "greater than the smallest": the SA gives the group the creating port's own MTU and
		 * rate, and later members are checked against those.
		 */
		put32(r + MCR_QKEY, qkey);
		r[MCR_TCLASS] = 0;
		put32(r + MCR_SL_FLOW_HOP, 0); /* SL 0, flow label 0, hop limit 0 */
		r[MCR_MTU] = SEL_GREATER_THAN << 6 | MTU_256;
		r[MCR_RATE] = SEL_GREATER_THAN << 6 | RATE_2_5;
		mask |= CM_QKEY | CM_TCLASS | CM_SL | CM_FLOW | CM_MTU_SEL | CM_MTU |
			CM_RATE_SEL | CM_RATE;
	}
	put64(mad + SA_COMP_MASK, mask);
	return mask;
}

/* The answer mcjoin waits for: a Set's or Delete's response on MCMemberRecord. */
static int is_mcmember_answer(const uint8_t *mad)
{
	return (mad[MAD_METHOD] == METHOD_GET_RESP || mad[MAD_METHOD] == METHOD_DELETE_RESP) &&
	       get16(mad + MAD_ATTR_ID) == ATTR_MCMEMBER_RECORD;
}

int main(int argc, char **argv)
{
	static const uint8_t ipoib_bcast[16] = {
		0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	};
	struct sa_opts o = {NULL, 0, 2000, 5};
	uint32_t qkey = 0x0001ee70;
	struct join *joins = NULL;
	int njoins = 0, opt, fd, agent;
	umad_port_t port;
	uint8_t port_gid[16];
	void *umad, *resp;
	char gbuf[INET6_ADDRSTRLEN], gbuf2[INET6_ADDRSTRLEN];

	joins = calloc((size_t)argc + 1, sizeof *joins);
	if (!joins)
		die("%s", "out of memory");
	while ((opt = getopt(argc, argv, "C:P:t:r:q:vbf:s:l:h")) != -1) {
		struct join *j = &joins[njoins];
		switch (opt) {
		case 'q':
			qkey = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			memcpy(j->mgid, ipoib_bcast, 16);
			j->state = JOIN_FULL;
			j->ipoib = 1;
			njoins++;
			break;
		case 'f':
		case 's':
		case 'l':
			parse_mgid(optarg, j->mgid);
			j->state = opt == 's' ? JOIN_SEND_ONLY_NON : JOIN_FULL;
			j->leave = opt == 'l';
			if (opt == 'l' && !memcmp(j->mgid, (uint8_t[16]){0}, 16))
				die("%s", "-l needs the MGID of the group to leave");
			if (opt == 's' && !memcmp(j->mgid, (uint8_t[16]){0}, 16))
				die("%s", "a send-only member cannot create a group: -s needs an MGID");
			njoins++;
			break;
		default:
			if (!sa_common_opt(opt, &o))
				usage();
		}
	}
	if (optind != argc || njoins == 0 || o.timeout_ms <= 0 || o.retries < 0)
		usage();

	fd = sa_open(&o, &port, 0, &agent);
	/* PortGID = subnet prefix : port GUID, both already in network order */
	memcpy(port_gid, &port.gid_prefix, 8);
	memcpy(port_gid + 8, &port.port_guid, 8);
	if (verbose)
		fprintf(stderr, "%s: %s port %d lid %u sm lid %u gid %s\n", prog, port.ca_name,
			port.portnum, port.base_lid, port.sm_lid, mgid_str(port_gid, gbuf));

	umad = umad_alloc(1, umad_size() + MAD_SIZE);
	resp = umad_alloc(1, umad_size() + MAD_SIZE);
	if (!umad || !resp)
		die("%s", "out of memory");

	srand((unsigned)(getpid() ^ time(NULL)));
	for (int i = 0; i < njoins; i++) {
		const struct join *j = &joins[i];
		uint8_t *r;
		int try, ret = -ETIMEDOUT;
		uint16_t status = 0;

		for (try = 0; try <= o.retries; try++) {
			uint64_t tid = (uint64_t)rand() << 16 ^ (uint64_t)(i + 1) << 48 ^ (unsigned)try;
			uint64_t mask = build_request(umad_get_mad(umad), j, port_gid, qkey, tid);
			if (verbose)
				fprintf(stderr, "%s: join %s state %d mask 0x%llx try %d\n", prog,
					mgid_str(j->mgid, gbuf), j->state, (unsigned long long)mask, try);
			ret = sa_send_and_wait(fd, agent, umad, resp, MAD_SIZE, (int)port.sm_lid, o.timeout_ms,
					       is_mcmember_answer);
			if (ret >= 0) {
				status = get16((uint8_t *)umad_get_mad(resp) + MAD_STATUS);
				if ((status & 0x1f) == 1) { /* busy: try again a little later */
					usleep(100000);
					ret = -EBUSY;
					continue;
				}
				break;
			}
			fprintf(stderr, "%s: no answer to the join of %s within %d ms%s\n", prog,
				mgid_str(j->mgid, gbuf), o.timeout_ms, try < o.retries ? ", retrying" : "");
		}
		if (ret == -ETIMEDOUT)
			die("join of %s: the SA never answered", mgid_str(j->mgid, gbuf));
		if (ret == -EBUSY)
			die("join of %s: the SA stayed busy", mgid_str(j->mgid, gbuf));
		r = (uint8_t *)umad_get_mad(resp) + SA_DATA;
		if (status) {
			fprintf(stderr, "%s: %s of %s (port %s, state %d) failed: status %s\n", prog,
				j->leave ? "leave" : "join", mgid_str(j->mgid, gbuf),
				mgid_str(port_gid, gbuf2), j->state, status_str(status));
			exit(1);
		}
		printf("%s mlid 0x%04x %s %d\n", mgid_str(r + MCR_MGID, gbuf), get16(r + MCR_MLID),
		       j->leave ? "leave" : "join", r[MCR_SCOPE_STATE] & 0x0f);
		fflush(stdout);
	}
	umad_free(umad);
	umad_free(resp);
	umad_unregister(fd, agent);
	umad_close_port(fd);
	free(joins);
	return 0;
}
