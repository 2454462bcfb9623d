/*
 * verify/archive_internal.h - the parsed form of an ota.archive/v1 shared by
 * archive_parse.c and archive_verify.c (not installed).
 */
#ifndef OTA_VERIFY_ARCHIVE_INTERNAL_H
#define OTA_VERIFY_ARCHIVE_INTERNAL_H

#include "ota/archive.h"
#include "ota/nonce.h"

#define ARC_MAX_MEMBERS 1000000u /* attestations, challenges, records, acceptances */
#define ARC_MAX_OVERLAYS OTA_MAX_OVERLAYS

typedef struct arc_blob {
	uint8_t *ptr;
	size_t len;
} arc_blob;

/* The identities are copies: a lean parse drops these members from doc. */
typedef struct arc_att {
	char id[OTA_ID_LEN + 1];  /* stated identity */
	char chid[OTA_ID_LEN + 1];
	arc_blob cose;
} arc_att;

typedef struct arc_acc {
	char id[OTA_ID_LEN + 1];
	arc_blob cose;
} arc_acc;

/*
 * A challenge's content as ota_challenge has it, with its strings as exact
 * copies (one allocation, arc_ch.strings) rather than 1.5 KB of fixed
 * buffers per challenge.
 */
typedef struct arc_chal {
	uint8_t nonce[OTA_NONCE_MAX_BYTES];
	size_t nonce_len;
	int64_t epoch;
	int64_t issued_at;
	int64_t expires_at;
	int64_t consumed_at;
	const char *txn;
	const char *issuer;
	const char *scope;
} arc_chal;

typedef struct arc_ch {
	char id[OTA_ID_LEN + 1];
	arc_chal c;
	char *strings; /* owned */
} arc_ch;

typedef struct arc_overlay {
	arc_blob bytes;
	const char *name;
	ota_overlay_source source;
} arc_overlay;

struct ota_archive {
	json_t *doc;
	arc_blob contract;
	const char *contract_name;
	char contract_snapshot[OTA_ID_LEN + 1];
	arc_overlay *ov;
	size_t nov;
	const json_t *selection;
	ota_lane_kind lane_kind;
	const char *lane;
	bool agent;
	const char *target; /* NULL when absent */
	ota_platform native;
	arc_blob *chain;
	size_t nchain;
	arc_ch *ch;
	size_t nch;
	arc_att *att;
	size_t natt;
	arc_acc *acc;
	size_t nacc;
	const json_t *evidence; /* array (borrowed from doc) */
	arc_blob receipt;       /* COSE bytes; empty when unsigned */
	char receipt_id[OTA_ID_LEN + 1];
	bool receipt_unsigned;
};

/*
 * ota_archive_parse; lean: every member whose content the parse has copied
 * or decoded (attestations, challenges, acceptances, the contract's and the
 * receipt's bytes) is dropped from doc as soon as it is, so the base64 text
 * and the decoded bytes are not held together (ota_archive_verify: doc keeps
 * the selection, the evidence and the small members).
 */
ota_err arc_parse(ota_bytes in, bool lean, ota_archive **out, ota_error *err);

#endif
