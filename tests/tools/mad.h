/*
 * Shared by the test tools' SA clients (mcjoin.c, mpquery.c): big-endian MAD field access and
 * the exit on error. The including file defines `prog` (its name, for messages) first.
 */
#ifndef DFSSSP_RS_TEST_MAD_H
#define DFSSSP_RS_TEST_MAD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

#endif
