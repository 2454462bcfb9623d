#!/usr/bin/env python3
"""Independent check of the JCS golden vectors in vectors/jcs/.

An RFC 8785 canonicaliser written from the RFC, sharing no code with
common/json.c, restricted to the toolkit's integer-only profile. For each
vectors/jcs/<case>/:

  input.json + output.json   output.json must be exactly JCS(input.json)
                             (no trailing newline), and JCS must be
                             idempotent on it;
  input.json + expect        "error=<name>": this implementation must refuse
                             the input for the same reason.

  jcs_check.py [--write] [VECTOR_DIR]

--write (re)creates output.json for cases without an expect file; use it
only when adding a case, then review the bytes. Exit 0 when every case
agrees, 1 otherwise. Prints "N passed, N failed".
"""
import json
import os
import sys

MAX_SAFE = 2**53 - 1
MAX_DEPTH = 64  # OTA_MAX_JSON_DEPTH: the root is depth 0


class Refused(Exception):
    def __init__(self, name, why):
        super().__init__(why)
        self.name = name


def _no_dups(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise Refused('json_duplicate_key', 'duplicate member %r' % k)
        seen.add(k)
    return dict(pairs)


def _const(name):
    raise Refused('json_syntax', 'non-standard constant %s' % name)


def _float(text):
    raise Refused('json_float_refused', 'real number %s' % text)


def _check_str(s):
    """Lone surrogates (from \\u escapes) and U+0000 are not admitted."""
    for i, ch in enumerate(s):
        o = ord(ch)
        if o == 0:
            raise Refused('json_syntax', 'NUL in string')
        if 0xD800 <= o <= 0xDFFF:
            raise Refused('json_syntax', 'lone surrogate U+%04X' % o)


def _walk(v, depth):
    if depth > MAX_DEPTH:
        raise Refused('too_deep', 'nesting deeper than %d' % MAX_DEPTH)
    if isinstance(v, dict):
        for k, m in v.items():
            _check_str(k)
            _walk(m, depth + 1)
    elif isinstance(v, list):
        for m in v:
            _walk(m, depth + 1)
    elif isinstance(v, str):
        _check_str(v)
    elif isinstance(v, bool) or v is None:
        pass
    elif isinstance(v, int):
        if abs(v) > MAX_SAFE:
            raise Refused('json_number_range', 'integer %d beyond 2^53-1' % v)


def _max_nesting(text):
    """Bracket depth outside strings, so deep input is refused before json.loads recurses."""
    depth = best = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == '\\':
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in '[{':
            depth += 1
            best = max(best, depth)
        elif ch in ']}':
            depth -= 1
    return best


def parse(data):
    try:
        text = data.decode('utf-8', errors='strict')
    except UnicodeDecodeError as e:
        raise Refused('json_invalid_utf8', str(e))
    if _max_nesting(text) > MAX_DEPTH + 1:
        raise Refused('too_deep', 'nesting deeper than %d' % MAX_DEPTH)
    try:
        v = json.loads(text, object_pairs_hook=_no_dups, parse_constant=_const,
                       parse_float=_float, strict=True)
    except Refused:
        raise
    except (ValueError, RecursionError) as e:
        raise Refused('json_syntax', str(e))
    _walk(v, 0)
    return v


def _utf16_key(s):
    # Big-endian UTF-16 bytes compare exactly like the sequence of code units.
    return s.encode('utf-16-be', 'surrogatepass')


_SHORT = {0x08: '\\b', 0x09: '\\t', 0x0A: '\\n', 0x0C: '\\f', 0x0D: '\\r',
          0x22: '\\"', 0x5C: '\\\\'}


def _str(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if o in _SHORT:
            out.append(_SHORT[o])
        elif o < 0x20:
            out.append('\\u%04x' % o)
        else:
            out.append(ch)  # everything else literally, U+007F and U+2028 included
    out.append('"')
    return ''.join(out)


def jcs(v):
    if v is None:
        return 'null'
    if v is True:
        return 'true'
    if v is False:
        return 'false'
    if isinstance(v, int):
        if abs(v) > MAX_SAFE:
            raise Refused('json_number_range', str(v))
        return str(v)  # ECMAScript Number.toString of a safe integer; -0 -> "0"
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return '[' + ','.join(jcs(m) for m in v) + ']'
    if isinstance(v, dict):
        keys = sorted(v.keys(), key=_utf16_key)
        return '{' + ','.join(_str(k) + ':' + jcs(v[k]) for k in keys) + '}'
    raise Refused('json_float_refused', repr(v))


def canonical(data):
    return jcs(parse(data)).encode('utf-8')


def check_case(d, write):
    inp = open(os.path.join(d, 'input.json'), 'rb').read()
    exp_path = os.path.join(d, 'expect')
    out_path = os.path.join(d, 'output.json')
    if os.path.exists(exp_path):
        want = open(exp_path).read().strip()
        if not want.startswith('error='):
            return 'expect file must read error=<name>, got %r' % want
        try:
            got = canonical(inp)
        except Refused as e:
            if 'error=' + e.name != want:
                return 'refused as %s (%s), vector says %s' % (e.name, e, want)
            return None
        return 'accepted (%r), vector says %s' % (got[:60], want)
    try:
        got = canonical(inp)
    except Refused as e:
        return 'refused as %s: %s' % (e.name, e)
    if write:
        open(out_path, 'wb').write(got)
    want = open(out_path, 'rb').read()
    if got != want:
        return 'JCS differs:\n  want %r\n  got  %r' % (want, got)
    if canonical(got) != got:
        return 'JCS is not idempotent on %r' % got
    return None


def main(argv):
    write = '--write' in argv
    args = [a for a in argv if a != '--write']
    here = os.path.dirname(os.path.abspath(__file__))
    root = args[0] if args else os.path.join(here, '..', '..', 'vectors', 'jcs')
    cases = sorted(c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c)))
    passed = failed = 0
    for c in cases:
        why = check_case(os.path.join(root, c), write)
        if why is None:
            passed += 1
        else:
            failed += 1
            print('FAIL %s: %s' % (c, why))
    print('%d passed, %d failed' % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
