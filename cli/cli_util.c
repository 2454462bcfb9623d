#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "ota/json.h"

int cli_exit_for(ota_err e)
{
	switch (e) {
	case OTA_OK:
		return CLI_OK;
	case OTA_ERR_USAGE:
	case OTA_ERR_IO:
	case OTA_ERR_NOT_FOUND:
	case OTA_ERR_KEY_FORMAT:
	case OTA_ERR_BAD_HEX:
	case OTA_ERR_TOO_LARGE:
		return CLI_USAGE;
	case OTA_ERR_NOMEM:
	case OTA_ERR_INTERNAL:
	case OTA_ERR_CRYPTO:
	case OTA_ERR_DB:
		return CLI_INTERNAL;
	default:
		return CLI_REFUSED;
	}
}

int cli_fail(const char *prog, const ota_error *e)
{
	fprintf(stderr, "%s: %s", prog, ota_err_name(e->code));
	if (e->where[0] != '\0')
		fprintf(stderr, ": %s", e->where);
	fprintf(stderr, ": %s\n", e->what[0] != '\0' ? e->what : ota_err_message(e->code));
	return cli_exit_for(e->code);
}

int cli_usage(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: usage: %s\n", prog, msg);
	return CLI_USAGE;
}

void cli_print_json(const json_t *v)
{
	char *s = ota_json_dumps(v, true);
	if (s == NULL) {
		fputs("{\"code\":\"out_of_memory\"}\n", stdout);
		return;
	}
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
}

json_t *cli_error_json(const ota_error *e)
{
	return json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", ota_err_name(e->code), "where",
	                 e->where, "message",
	                 e->what[0] != '\0' ? e->what : ota_err_message(e->code));
}
