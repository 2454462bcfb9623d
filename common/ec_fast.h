/*
 * common/ec_fast.h - ECDSA P-256 verification with a table of precomputed
 * multiples of the public key. Private to common/ (key.c builds one for a
 * key that verifies many signatures; see ec_fast.c for why and how).
 */
#ifndef OTA_COMMON_EC_FAST_H
#define OTA_COMMON_EC_FAST_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/evp.h>

typedef struct ota_ec_fast ota_ec_fast;

/* The table for a P-256 public key (about 150 KB and 20 ms of one core).
 * NULL when it cannot be built (not P-256, no memory, OpenSSL refuses):
 * callers then keep verifying through EVP. */
ota_ec_fast *ota_ec_fast_new(const EVP_PKEY *pkey);
void ota_ec_fast_free(ota_ec_fast *f);

/* ECDSA verification of a 32-byte digest against the raw signature r||s
 * (2 x 32 bytes, big-endian), exactly as SEC 1 section 4.1.4 and OpenSSL's
 * ECDSA_do_verify: 1 valid, 0 invalid, -1 internal failure (the caller
 * falls back to EVP). Safe for several threads at once on one table. */
int ota_ec_fast_verify(const ota_ec_fast *f, const uint8_t digest[32], const uint8_t sig[64]);

/* s^-1 mod n (n the P-256 order) by the word arithmetic the verification
 * uses, for tests: false when s is 0 or not below n. */
bool ota_ec_fast_inverse(const uint8_t s[32], uint8_t out[32]);

#endif
