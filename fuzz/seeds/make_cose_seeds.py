#!/usr/bin/env python3
"""(Re)writes fuzz/seeds/fuzz_cose_verify/ from the COSE vectors.

Each seed is one option byte (see fuzz/fuzz_cose_verify.c) followed by the
message bytes:
  vectors/cose/<case>/input.cbor.hex      -> cose_<case>.bin
  sign1-vectors.json (public examples)    -> pub_<name>.bin, with the option
      byte chosen so that the fuzzer's fixed key is the vector's key, its
      external AAD is supplied and untagged messages are allowed when needed,
      and pubkeyset_<name>.bin, the same through the key-set path.

  make_cose_seeds.py [PATH/TO/sign1-vectors.json]
(default: ../shared/vectors/cose/sign1-vectors.json beside the checkout).
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
OUT = os.path.join(HERE, 'fuzz_cose_verify')
KEYS = {'bac5b11cad8f99f9': 0, '9132723f6292b010': 1, '0072992cb3ac08ec': 2,
        'd75a980182b10ab7': 3}  # x prefixes of the fuzzer's fixed keys
AAD = '11aa22bb'


def put(name, opt, msg_hex):
    name = re.sub(r'[^A-Za-z0-9_.-]', '_', name)
    with open(os.path.join(OUT, name + '.bin'), 'wb') as f:
        f.write(bytes([opt]) + bytes.fromhex(msg_hex))


def main(argv):
    shared = argv[0] if argv else os.path.join(ROOT, '..', 'shared', 'vectors', 'cose',
                                               'sign1-vectors.json')
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith('.bin'):
            os.remove(os.path.join(OUT, f))
    n = 0
    vdir = os.path.join(ROOT, 'vectors', 'cose')
    for case in sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []:
        p = os.path.join(vdir, case, 'input.cbor.hex')
        if not os.path.exists(p):
            continue
        hx = ''.join(open(p).read().split())
        opt = 0
        if os.path.exists(os.path.join(vdir, case, 'options')) and \
                'untagged' in open(os.path.join(vdir, case, 'options')).read():
            opt |= 1
        put('cose_' + case, opt, hx)
        n += 1
    if os.path.exists(shared):
        for v in json.load(open(shared))['vectors']:
            x = (v.get('key_hex') or {}).get('x', '')[:16]
            opt = (KEYS.get(x, 0) << 3) | (0 if v.get('tagged') else 1)
            if v.get('external_aad_hex') == AAD:
                opt |= 2
            put('pub_' + v['name'], opt, v['cbor_hex'])
            put('pubkeyset_' + v['name'], opt | 0x20, v['cbor_hex'])  # bit 5: key set too
            n += 2
    print('%d seeds in %s' % (n, OUT))
    return 0 if n > 0 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
