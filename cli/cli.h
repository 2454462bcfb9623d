/*
 * cli/cli.h - shared helpers of the thin mains. Only cli/ prints to the
 * terminal or calls exit().
 *
 * Exit codes (every CLI): 0 ok, 1 refused/invalid, 2 usage or input error,
 * 3 internal or environment error.
 */
#ifndef OTA_CLI_H
#define OTA_CLI_H

#include <jansson.h>
#include <stdbool.h>

#include "ota/common.h"

enum { CLI_OK = 0, CLI_REFUSED = 1, CLI_USAGE = 2, CLI_INTERNAL = 3 };

/* A command group: `ota <name> ...` calls fn(argc, argv) with argv[0] = name. */
typedef struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cli_command;

/* Maps an error to the exit code class (usage/io -> 2, internal -> 3, else 1). */
int cli_exit_for(ota_err e);
/*
 * ota-verify's mapping: cli_exit_for, but not_regular_file is 2 as an
 * unreadable input is (a FIFO, socket, device or directory given as the
 * archive, a snapshot, a key, a ledger or a state file), the same in every
 * subcommand (every input of ota-verify is the operator's argument). `ota`
 * does so for the files named on its command line (cli_error_exit).
 */
int cli_verify_exit_for(ota_err e);
/*
 * The command line of `ota` (its argv from the command on): a file it
 * names that is a FIFO, socket or device (not_regular_file whose where is
 * one of these arguments) is an input the operator named that cannot be
 * used, exit 2 like a missing one (ota(1) EXIT STATUS); the repository's
 * own files (REPO/.ota/org-policy.yaml, the default ./ota.yaml) are not
 * named by the operator and stay a refusal, 1. Not set: nothing is named.
 */
void cli_set_named(int argc, char **argv);
/* The exit status of e: cli_exit_for(e->code), but 2 for not_regular_file
 * of a path named on the command line (cli_set_named). */
int cli_error_exit(const ota_error *e);
/* Prints "ota: <code>: <where>: <what>" to stderr; returns cli_error_exit(e). */
int cli_fail(const char *prog, const ota_error *e);
/* Prints "prog: usage: msg" to stderr and returns CLI_USAGE; when help was
 * asked for (cli_help_asked), prints "usage: msg" to stdout and returns
 * CLI_OK instead. */
int cli_usage(const char *prog, const char *msg);
/* Help was asked for: the command line's last argument (after the command,
 * set by cli_set_named) is --help or -h. Every command then prints its
 * usage on stdout and exits 0 (ota(1) EXIT STATUS), whatever came before. */
bool cli_help_asked(void);
/* JSON error object {"valid":false?...} is up to callers; this prints v + "\n" to stdout, pretty. */
void cli_print_json(const json_t *v);
/* {"ok": false, "code": name, "where": .., "message": ..}: common error JSON. */
json_t *cli_error_json(const ota_error *e);

/* Command groups of `ota` (defined in cmd_<group>.c when present). */
int cmd_cose(int argc, char **argv);
int cmd_trust(int argc, char **argv);
int cmd_attest(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_up(int argc, char **argv);
int cmd_cleanup(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_archive(int argc, char **argv);

/* Archives (cmd_archive.c): the trust-root chain a run embeds, and the
 * writer `ota run` / `ota up` call after the receipt is built. */
#define CLI_ARCHIVE_MAX_CHAIN 1024
typedef struct cli_archive_chain {
	ota_bytes items[CLI_ARCHIVE_MAX_CHAIN]; /* snapshot bytes, ascending versions (new) */
	size_t n;
	struct ota_trust_root *latest;          /* parsed last item (after _finish) */
} cli_archive_chain;
struct ota_archive_input;
struct ota_key;
/* Adds a snapshot file, or every versions/N.root.json of an `ota trust` directory. */
ota_err cli_archive_chain_add(cli_archive_chain *c, const char *path, ota_error *e);
/* Parses the latest snapshot into c->latest. */
ota_err cli_archive_chain_finish(cli_archive_chain *c, ota_error *e);
void cli_archive_chain_free(cli_archive_chain *c);
/* The runner principal whose key is key in c->latest at now ("" without a
 * chain), scoped for lane on provider_target (trust_scope_mismatch else:
 * ota-verify archive would refuse what it signs). */
ota_err cli_archive_runner_principal(const cli_archive_chain *c, const struct ota_key *key,
                                     int64_t now, const char *lane, const char *provider_target,
                                     char *out, size_t cap, ota_error *e);
/* Creates the directories leading to path (not its last component); path is
 * restored. For paths the user named (--archive PATH): their symlinks are
 * the user's choice. */
ota_err cli_mkdirs(char *path);

/* cli/output_fwd.c: a task's output to fd 1 or 2 through a bounded queue
 * and a writer thread, so that the caller never blocks on the reader. */
typedef struct cli_fwd cli_fwd;
cli_fwd *cli_fwd_start(void);
void cli_fwd_write(cli_fwd *f, int fd, const uint8_t *p, size_t n);
/* Waits up to wait_s for the queue to drain, stops the writer; the bytes
 * that were not forwarded (queue full, reader gone or stalled). */
uint64_t cli_fwd_finish(cli_fwd *f, unsigned wait_s);

/*
 * Builds and writes the archive, prints the path. path NULL: the default
 * REPO/.ota/archives/TXN.json, written beneath the repository without
 * following any symlink (cli_repo_write); a path the user named keeps its
 * meaning, but its last component is never followed (ota_file_write_atomic).
 */
int cli_archive_write(const struct ota_archive_input *in, const char *path, const char *repo,
                      const char *txn, bool quiet);

/*
 * The repository's own files. Whatever `ota run` / `ota up` (root) write
 * or read under REPO (archives, orphans' cleanup records, the default org
 * policy) is resolved beneath a descriptor of REPO, one component at a time,
 * without following any symlink (common.h, ota_dir_open_beneath): a task or
 * the repository's content cannot point those writes or reads at the host.
 */
#define CLI_ORG_POLICY ".ota/org-policy.yaml"
/* Opens REPO/sub (".ota/archives") beneath REPO, created when create.
 * *out_fd new. Errors: path_symlink, not_a_directory, not_found, io_error. */
ota_err cli_repo_dir(const char *repo, const char *sub, bool create, int *out_fd, ota_error *e);
/* Each of subs[0..n) that exists under REPO is a directory reached without
 * a symlink (a missing one is fine: it is created beneath when written);
 * otherwise the error naming it (path_symlink, not_a_directory). */
ota_err cli_repo_state_check(const char *repo, const char *const *subs, size_t n, ota_error *e);
/* Writes REPO/sub/name atomically beneath REPO (sub created beneath);
 * shown receives the path for messages. */
ota_err cli_repo_write(const char *repo, const char *sub, const char *name, ota_bytes data,
                       unsigned mode, char *shown, size_t cap, ota_error *e);
/* Reads DIR/.ota/org-policy.yaml beneath DIR (the contract's directory):
 * *buf new, or NULL when there is none (not an error). shown receives the
 * path. Errors: path_symlink, not_a_directory, not_regular_file (a FIFO
 * never blocks the run), too_large, io_error. */
ota_err cli_org_policy_read(const char *dir, uint8_t **buf, size_t *n, char *shown, size_t cap,
                            ota_error *e);
/* Reads the contract FILE (at most OTA_MAX_YAML_BYTES) from its directory,
 * the repository: FILE's last component is opened beneath that directory
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so a symlink to another
 * file of the repository is followed and one that leaves it is refused
 * (path_symlink): the repository is someone else's, and the contract's bytes
 * are what a run embeds in its archive and reports on. The directory itself
 * is the operator's to name. Errors: path_symlink, not_regular_file (a FIFO never blocks), too_large, io_error. */
ota_err cli_contract_read(const char *file, uint8_t **buf, size_t *n, ota_error *e);
/* policy group: validate, tasks, workflows, policy (show). */
int cmd_validate(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_workflows(int argc, char **argv);
int cmd_policy(int argc, char **argv);

/* Sub-commands of `ota-verify` (verify_<group>.c). */
int verify_cose(int argc, char **argv);
int verify_trust(int argc, char **argv);
int verify_archive(int argc, char **argv);

#endif
