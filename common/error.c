#include <stdio.h>
#include <string.h>

#include "ota/common.h"

void ota_error_clear(ota_error *e)
{
	if (e == NULL)
		return;
	e->code = OTA_OK;
	e->where[0] = '\0';
	e->what[0] = '\0';
	e->control[0] = '\0';
}

ota_err ota_error_vset(ota_error *e, ota_err code, const char *where, const char *fmt,
                       va_list ap)
{
	if (e == NULL || e->code != OTA_OK)
		return code;
	e->code = code;
	e->control[0] = '\0';
	snprintf(e->where, sizeof e->where, "%s", where != NULL ? where : "");
	if (fmt != NULL)
		vsnprintf(e->what, sizeof e->what, fmt, ap);
	else
		snprintf(e->what, sizeof e->what, "%s", ota_err_message(code));
	return code;
}

ota_err ota_error_set(ota_error *e, ota_err code, const char *where, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ota_err rc = ota_error_vset(e, code, where, fmt, ap);
	va_end(ap);
	return rc;
}

ota_err ota_error_set_control(ota_error *e, ota_err code, const char *control, const char *where,
                              const char *fmt, ...)
{
	if (e == NULL || e->code != OTA_OK)
		return code;
	va_list ap;
	va_start(ap, fmt);
	ota_err rc = ota_error_vset(e, code, where, fmt, ap);
	va_end(ap);
	snprintf(e->control, sizeof e->control, "%s", control != NULL ? control : "");
	return rc;
}
