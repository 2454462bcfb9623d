/*
 * ota/limits.h - every size and depth cap of the toolkit, in one place.
 * Parsers of untrusted bytes check these before (or while) parsing.
 * Each module adds its caps under its own heading.
 */
#ifndef OTA_LIMITS_H
#define OTA_LIMITS_H

/* common: JSON */
#define OTA_MAX_JSON_BYTES        (16u * 1024u * 1024u) /* any JSON document */
#define OTA_MAX_JSON_DEPTH        64u                   /* nesting of arrays/objects */
#define OTA_JSON_MAX_SAFE_INT     9007199254740991LL    /* 2^53 - 1 (RFC 8785, I-JSON) */

/* common: keys */
#define OTA_MAX_KEY_FILE_BYTES    (64u * 1024u)
#define OTA_MIN_RSA_BITS          2048u
#define OTA_MAX_RSA_BITS          8192u

/* cose */
#define OTA_MAX_COSE_BYTES        (16u * 1024u * 1024u) /* a whole COSE_Sign1 message (the largest is a receipt: 4.1 MiB at 10,000 attestations) */
#define OTA_MAX_COSE_HEADERS      32u                   /* labels per header bucket */
#define OTA_MAX_COSE_CRIT         8u                    /* entries in crit */
#define OTA_MAX_COSE_DEPTH        8u                    /* nesting inside header values */
#define OTA_MAX_SIG_BYTES         1024u                 /* RSA-8192 signature */

/* trust */
#define OTA_MAX_TRUST_ROOT_BYTES  (8u * 1024u * 1024u)  /* one snapshot file (10k keys fit) */
#define OTA_MAX_TRUST_CHAIN       1024u                 /* snapshots in one chain (TUF: 2^10) */
#define OTA_MAX_TRUST_VERSION     1000000000LL          /* above: trust_version_absurd */
#define OTA_MAX_TRUST_KEYS        20000u                /* principal keys in one snapshot */
#define OTA_MAX_TRUST_PRINCIPALS  10000u
#define OTA_MAX_TRUST_ROOT_KEYS   64u                   /* root keys and signatures */
#define OTA_MAX_TRUST_SCOPES      256u                  /* patterns per scope list */
#define OTA_MAX_TRUST_NAME_BYTES  256u                  /* trust_domain, principal id, scope */
#define OTA_MAX_TRUST_STATE_BYTES (1024u * 1024u)       /* verifier state file */
#define OTA_MAX_TRUST_DOMAINS     1024u                 /* domains in one state file */

/* nonce-store */
#define OTA_NONCE_MIN_BYTES       16u
#define OTA_NONCE_DEFAULT_BYTES   32u
#define OTA_NONCE_MAX_BYTES       64u
#define OTA_NONCE_DEFAULT_TTL     300                   /* seconds */
#define OTA_MAX_TXN_BYTES         256u
#define OTA_MAX_SCOPE_BYTES       1024u
#define OTA_MAX_ISSUER_BYTES      256u
#define OTA_NONCE_MAX_TTL         3600                  /* seconds */
#define OTA_NONCE_DEFAULT_SKEW    60                    /* seconds kept past expiry */
#define OTA_NONCE_MAX_BATCH       4096u                 /* operations per transaction */
#define OTA_MAX_RECORD_ID_BYTES   256u                  /* head / prior / record ids */

/* attestation endpoint */
#define OTA_MAX_HTTP_BODY_BYTES   (256u * 1024u)
#define OTA_MAX_HTTP_CONNECTIONS  256u
#define OTA_HTTP_TIMEOUT_SECONDS  10u
#define OTA_HTTP_REQUEST_SECONDS  30u  /* one request read (and its answer written), in total */
#define OTA_MAX_HTTP_MEDIA_TYPE_BYTES 1024u          /* one Content-Type value */
#define OTA_MAX_HTTP_ANSWER_BYTES (1024u * 1024u)     /* an answer the client reads */
#define OTA_MAX_ATTESTATION_BYTES (64u * 1024u)         /* one attestation payload */
#define OTA_MAX_ATTESTATION_DEPTH 16u                   /* nesting inside body */
#define OTA_MAX_ATTESTATION_CLAIMS 32u                  /* entries of the payload map */
#define OTA_MAX_ATTESTATION_BATCH 128u                  /* attestations in one batch POST (application/cbor-seq) */
#define OTA_MAX_BATCH_ITEMS_IN_FLIGHT 4096u             /* batch items the endpoint holds at once (503 beyond) */
/* The clock skew tolerated around an attestation's iat: the endpoint's
 * --max-skew is at most this, and ota-verify archive judges an external
 * attestation fresh when its iat lies within this many seconds of
 * [challenge issued, accepted] (one rule, so that nothing admitted fails
 * the archive check later). */
#define OTA_ATT_MAX_SKEW          30                    /* seconds */
#define OTA_MAX_JSON_REQUEST_BYTES (16u * 1024u)        /* JSON bodies of the endpoint */

/* policy */
#define OTA_MAX_YAML_BYTES        (8u * 1024u * 1024u)
#define OTA_MAX_YAML_DEPTH        56u                   /* below OTA_MAX_JSON_DEPTH: identities wrap it */
#define OTA_MAX_YAML_NODES        2000000u
/* scalar bytes of the document with every alias expanded (a document
 * without aliases has at most OTA_MAX_YAML_BYTES) */
#define OTA_MAX_YAML_EXPANDED_BYTES (2u * OTA_MAX_YAML_BYTES)
#define OTA_MAX_YAML_ALIASES      1000u
#define OTA_MAX_TASKS             100000u
#define OTA_MAX_PATH_BYTES        4096u
#define OTA_MAX_YAML_ANCHORS      10000u
#define OTA_MAX_OVERLAYS          64u                   /* restriction overlays per evaluation */
#define OTA_MAX_DESCRIPTORS       16u                   /* capability descriptors per admission */
#define OTA_MAX_DESCRIPTOR_BYTES  (64u * 1024u)
#define OTA_MAX_CLOSURE_DEPTH     4096u                 /* depends_on/hook nesting of one lane */
#define OTA_MAX_NAME_BYTES        256u                  /* a task, context or workflow name */

/* provider-oci */
#define OTA_OCI_MAX_SCAN_ENTRIES     1000000u             /* repo + rootfs entries in the preflight scan */
#define OTA_OCI_MAX_MOUNTINFO_BYTES  (4u * 1024u * 1024u) /* one /proc/PID/mountinfo */
#define OTA_OCI_MAX_MOUNTS           4096u                /* lines in one mountinfo */
#define OTA_OCI_MAX_PATHS            1024u                /* writable or protected paths per plan */
#define OTA_OCI_MAX_NET_BYTES        (256u * 1024u)       /* /proc/PID/net/{dev,route,ipv6_route} */
#define OTA_OCI_MAX_CANARY_BYTES     (64u * 1024u)        /* canary report */
#define OTA_OCI_MAX_HASH_BYTES       (64u * 1024u * 1024u) /* a protected file hashed for fingerprints */
#define OTA_OCI_MAX_IMAGE_JSON_BYTES (4u * 1024u * 1024u) /* index, manifest, config of an image */
#define OTA_OCI_MAX_STATE_BYTES      (64u * 1024u)        /* `runc state` / `crun state` output */

/* archives */
#define OTA_MAX_ARCHIVE_BYTES     (256u * 1024u * 1024u)

/* runner: the repository revision read from REPO/.git (runner/revision.c) */
#define OTA_MAX_GIT_REF_FILE_BYTES    4096u                 /* .git/HEAD or one loose ref */
#define OTA_MAX_GIT_PACKED_REFS_BYTES (64u * 1024u * 1024u) /* .git/packed-refs */
#define OTA_MAX_GIT_REFNAME_BYTES     1024u                 /* one ref name, with its NUL */
#define OTA_MAX_GIT_SYMREF_DEPTH      5u                    /* symbolic refs in a row (git: 5) */
#define OTA_MAX_GIT_OBJECT_BYTES      (1024u * 1024u)       /* one commit (or delta, or base) inflated */
#define OTA_MAX_GIT_DELTA_DEPTH       64u                   /* deltas on deltas (git's default: 50) */
#define OTA_MAX_GIT_PACKS             1024u                 /* pack indexes looked through */
#define OTA_MAX_GIT_INFLATE_BYTES     (64u * 1024u * 1024u) /* inflated by one work-tree walk's lookups */
/* runner: the work tree hashed as one git tree (runner/worktree.c) */
#define OTA_MAX_WORKTREE_ENTRIES 1000000u                       /* files, links, directories */
#define OTA_MAX_WORKTREE_BYTES   (8ull * 1024u * 1024u * 1024u) /* content of every file */
#define OTA_MAX_WORKTREE_DEPTH   128u                           /* directories deep */

#endif
