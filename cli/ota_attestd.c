/*
 * ota-attestd - the attestation endpoint: issues single-use challenges and
 * admits signed attestations from external sandbox providers. Listens on
 * loopback unless told otherwise; logs JSON lines to stderr; stops cleanly
 * on SIGTERM or SIGINT. See man/ota-attestd.8 and docs/attestation.md.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ota/attestd.h"

static const char usage_text[] =
	"usage: ota-attestd --db PATH --trust ROOT.json --key VERIFIER_KEY [options]\n"
	"  --listen ADDR        IPv4 address to bind (default 127.0.0.1)\n"
	"  --port N             TCP port (default 8750; 0 = ephemeral)\n"
	"  --port-file FILE     write the bound port to FILE once listening\n"
	"  --max-connections N  concurrent connections, served by one event loop per core\n"
	"                       (default 256)\n"
	"  --max-connections-per-address N\n"
	"                       concurrent connections from one client address; one more\n"
	"                       is closed as accepted, without an answer (default: no limit)\n"
	"  --timeout S          idle connection timeout in seconds (default 10)\n"
	"  --request-timeout S  deadline to read one request and write its answer, however\n"
	"                       slowly bytes arrive (default 30)\n"
	"  --max-body BYTES     request body cap (default 262144)\n"
	"  --batch N            group-commit batch size (default 256)\n"
	"  --max-batch-items N  attestations of batch POSTs (application/cbor-seq) held at\n"
	"                       once; a batch beyond is answered 503 (1 to 4096, default 4096)\n"
	"  --sync full|normal   sqlite synchronous mode (default full)\n"
	"  --challenge-ttl S    challenge lifetime, 1 to 3600 (default 300)\n"
	"  --max-age S          attestation freshness window for iat (default 300)\n"
	"  --max-skew S         tolerated clock skew for iat, 0 to 30 (default 30)\n"
	"  --max-lifetime S     maximum exp - iat (default 900)\n"
	"  --log-requests       log every request (default: refusals and errors)\n";

static void log_stderr(void *ctx, const char *line)
{
	(void)ctx;
	flockfile(stderr);
	fputs(line, stderr);
	fputc('\n', stderr);
	funlockfile(stderr);
}

static bool parse_num(const char *s, long long min, long long max, long long *out)
{
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"db", required_argument, NULL, 'd'},
		{"trust", required_argument, NULL, 't'},
		{"key", required_argument, NULL, 'k'},
		{"listen", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},
		{"port-file", required_argument, NULL, 'P'},
		{"max-connections", required_argument, NULL, 'c'},
		{"max-connections-per-address", required_argument, NULL, 'A'},
		{"timeout", required_argument, NULL, 'o'},
		{"request-timeout", required_argument, NULL, 'T'},
		{"max-body", required_argument, NULL, 'b'},
		{"batch", required_argument, NULL, 'B'},
		{"max-batch-items", required_argument, NULL, 'I'},
		{"sync", required_argument, NULL, 's'},
		{"challenge-ttl", required_argument, NULL, 'C'},
		{"max-age", required_argument, NULL, 'a'},
		{"max-skew", required_argument, NULL, 'S'},
		{"max-lifetime", required_argument, NULL, 'L'},
		{"log-requests", no_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	ota_attestd_opts o;
	ota_attestd_opts_init(&o);
	o.port = 8750;
	o.log = log_stderr;
	const char *port_file = NULL;
	int ch;
	long long v;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'd': o.db_path = optarg; break;
		case 't': o.trust_root_path = optarg; break;
		case 'k': o.verifier_key_path = optarg; break;
		case 'l': o.bind_addr = optarg; break;
		case 'P': port_file = optarg; break;
		case 'r': o.log_requests = true; break;
		case 's':
			if (strcmp(optarg, "full") == 0)
				o.sync = OTA_NONCE_SYNC_FULL;
			else if (strcmp(optarg, "normal") == 0)
				o.sync = OTA_NONCE_SYNC_NORMAL;
			else
				return cli_usage("ota-attestd", "--sync full|normal");
			break;
		case 'h':
			fputs(usage_text, stdout);
			return CLI_OK;
		case 'p': case 'c': case 'A': case 'o': case 'T': case 'b': case 'B': case 'C': case 'a':
		case 'S': case 'L': case 'I':
			if (ch == 'I') {
				if (!parse_num(optarg, 1, OTA_MAX_BATCH_ITEMS_IN_FLIGHT, &v))
					return cli_usage("ota-attestd", "--max-batch-items takes 1 to 4096");
			} else if (ch == 'S') {
				/* ota-verify archive allows this much skew around iat */
				if (!parse_num(optarg, 0, OTA_ATT_MAX_SKEW, &v))
					return cli_usage("ota-attestd", "--max-skew takes 0 to 30 seconds");
			} else if (ch == 'C') {
				/* the nonce store issues nothing longer-lived */
				if (!parse_num(optarg, 1, OTA_NONCE_MAX_TTL, &v))
					return cli_usage("ota-attestd", "--challenge-ttl takes 1 to 3600 seconds");
			} else if (!parse_num(optarg, ch == 'p' ? 0 : 1, ch == 'p' ? 65535 : 100000000,
			                      &v)) {
				return cli_usage("ota-attestd", "numeric option out of range");
			}
			if (ch == 'p') o.port = (uint16_t)v;
			else if (ch == 'c') o.max_connections = (unsigned)v;
			else if (ch == 'A') o.max_connections_per_address = (unsigned)v;
			else if (ch == 'o') o.timeout_s = (unsigned)v;
			else if (ch == 'T') o.request_timeout_s = (unsigned)v;
			else if (ch == 'b') o.max_body = (size_t)v;
			else if (ch == 'B') o.max_batch = (size_t)v;
			else if (ch == 'I') o.max_batch_items = (unsigned)v;
			else if (ch == 'C') o.challenge_ttl = v;
			else if (ch == 'a') o.admission.max_age = v;
			else if (ch == 'S') o.admission.max_skew = v;
			else o.admission.max_lifetime = v;
			break;
		default:
			fputs(usage_text, stderr);
			return CLI_USAGE;
		}
	}
	if (optind != argc || o.db_path == NULL || o.trust_root_path == NULL ||
	    o.verifier_key_path == NULL) {
		fputs(usage_text, stderr);
		return CLI_USAGE;
	}
	/* Signals are taken synchronously by this thread only. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	ota_error e;
	ota_error_clear(&e);
	ota_attestd *d = NULL;
	if (ota_attestd_start(&o, &d, &e) != OTA_OK) {
		int rc = cli_fail("ota-attestd", &e);
		return e.code == OTA_ERR_HTTP_TRANSPORT || e.code == OTA_ERR_DB ||
		               e.code == OTA_ERR_NONCE_SCHEMA || e.code == OTA_ERR_NONCE_BUSY
		           ? CLI_INTERNAL
		           : rc;
	}
	if (port_file != NULL) {
		char buf[16];
		int n = snprintf(buf, sizeof buf, "%u\n", (unsigned)ota_attestd_port(d));
		ota_error fe;
		ota_error_clear(&fe);
		if (n < 0 || (size_t)n >= sizeof buf ||
		    ota_file_write_atomic(port_file, ota_bytes_make(buf, (size_t)n), 0644, &fe) != OTA_OK) {
			ota_attestd_stop(d);
			return cli_fail("ota-attestd", &fe);
		}
	}
	int sig = 0;
	sigwait(&set, &sig);
	fprintf(stderr, "{\"event\":\"signal\",\"level\":\"info\",\"signal\":%d}\n", sig);
	ota_attestd_stop(d);
	return CLI_OK;
}
