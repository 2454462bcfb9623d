/* ota-verify - offline verification for merge gates and auditors. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_command commands[] = {
	{"cose", verify_cose, "verify one COSE_Sign1 message with one key"},
	{"trust", verify_trust, "verify a trust-root chain from a pinned snapshot"},
	{"archive", verify_archive, "re-verify an evidence archive offline"},
	{NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ota-verify COMMAND [ARGS...]\n\ncommands:\n");
	for (const cli_command *c = commands; c->name != NULL; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("ota-verify %s\n", ota_version());
		return CLI_OK;
	}
	for (const cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(argv[1], c->name) == 0)
			return c->fn(argc - 1, argv + 1);
	fprintf(stderr, "ota-verify: usage: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
