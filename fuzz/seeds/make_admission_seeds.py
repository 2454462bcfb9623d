#!/usr/bin/env python3
"""(Re)writes fuzz/seeds/fuzz_admission/ (see fuzz/fuzz_admission.c).

Each seed is one mode byte, then an attestation payload (mode 1: the target
signs it with the issuer's key) in deterministic CBOR, with the placeholders
the target replaces: the 16-byte nonce "NONCE_PLACEHOLD!" and the trust root
"sha256:" + 64 zeros. Mode 0 seeds are whole COSE_Sign1 bodies (refused:
their key is not the target's, which is made at start-up).
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'fuzz_admission')
NOW = 1800000000
NONCE = b'NONCE_PLACEHOLD!'
ROOT = 'sha256:' + '0' * 64


def head(mt, v):
    if v < 24:
        return bytes([mt << 5 | v])
    for ai, n in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if v < 1 << (8 * n):
            return bytes([mt << 5 | ai]) + v.to_bytes(n, 'big')


def enc(x):
    if isinstance(x, bool):
        return b'\xf5' if x else b'\xf4'
    if x is None:
        return b'\xf6'
    if isinstance(x, int):
        return head(0, x) if x >= 0 else head(1, -1 - x)
    if isinstance(x, bytes):
        return head(2, len(x)) + x
    if isinstance(x, str):
        b = x.encode()
        return head(3, len(b)) + b
    if isinstance(x, list):
        return head(4, len(x)) + b''.join(enc(i) for i in x)
    if isinstance(x, dict):
        items = sorted((enc(k), enc(v)) for k, v in x.items())
        return head(5, len(items)) + b''.join(k + v for k, v in items)
    raise TypeError(x)


def claims(over=None, **kw):
    c = {1: 'issuer:acme', 4: NOW + 120, 6: NOW - 5, 10: NONCE,
         'kind': 'initial_application', 'txn': 'txn-1', 'trust_root': ROOT,
         'provider': 'oci_remote', 'boundary': 'boundary-1'}
    c.update(over or {})
    c.update(kw)
    return {k: v for k, v in c.items() if v is not ...}


def put(name, mode, payload):
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(bytes([mode]) + payload)


os.makedirs(OUT, exist_ok=True)
put('minimal', 1, enc(claims()))
put('full', 1, enc(claims({
    7: b'cti-0001', 'adapter': 'remote-adapter/1.0',
    'platform': {'os': 'linux', 'architecture': 'amd64', 'variant': 'v1'},
    'segment': 'build', 'policy': {'canonical': 'sha256:' + '1' * 64,
                                   'effective': 'sha256:' + '2' * 64},
    'body': {'x': 1, 'list': [1, -2, 'three', b'\x04', None, True, {'n': {}}]}})))
put('with_prior', 1, enc(claims(prior='sha256:' + '3' * 64, kind='terminal_application')))
put('other_lane', 1, enc(claims(boundary='boundary-2', kind='transition')))
put('stale', 1, enc(claims({6: NOW - 4000, 4: NOW - 3000})))
put('wrong_kind', 1, enc(claims(kind='receipt')))
put('missing_boundary', 1, enc(claims(boundary=...)))
# mode 0: a well-formed COSE_Sign1 of the minimal payload under a foreign key
protected = enc({1: -7, 4: b'\x11' * 32})
put('cose_foreign_key', 0, b'\xd2' + enc([protected, {}, enc(claims()), b'\x00' * 64]))
