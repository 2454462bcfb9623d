/* ota - the runner's CLI: thin dispatch to the command groups. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_command commands[] = {
	{"cose", cmd_cose, "sign a payload as COSE_Sign1"},
	{"trust", cmd_trust, "create, rotate and inspect trust-root snapshots"},
	{"validate", cmd_validate, "validate ota.yaml"},
	{"tasks", cmd_tasks, "list tasks with their canonical policy"},
	{"workflows", cmd_workflows, "list workflows with their canonical policy"},
	{"policy", cmd_policy, "show canonical and effective sandbox policy"},
	{"run", cmd_run, "run a task inside an enforced sandbox"},
	{"up", cmd_up, "run a workflow inside an enforced sandbox"},
	{"attest", cmd_attest, "request challenges and submit attestations"},
	{"image", cmd_image, "import images into the local OCI layout store"},
	{"cleanup", cmd_cleanup, "finalize orphaned sandbox leases"},
	{"archive", cmd_archive, "build an ota.archive/v1 from a receipt and its acceptances"},
	{"doctor", cmd_doctor, "report what this machine can enforce"},
	{NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ota COMMAND [ARGS...]\n\ncommands:\n");
	for (const cli_command *c = commands; c->name != NULL; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "  %-10s %s\n", "version", "print the version");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("ota %s\n", ota_version());
		return CLI_OK;
	}
	for (const cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(argv[1], c->name) == 0) {
			cli_set_named(argc - 1, argv + 1);
			return c->fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "ota: usage: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
