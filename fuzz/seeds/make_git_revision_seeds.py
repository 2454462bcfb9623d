#!/usr/bin/env python3
"""(Re)writes fuzz/seeds/fuzz_git_revision/: small .git trees in the
harness's format (fuzz/fuzz_git_revision.c): parts separated by the line
"=====": HEAD, packed-refs, then loose refs as "NAME\\n" + content.
The object ids are arbitrary lowercase hex (the resolver never reads
objects); the shapes are git's own (git pack-refs, git init
--object-format=sha256, git symbolic-ref)."""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fuzz_git_revision')
SEP = '\n=====\n'
A = '0123456789abcdef0123456789abcdef01234567'
B = 'fedcba9876543210fedcba9876543210fedcba98'
S = '0123456789abcdef' * 4  # a SHA-256 object id
HDR = '# pack-refs with: peeled fully-peeled sorted \n'

SEEDS = {
    'detached': A + '\n',
    # a submodule's .git file (also read as part 0 by ota_git_gitdir_parse)
    'gitdir_depth1': 'gitdir: ../.git/modules/dep\n',
    'gitdir_depth2_nonl': 'gitdir: ../../.git/modules/lib/dep',
    'detached_sha256_nonl': S,
    'ref_to_loose': 'ref: refs/heads/main\n' + SEP + '' + SEP + 'refs/heads/main\n' + A + '\n',
    'ref_to_packed': 'ref: refs/heads/main\n' + SEP + HDR + A + ' refs/heads/main\n' +
                     B + ' refs/tags/v1\n^' + A + '\n',
    'packed_peeled_tags': 'ref: refs/heads/main\n' + SEP + HDR + B + ' refs/tags/a\n^' + A +
                          '\n' + A + ' refs/heads/main\n' + B + ' refs/tags/v1\n^' + A + '\n',
    'loose_over_packed': 'ref: refs/heads/main\n' + SEP + HDR + B + ' refs/heads/main\n' + SEP +
                         'refs/heads/main\n' + A + '\n',
    'sha256_packed': 'ref: refs/heads/main\n' + SEP + HDR + S + ' refs/heads/main\n',
    'symref_chain': 'ref: refs/heads/a\n' + SEP + HDR + A + ' refs/heads/c\n' + SEP +
                    'refs/heads/a\nref: refs/heads/b\n' + SEP + 'refs/heads/b\nref: refs/heads/c\n',
    'symref_loop': 'ref: refs/heads/a\n' + SEP + SEP + 'refs/heads/a\nref: refs/heads/b\n' + SEP +
                   'refs/heads/b\nref: refs/heads/a\n',
    'unborn': 'ref: refs/heads/main\n',
    'reftable': 'ref: refs/heads/.invalid\n',
    'packed_unterminated': 'ref: refs/heads/main\n' + SEP + A + ' refs/heads/main',
}

os.makedirs(OUT, exist_ok=True)
for name, text in SEEDS.items():
    with open(os.path.join(OUT, name), 'w') as f:
        f.write(text)
