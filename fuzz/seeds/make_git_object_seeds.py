#!/usr/bin/env python3
"""(Re)writes fuzz/seeds/fuzz_git_object/ in the harness's format
(fuzz/fuzz_git_object.c): a mode byte, then a delta (mode 0), a commit
object's bytes (mode 1) or a pack pair (mode 2: an id-length byte, the id,
a 4-byte little-endian index length, the .idx, the .pack). The packs are
git's own: a small repository of similar commits repacked with offset
deltas, with reference deltas, and in SHA-256; the id chosen is a commit git
stored as a delta (git verify-pack), so the seeds reach the delta code and
the id check."""
import glob
import os
import struct
import subprocess
import tempfile

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fuzz_git_object')
ENV = dict(os.environ, GIT_AUTHOR_NAME='f', GIT_AUTHOR_EMAIL='f@f', GIT_COMMITTER_NAME='f',
           GIT_COMMITTER_EMAIL='f@f', GIT_AUTHOR_DATE='1700000000 +0000',
           GIT_COMMITTER_DATE='1700000000 +0000', GIT_CONFIG_NOSYSTEM='1', HOME='/nonexistent')


def git(d, *args):
    return subprocess.run(['git', '-C', d] + list(args), check=True, env=ENV,
                          capture_output=True).stdout.decode()


def pack_seed(init, repack, id_len):
    with tempfile.TemporaryDirectory() as d:
        git(d, 'init', '-q', *init)
        for i in range(8):
            with open(os.path.join(d, 'f%d' % i), 'w') as f:
                f.write('%d\n' % i)
            git(d, 'add', '-A')
            msg = ''.join('line %d of a message long enough for a delta\n' % k for k in range(30))
            git(d, 'commit', '-q', '-m', msg + 'commit %d' % i)
        git(d, *repack)
        idx = glob.glob(os.path.join(d, '.git/objects/pack/*.idx'))[0]
        deltas = [l.split()[0] for l in git(d, 'verify-pack', '-v', idx).splitlines()
                  if len(l.split()) >= 7 and l.split()[1] == 'commit']
        oid = bytes.fromhex(deltas[0] if deltas else git(d, 'rev-parse', 'HEAD').strip())
        ib = open(idx, 'rb').read()
        pb = open(idx[:-4] + '.pack', 'rb').read()
        return bytes([2, 0 if id_len == 20 else 1]) + oid + struct.pack('<I', len(ib)) + ib + pb


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        'pack_ofs_delta': pack_seed([], ['repack', '-q', '-a', '-d', '-f', '--window=50'], 20),
        'pack_ref_delta': pack_seed([], ['-c', 'repack.useDeltaBaseOffset=false', 'repack', '-q',
                                         '-a', '-d', '-f', '--window=50'], 20),
        'pack_sha256': pack_seed(['--object-format=sha256'],
                                 ['repack', '-q', '-a', '-d', '-f', '--window=50'], 32),
        # copy "world" from "hello, world", insert "!"
        'delta_copy_insert': bytes([0, 12, 0]) + b'hello, world' + bytes([12, 6, 0x91, 7, 5, 1]) + b'!',
        'commit_sha1': bytes([1]) + b'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n'
                       b'author f <f@f> 1700000000 +0000\n\nm\n',
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
