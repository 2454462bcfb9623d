/* The error enum's names and messages, generated from the X-macro lists. */
#include <string.h>

#include "ota/common.h"

const char *ota_err_name(ota_err e)
{
	switch (e) {
#define OTA_ERR_NAME_(en, n, name, msg) \
	case en:                        \
		return name;
		OTA_ERRORS(OTA_ERR_NAME_)
#undef OTA_ERR_NAME_
	default:
		return "unknown_error";
	}
}

const char *ota_err_message(ota_err e)
{
	switch (e) {
#define OTA_ERR_MSG_(en, n, name, msg) \
	case en:                       \
		return msg;
		OTA_ERRORS(OTA_ERR_MSG_)
#undef OTA_ERR_MSG_
	default:
		return "unknown error";
	}
}

bool ota_err_from_name(const char *name, ota_err *out)
{
#define OTA_ERR_FROM_(en, n, nm, msg)      \
	if (strcmp(name, nm) == 0) {       \
		*out = en;                 \
		return true;               \
	}
	OTA_ERRORS(OTA_ERR_FROM_)
#undef OTA_ERR_FROM_
	return false;
}

void ota_err_foreach(void (*fn)(ota_err e, const char *name, const char *msg, void *ctx),
                     void *ctx)
{
#define OTA_ERR_EACH_(en, n, nm, msg) fn(en, nm, msg, ctx);
	OTA_ERRORS(OTA_ERR_EACH_)
#undef OTA_ERR_EACH_
}
