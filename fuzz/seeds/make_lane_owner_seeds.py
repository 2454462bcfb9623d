#!/usr/bin/env python3
"""(Re)writes fuzz/seeds/fuzz_lane_owner/: acceptances in the shapes a
schema-1 nonce store holds (docs/attestation.md, docs/nonce-store.md):
18([bstr protected {1: -7}, {} or the batch proof map, bstr payload map,
bstr 64-byte signature]), hand-encoded CBOR (the migration reads only the
payload's "issuer"; no signature is checked), plus near misses."""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fuzz_lane_owner')


def head(mt, n):
    if n < 24:
        return bytes([mt << 5 | n])
    for ai, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([mt << 5 | ai]) + n.to_bytes(width, 'big')


def enc(v):
    if isinstance(v, bool):
        return bytes([0xf5 if v else 0xf4])
    if isinstance(v, int):
        return head(0, v) if v >= 0 else head(1, -1 - v)
    if isinstance(v, bytes):
        return head(2, len(v)) + v
    if isinstance(v, str):
        b = v.encode()
        return head(3, len(b)) + b
    if isinstance(v, list):
        return head(4, len(v)) + b''.join(enc(x) for x in v)
    if isinstance(v, dict):
        return head(5, len(v)) + b''.join(enc(k) + enc(x) for k, x in v.items())
    raise TypeError(v)


def sign1(payload, unprotected=None):
    return b'\xd2' + enc([enc({1: -7}), unprotected or {}, enc(payload), bytes(64)])


PAY = {'kind': 'ota.acceptance/v1', 'attestation': 'sha256:' + '11' * 32,
       'issuer': 'issuer:acme', 'txn': 'txn-1', 'boundary': 'sha256:' + '22' * 32,
       'accepted_at': 1796009645}
SEEDS = {
    'single': sign1(PAY),
    'batch': sign1(PAY, {'batch': [0, 3, [bytes(32), bytes(32)]]}),
    'issuer_first': sign1({'issuer': 'p', 'kind': 'ota.acceptance/v1'}),
    'no_issuer': sign1({k: v for k, v in PAY.items() if k != 'issuer'}),
    'issuer_not_text': sign1(dict(PAY, issuer=7)),
    'untagged': enc([enc({1: -7}), {}, enc(PAY), bytes(64)]),
    'truncated': sign1(PAY)[:40],
}
os.makedirs(OUT, exist_ok=True)
for name, b in SEEDS.items():
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(b)
