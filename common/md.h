/*
 * common/md.h - SHA-2 digests fetched from the default provider once per
 * process (OpenSSL 3 fetches EVP_sha256() implicitly on every use, which
 * costs more than hashing a short identity record). Private to common/.
 */
#ifndef OTA_COMMON_MD_H
#define OTA_COMMON_MD_H

#include <openssl/evp.h>

/* bits: 256, 384 or 512. NULL if the provider has none (then callers fail
 * with crypto_error). The digests live until the process exits. */
const EVP_MD *ota_md_sha2(unsigned bits);

#endif
