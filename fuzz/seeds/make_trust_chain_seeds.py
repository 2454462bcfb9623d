#!/usr/bin/env python3
"""(Re)writes fuzz/seeds/fuzz_trust_chain/ from the trust chain vectors.

vectors/trust/chains/<case>/ (made by vectors/trust/generate.sh with the
project's own `ota trust` commands: init, add-principal, add-key,
revoke-key, rotate, sign) lists its files in case.json, the pinned snapshot
first. Ten cases (CASES) whose pinned 1.json is the harness's fixed pinned
snapshot (ok_chain_with_rotation/1.json) becomes one seed: the option byte
(fuzz/fuzz_trust_chain.c: the case's "at" as bits 0-1, 2000000000 -> 1,
else 0; bit 2 (a verifier state) on for the ok cases) followed by the other
files, each as a 4-byte big-endian length and its bytes.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
CHAINS = os.path.join(ROOT, 'vectors', 'trust', 'chains')
OUT = os.path.join(HERE, 'fuzz_trust_chain')
PINNED = open(os.path.join(CHAINS, 'ok_chain_with_rotation', '1.json'), 'rb').read()
TIMES = {1800000000: 0, 2000000000: 1, 1700000000: 2, 1700000015: 3}
# a handful: one per outcome of the walk (the other cases differ in parsing,
# which fuzz_trust_snapshot covers)
CASES = {'ok_chain_with_rotation', 'ok_pinned_only', 'ok_same_version_again', 'equivocation',
         'rollback', 'revocation_dropped', 'freeze_after_expiry',
         'rotation_missing_old_threshold', 'mix_and_match_prev', 'version_skip'}

os.makedirs(OUT, exist_ok=True)
for case in sorted(os.listdir(CHAINS)):
    d = os.path.join(CHAINS, case)
    spec = json.load(open(os.path.join(d, 'case.json')))
    files = spec['files']
    if case not in CASES or open(os.path.join(d, files[0]), 'rb').read() != PINNED or spec['at'] not in TIMES:
        continue
    opt = TIMES[spec['at']] | (4 if spec['expect'] == 'ok' else 0)
    out = bytes([opt])
    for f in files[1:]:
        b = open(os.path.join(d, f), 'rb').read()
        out += struct.pack('>I', len(b)) + b
    with open(os.path.join(OUT, case + '.bin'), 'wb') as f:
        f.write(out)
