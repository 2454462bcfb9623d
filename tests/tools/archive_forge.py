#!/usr/bin/env python3
"""Forgeries of an ota.archive/v1 that hold the runner key: each must be refused.

  archive_forge.py OTA_VERIFY ARCHIVE ROOT KEY WORKDIR [protected]

ARCHIVE is a 9-attestation vector (vectors/archive/a.json: segments t1..t3),
KEY its FIXTURE runner key; with "protected", ARCHIVE is the run of
tests/cli/archive_protected.sh and its own cases run (PROTECTED_CASES, judged
at the verifier's time). The last segment's rendered, applied, initial and
terminal records are found by kind, their attestations by the claims' body.
Each case edits provider output, re-signs every attestation it touches and the receipt
with KEY (so every signature and digest is good), and runs ota-verify: the
case passes when the exit status is 1 and the failures name the expected
error. A control case re-signs without an edit and must reconcile (exit 0),
so a refusal is the verifier's judgement, not a broken forgery. Prints one
line per case and "N passed, M failed"; exits non-zero on any failure.
"""
import base64
import copy
import hashlib
import json
import os
import sqlite3
import struct
import subprocess
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

VERIFY, ARCHIVE, ROOT, KEY, WORK = sys.argv[1:6]
AT = "1800000100"
with open(KEY, "rb") as f:
    pem = f.read()
PRIV = serialization.load_pem_private_key(pem[pem.index(b"-----BEGIN"):], None)


# ---- CBOR (shortest form), COSE_Sign1 ES256 ----
def head(mt, v):
    if v < 24:
        return bytes([mt << 5 | v])
    for ai, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if v < 1 << (8 * struct.calcsize(fmt)):
            return bytes([mt << 5 | ai]) + struct.pack(fmt, v)
    raise ValueError(v)


class Tag:
    def __init__(self, t, v):
        self.t, self.v = t, v


def enc(x):
    if x is None:
        return b"\xf6"
    if x is True:
        return b"\xf5"
    if x is False:
        return b"\xf4"
    if isinstance(x, int):
        return head(0, x) if x >= 0 else head(1, -1 - x)
    if isinstance(x, bytes):
        return head(2, len(x)) + x
    if isinstance(x, str):
        b = x.encode()
        return head(3, len(b)) + b
    if isinstance(x, list):
        return head(4, len(x)) + b"".join(enc(i) for i in x)
    if isinstance(x, dict):
        return head(5, len(x)) + b"".join(enc(k) + enc(v) for k, v in x.items())
    if isinstance(x, Tag):
        return head(6, x.t) + enc(x.v)
    raise TypeError(x)


def dec(b, i=0):
    ib = b[i]
    i += 1
    mt, ai = ib >> 5, ib & 31
    if ai < 24:
        v = ai
    elif ai < 28:
        n = 1 << (ai - 24)
        v = int.from_bytes(b[i:i + n], "big")
        i += n
    else:
        raise ValueError("indefinite length")
    if mt == 0:
        return v, i
    if mt == 1:
        return -1 - v, i
    if mt == 2:
        return bytes(b[i:i + v]), i + v
    if mt == 3:
        return b[i:i + v].decode(), i + v
    if mt == 4:
        out = []
        for _ in range(v):
            x, i = dec(b, i)
            out.append(x)
        return out, i
    if mt == 5:
        out = {}
        for _ in range(v):
            k, i = dec(b, i)
            out[k], i = dec(b, i)
        return out, i
    if mt == 6:
        x, i = dec(b, i)
        return Tag(v, x), i
    return {20: False, 21: True, 22: None}[ai], i


def dec1(b):
    x, i = dec(b)
    assert i == len(b)
    return x


P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def es256(data):
    """ES256 in the one form ota signs and ota-verify takes: s in the lower half."""
    r, s = decode_dss_signature(PRIV.sign(data, ec.ECDSA(hashes.SHA256())))
    s = min(s, P256_N - s)
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def cose_parts(b64):
    t = dec1(base64.b64decode(b64))
    assert isinstance(t, Tag) and t.t == 18
    return t.v


def cose_sign(prot, unprot, payload):
    sig = es256(enc(["Signature1", prot, b"", payload]))
    return enc(Tag(18, [prot, unprot, payload, sig]))


# ---- JCS (the records here hold strings, integers, booleans, null) ----
def jcs(o):
    if isinstance(o, dict):
        ks = sorted(o, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + jcs(o[k]) for k in ks) + "}"
    if isinstance(o, list):
        return "[" + ",".join(jcs(x) for x in o) + "]"
    return json.dumps(o, ensure_ascii=False)


def jid(o):
    return "sha256:" + hashlib.sha256(jcs(o).encode()).hexdigest()


def sid(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


# ---- re-signing ----
def receipt_of(a):
    return json.loads(cose_parts(a["receipt"]["cose_sign1"])[2])


def resign_receipt(a, r):
    m = cose_parts(a["receipt"]["cose_sign1"])
    c = cose_sign(m[0], m[1], jcs(r).encode())
    a["receipt"] = {"identity": sid(c), "cose_sign1": base64.b64encode(c).decode()}


def claims_of(a, i):
    return dec1(cose_parts(a["attestations"][i]["cose_sign1"])[2])


def set_att(a, i, claims):
    m = cose_parts(a["attestations"][i]["cose_sign1"])
    c = cose_sign(m[0], m[1], enc(claims))
    a["attestations"][i]["cose_sign1"] = base64.b64encode(c).decode()
    a["attestations"][i]["identity"] = sid(c)
    return sid(c)


def fix_digests(a, r):
    chs = {c["identity"]: c for c in a["challenges"]}
    r["attestations_digest"] = jid([x["identity"] for x in a["attestations"]])
    r["challenges_digest"] = jid([{"identity": x["challenge"],
                                   "consumed_at": chs[x["challenge"]]["consumed_at"]}
                                  for x in a["attestations"]])
    r["acceptances_digest"] = jid([x["identity"] for x in a["acceptances"]])
    r["evidence_digest"] = jid([jid(e) for e in a["evidence"]])


CLAIM_BODY, CLAIM_PRIOR = "body", "prior"


def last_of(a, kind, phase):
    """Index of the last evidence record of kind (and phase)."""
    return max(i for i, e in enumerate(a["evidence"])
               if e.get("kind") == kind and e.get("phase") == phase)


def att_of(a, rec):
    """Index of the attestation whose claims' body is rec's identity."""
    want = jid(rec)
    return next(i for i in range(len(a["attestations"])) if claims_of(a, i)[CLAIM_BODY] == want)


def last_segment(a, cfg=None, appl_mounts=None, term=None, seg=None, rend_edit=None,
                 appl_edit=None):
    """Edits the last segment's records and re-signs them and the receipt."""
    r = receipt_of(a)
    ev = a["evidence"]
    rend, appl, init, trm = (ev[last_of(a, k, ph)] for k, ph in (
        ("ota.rendered_policy/v1", None), ("ota.applied_policy/v1", None),
        ("ota.application/v1", "initial"), ("ota.application/v1", "terminal")))
    ai_init, ai_term = att_of(a, init), att_of(a, trm)
    if cfg is not None:
        cfg(rend["config"])
    rend["config_identity"] = jid(rend["config"])
    if rend_edit is not None:
        rend_edit(rend)
    appl["rendered_policy"] = rend["config_identity"]
    if appl_mounts is not None:
        appl_mounts(appl["mounts"]["mounts"])
    if appl_edit is not None:
        appl_edit(appl)
    init["rendered_policy"], init["applied_policy"] = jid(rend), jid(appl)
    ci = claims_of(a, ai_init)
    ci[CLAIM_BODY] = jid(init)
    ia = set_att(a, ai_init, ci)
    trm["prior"] = jid(init)
    if term is not None:
        term(trm)
    ct = claims_of(a, ai_term)
    ct[CLAIM_BODY], ct[CLAIM_PRIOR] = jid(trm), ia
    ta = set_att(a, ai_term, ct)
    s = r["sandbox_policy"]["segments"][-1]
    s["rendered_policy_identity"], s["applied_policy_identity"] = jid(rend), jid(appl)
    s["initial_application_identity"], s["initial_attestation_identity"] = jid(init), ia
    s["terminal_application_identity"], s["terminal_attestation_identity"] = jid(trm), ta
    if seg is not None:
        seg(s, r)
    fix_digests(a, r)
    resign_receipt(a, r)
    return a


def claims_keys(a):
    """The CBOR labels of body and prior in this archive's claims (a text or int map)."""
    global CLAIM_BODY, CLAIM_PRIOR
    c = claims_of(a, len(a["attestations"]) - 1)
    CLAIM_BODY = "body" if "body" in c else 13
    CLAIM_PRIOR = "prior" if "prior" in c else 12
    assert CLAIM_BODY in c and CLAIM_PRIOR in c, sorted(map(str, c))


# ---- cases ----
def mounts_add(m):
    return lambda cfg: cfg["mounts"].append(m)


def ws_options(opts):
    def f(cfg):
        for m in cfg["mounts"]:
            if m["destination"] == "/workspace":
                m["options"] = opts
    return f


def term_set(k, v):
    return lambda t: t.__setitem__(k, v)


def inspection(**kw):
    return lambda t: t["terminal_inspection"].update(kw)


def exit_both(v):
    return dict(term=term_set("exit_status", v), seg=lambda s, r: s.__setitem__("exit_status", v))


def truncated(a):
    r = receipt_of(a)
    a["attestations"] = a["attestations"][:6]
    a["challenges"] = a["challenges"][:6]
    a["evidence"] = a["evidence"][:12]
    r["sandbox_policy"]["segments"] = r["sandbox_policy"]["segments"][:2]
    r["sandbox_policy"]["transition_identities"] = r["sandbox_policy"]["transition_identities"][:1]
    r["all_segments_ran"] = False
    fix_digests(a, r)
    resign_receipt(a, r)
    return a


def nonce_twice(a):
    """Two challenge records with one nonce (epochs 1 and 2), each answering an attestation."""
    r = receipt_of(a)
    c0, c1 = a["challenges"][0], a["challenges"][1]
    c1["nonce"], c1["epoch"] = c0["nonce"], 2
    raw = base64.b64decode(c0["nonce"])
    ch = {"kind": "ota.challenge/v1",
          "nonce": base64.urlsafe_b64encode(raw).decode().rstrip("="),
          "txn": c1["txn"], "issuer": c1["issuer"], "scope": c1["scope"],
          "issued_at": c1["issued_at"], "expires_at": c1["expires_at"], "epoch": 2}
    old = c1["identity"]
    c1["identity"] = jid(ch)
    a["attestations"][1]["challenge"] = c1["identity"]
    claims = claims_of(a, 1)
    nonce_key = next(k for k, v in claims.items() if isinstance(v, bytes) and len(v) == len(raw))
    claims[nonce_key] = raw
    renamed = {old: c1["identity"]}
    old_att = a["attestations"][1]["identity"]
    renamed[old_att] = set_att(a, 1, claims)
    # the segment's terminal record names it as its prior: re-signed too
    c2 = claims_of(a, 2)
    assert c2[CLAIM_PRIOR] == old_att
    c2[CLAIM_PRIOR] = renamed[old_att]
    old2 = a["attestations"][2]["identity"]
    renamed[old2] = set_att(a, 2, c2)
    blob = json.dumps(r)
    for k, v in renamed.items():
        blob = blob.replace(k, v)
    r = json.loads(blob)
    fix_digests(a, r)
    resign_receipt(a, r)
    return a


def canaries(edit):
    """Edits the last segment's canary results (the applied record's)."""
    return lambda a: last_segment(a, appl_edit=lambda appl: edit(appl["canaries"]))


def canary_drop(pred):
    return canaries(lambda cs: cs.__setitem__(slice(None), [c for c in cs if not pred(c)]))


def canary_set(pred, key, value):
    def edit(cs):
        next(c for c in cs if pred(c))[key] = value
    return canaries(edit)


def canaries_more(n, drop=None):
    """n more results that hold (deny canaries of other paths), and one dropped."""
    def edit(cs):
        cs.extend({"check": "deny", "target": "/workspace/more%d" % i, "ok": True}
                  for i in range(n))
        if drop is not None:
            cs[:] = [c for c in cs if not drop(c)]
    return canaries(edit)


def rewrap_receipt(a, how):
    """The same signed receipt in another envelope, no key involved."""
    prot, unprot, payload, sig = cose_parts(a["receipt"]["cose_sign1"])
    if how == "label":
        unprot = dict(unprot)
        unprot[99] = "x"
    else:
        sig = sig[:32] + (P256_N - int.from_bytes(sig[32:], "big")).to_bytes(32, "big")
    c = enc(Tag(18, [prot, unprot, payload, sig]))
    a["receipt"] = {"identity": sid(c), "cose_sign1": base64.b64encode(c).decode()}
    return a


ROOT_RW = ws_options(["rbind", "rw", "nosuid", "nodev", "rprivate"])
CASES = [
    # name, forge(a), extra args, expected error names (any one)
    ("control: re-signed, unedited", lambda a: last_segment(a), [], None),
    ("control: writable repo root", lambda a: last_segment(
        a, cfg=ROOT_RW, appl_mounts=lambda m: m[0].__setitem__("ro", False)), [],
     {"archive_control_mismatch"}),
    ("ro then rw options on the repo root", lambda a: last_segment(
        a, cfg=ws_options(["rbind", "ro", "rw"])), [], {"archive_control_mismatch"}),
    ("a second, writable mount on /workspace", lambda a: last_segment(
        a, cfg=mounts_add({"destination": "/workspace", "type": "bind", "source": "/repo",
                           "options": ["rbind", "rw"]}),
        appl_mounts=lambda m: m.append({"path": "/workspace", "ro": False})), [],
     {"archive_control_mismatch"}),
    ("an undeclared writable carve-out", lambda a: last_segment(
        a, cfg=mounts_add({"destination": "/workspace/src", "type": "bind", "source": "/repo/src",
                           "options": ["bind", "rw"]}),
        appl_mounts=lambda m: m.append({"path": "/workspace/src", "ro": False})), [],
     {"archive_control_mismatch"}),
    ("the repository bound writable elsewhere", lambda a: last_segment(
        a, cfg=mounts_add({"destination": "/mnt/repo", "type": "bind", "source": "/repo",
                           "options": ["rbind", "rw"]}),
        appl_mounts=lambda m: m.append({"path": "/mnt/repo", "ro": False})), [],
     {"archive_control_mismatch"}),
    ("a writable mount only the inspection shows", lambda a: last_segment(
        a, appl_mounts=lambda m: m.append({"path": "/srv", "fstype": "ext4", "root": "/data",
                                           "ro": False})), [],
     {"archive_control_mismatch"}),
    ("a host device filesystem", lambda a: last_segment(
        a, cfg=mounts_add({"destination": "/data", "type": "ext4", "source": "/dev/sda1",
                           "options": ["rw"]})), [], {"archive_control_mismatch"}),
    ("the host's network namespace joined", lambda a: last_segment(
        a, cfg=lambda c: c["linux"]["namespaces"].append(
            {"type": "network", "path": "/proc/1/ns/net"})), [], {"archive_control_mismatch"}),
    ("a writable root filesystem", lambda a: last_segment(
        a, cfg=lambda c: c.__setitem__("root", {"readonly": False})), [],
     {"archive_control_mismatch"}),
    # resource limits: the applied record's resources (read back from the
    # cgroups) are exactly the rendered linux.resources
    ("control: no limit rendered or read back (runc, --pids-limit 0)", lambda a: last_segment(
        a, cfg=lambda c: c["linux"].pop("resources"),
        appl_edit=lambda p: p["resources"].__setitem__("pids_limit", None)), [], None),
    ("control: pids 8192 rendered and read back", lambda a: last_segment(
        a, cfg=lambda c: c["linux"]["resources"]["pids"].__setitem__("limit", 8192),
        appl_edit=lambda p: p["resources"].__setitem__("pids_limit", 8192)), [], None),
    ("a pids limit read back that was not rendered", lambda a: last_segment(
        a, cfg=lambda c: c["linux"].pop("resources")), [], {"archive_resources_mismatch"}),
    ("a devices rule beside the rendered limits", lambda a: last_segment(
        a, cfg=lambda c: c["linux"]["resources"].__setitem__(
            "devices", [{"allow": True, "access": "rwm"}])), [],
     {"archive_resources_mismatch"}),
    ("a pids limit below oci_local's range, rendered and read back", lambda a: last_segment(
        a, cfg=lambda c: c["linux"]["resources"]["pids"].__setitem__("limit", 8),
        appl_edit=lambda p: p["resources"].__setitem__("pids_limit", 8)), [],
     {"archive_resources_mismatch"}),
    ("a limit read back from no cgroup", lambda a: last_segment(
        a, appl_edit=lambda p: p["resources"].__setitem__("pids_cgroup", None)), [],
     {"archive_resources_mismatch"}),
    ("the applied record without resources", lambda a: last_segment(
        a, appl_edit=lambda p: p.pop("resources")), [], {"archive_resources_mismatch"}),
    ("a memory limit as a string", lambda a: last_segment(
        a, cfg=lambda c: c["linux"]["resources"].__setitem__("memory", {"limit": 67108864}),
        appl_edit=lambda p: p["resources"].__setitem__("memory_limit_bytes", "67108864")), [],
     {"archive_resources_mismatch"}),
    ("no terminal inspection", lambda a: last_segment(
        a, term=lambda t: t.pop("terminal_inspection")), [], {"archive_status_mismatch"}),
    ("protected_unchanged null", lambda a: last_segment(
        a, term=inspection(protected_unchanged=None)), [], {"archive_status_mismatch"}),
    ("interrupted, claimed enforced", lambda a: last_segment(
        a, term=term_set("interrupted", True)), [], {"archive_status_mismatch"}),
    ("container still running", lambda a: last_segment(
        a, term=inspection(runtime_status="running", stopped=False)), [],
     {"archive_status_mismatch"}),
    ("a protected path changed", lambda a: last_segment(
        a, term=inspection(protected=[{"path": "x", "before": "f1", "after": "f2",
                                       "unchanged": False}])), [], {"archive_status_mismatch"}),
    ("an unknown terminal state", lambda a: last_segment(
        a, term=term_set("state", "enforced")), [], {"archive_status_mismatch"}),
    ("exit status 2^32", lambda a: last_segment(a, **exit_both(4294967296)), [],
     {"archive_status_mismatch"}),
    ("exit status as a string", lambda a: last_segment(a, **exit_both("137")), [],
     {"archive_status_mismatch"}),
    ("exit status null", lambda a: last_segment(a, **exit_both(None)), [],
     {"archive_status_mismatch"}),
    ("a record of another provider", lambda a: last_segment(
        a, term=term_set("provider", "oci_remote")), [], {"archive_binding_mismatch"}),
    ("rendered for another runtime", lambda a: last_segment(
        a, rend_edit=lambda r: r.__setitem__("runtime", "crun")), [],
     {"archive_binding_mismatch"}),
    ("terminal record timed before the initial one", lambda a: last_segment(
        a, term=term_set("at", 1)), [], {"archive_order"}),
    ("a lane cut short without a cause", truncated, [], {"archive_segment_mismatch"}),
    ("one nonce, two challenge records", nonce_twice, [], {"archive_challenge_reused"}),
    ("signed after --at", lambda a: last_segment(a), ["--at", "1799990000"],
     {"archive_stale"}),
    # the canary results, looked up in a sorted copy: order, duplicates and
    # more results than the 64 kept on the stack change nothing
    ("control: canary results in reverse order", canaries(lambda cs: cs.reverse()), [], None),
    ("control: every canary result twice", canaries(lambda cs: cs.extend(list(cs))), [], None),
    ("control: 100 more canary results", canaries_more(100), [], None),
    ("100 more canary results, the mount syscall's missing",
     canaries_more(100, lambda c: c.get("target") == "mount"), [], {"archive_canary_missing"}),
    ("the status canary missing", canary_drop(lambda c: c.get("check") == "status"), [],
     {"archive_canary_missing"}),
    ("an IPv6 DNS canary missing", canary_drop(lambda c: c.get("target") == "[2001:db8::1]:53"),
     [], {"archive_canary_missing"}),
    ("a syscall canary that did not hold", canary_set(
        lambda c: c.get("check") == "syscall", "ok", False), [], {"archive_canary_failed"}),
    ("a canary without a target", canary_set(
        lambda c: c.get("check") == "absent", "target", None), [], {"archive_canary_failed"}),
    # without the key: the receipt re-wrapped under another identity
    ("receipt re-wrapped with an unprotected label", lambda a: rewrap_receipt(a, "label"), [],
     {"archive_envelope"}),
    ("receipt re-signed by negating s", lambda a: rewrap_receipt(a, "negate"), [],
     {"archive_envelope"}),
]


def drop_mount(key, dest):
    def f(m):
        m[:] = [x for x in m if x.get(key) != dest]
    return f


def mount_last(rel):
    """The rendered config's mount at /workspace/REL moved to the end of the
    list (mounted last: over whatever lies below it)."""
    d = "/workspace/" + rel

    def f(c):
        m = c["mounts"]
        moved = [x for x in m if x.get("destination") == d]
        m[:] = [x for x in m if x.get("destination") != d] + moved
    return dict(cfg=f)


def drop_protected(rel, rendered=True, applied=True):
    """The protected path's own mount removed from the rendered config and/or
    the inspected mounts."""
    d = "/workspace/" + rel
    return dict(cfg=(lambda c: drop_mount("destination", d)(c["mounts"])) if rendered else None,
                appl_mounts=drop_mount("path", d) if applied else None)


# For an archive of `ota run` whose last segment declares writable_paths
# [reports] and protected_paths [ota.yaml, .github/workflows (absent),
# reports/keep.txt, reports/cfg/keep.json] (tests/cli/archive_protected.sh):
# a protected path with no mount of its own is read-only only through a
# read-only parent, and one below a directory of the carve-out only when that
# directory is a mount (a pin).
PROTECTED_CASES = [
    ("control: re-signed, unedited", lambda a: last_segment(a), [], None),
    ("ota.yaml unmounted under the read-only root (read-only through it)",
     lambda a: last_segment(a, **drop_protected("ota.yaml")), [], None),
    ("ota.yaml mounted as rendered, not as applied",
     lambda a: last_segment(a, **drop_protected("ota.yaml", rendered=False)), [],
     {"archive_control_mismatch"}),
    ("ota.yaml applied, not rendered",
     lambda a: last_segment(a, **drop_protected("ota.yaml", applied=False)), [],
     {"archive_control_mismatch"}),
    ("reports/keep.txt unmounted under the writable carve-out reports",
     lambda a: last_segment(a, **drop_protected("reports/keep.txt")), [],
     {"archive_control_mismatch"}),
    # reports/cfg/keep.json: reports/cfg, between the carve-out and the
    # protected file, is a pin (a mount of itself, so it cannot be renamed)
    ("pin reports/cfg unmounted (rendered and applied)",
     lambda a: last_segment(a, **drop_protected("reports/cfg")), [],
     {"archive_control_mismatch"}),
    ("pin reports/cfg rendered, not applied",
     lambda a: last_segment(a, **drop_protected("reports/cfg", rendered=False)), [],
     {"archive_control_mismatch"}),
    # mounts are made in list order: a writable mount after a protected path
    # below it would cover that path
    ("pin reports/cfg mounted after the protected reports/cfg/keep.json",
     lambda a: last_segment(a, **mount_last("reports/cfg")), [],
     {"archive_control_mismatch"}),
    ("carve-out reports mounted after the protected reports/keep.txt",
     lambda a: last_segment(a, **mount_last("reports")), [],
     {"archive_control_mismatch"}),
]


def main():
    global CASES, AT
    if len(sys.argv) > 6 and sys.argv[6] == "protected":
        CASES, AT = PROTECTED_CASES, None
    base = json.load(open(ARCHIVE))
    claims_keys(base)
    passed = failed = 0
    for n, (name, forge, extra, want) in enumerate(CASES):
        a = forge(copy.deepcopy(base))
        path = os.path.join(WORK, "forged-%02d.json" % n)
        with open(path, "w") as f:
            json.dump(a, f)
        args = [VERIFY, "archive", path, "--trust", ROOT, "--json"]
        args += extra if "--at" in extra or AT is None else ["--at", AT] + extra
        p = subprocess.run(args, capture_output=True, text=True)
        try:
            codes = {x["code"] for x in json.loads(p.stdout)["failures"]}
        except (ValueError, KeyError):
            codes = set()
        ok = p.returncode == 0 and not codes if want is None else \
            p.returncode == 1 and bool(codes & want)
        print("%s %s: exit %d %s" % ("ok  " if ok else "FAIL", name, p.returncode,
                                     sorted(codes) if codes else p.stderr.strip()[:200]))
        passed, failed = passed + ok, failed + (not ok)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
