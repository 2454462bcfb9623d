#!/usr/bin/env node
'use strict';
/*
 * COSE_Sign1 interop helper: signs and verifies with implementations that
 * share no code with the toolkit, so tests/cli/interop_cose.sh can check
 * both directions.
 *
 *   keygen ALG PRIV.pem PUB.pem
 *       node:crypto key pair (PKCS#8 private, SPKI public).
 *   sign --lib LIB --alg ALG --key PRIV.pem --payload FILE --out FILE
 *        [--aad HEX] [--untagged]
 *       LIB auth0   @auth0/cose Sign1.sign (no external AAD support)
 *           cose-js cose-js sign.create (ES256/ES384/ES512, external AAD)
 *           raw     cbor-x Sig_structure + node:crypto (any alg, external
 *                   AAD), for what neither library can do
 *   verify --lib auth0|cose-js --alg ALG --key KEY.pem --msg FILE
 *          [--aad HEX] [--expect-payload FILE]
 *       exit 0 and prints "valid" when the signature verifies, the message
 *       is tagged 18, the protected alg is ALG and (if asked) the payload
 *       matches; exit 1 and prints "invalid: why" otherwise.
 *   tamper --msg FILE --out FILE --what sig|payload|protected
 *       flips one bit in the signature, the payload or the protected
 *       header bytes of a COSE_Sign1 (located by decoding it).
 *   batch FILE
 *       runs "WANT_RC COMMAND ARGS..." lines in one process (node starts
 *       once), reporting each line whose exit status differs.
 *
 * Exit status: 0 ok/valid, 1 invalid, 2 usage or environment error.
 */
const fs = require('fs');
const crypto = require('crypto');

const ALGS = {
	ES256: { id: -7, kind: 'ec', curve: 'P-256', hash: 'sha256', size: 32, elliptic: 'p256' },
	ES384: { id: -35, kind: 'ec', curve: 'P-384', hash: 'sha384', size: 48, elliptic: 'p384' },
	ES512: { id: -36, kind: 'ec', curve: 'P-521', hash: 'sha512', size: 66, elliptic: 'p521' },
	EdDSA: { id: -8, kind: 'ed25519' },
};

class UsageError extends Error {}

/* Usage or environment error: exit status 2 (one line of batch: rc 2). */
function die(msg) {
	throw new UsageError(msg);
}

let quiet = false;
function say(line) {
	if (!quiet)
		process.stdout.write(line + '\n');
}

function parseArgs(argv) {
	const o = { _: [] };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === '--untagged') {
			o.untagged = true;
		} else if (a.startsWith('--')) {
			if (i + 1 >= argv.length)
				die(`${a} needs a value`);
			o[a.slice(2)] = argv[++i];
		} else {
			o._.push(a);
		}
	}
	return o;
}

function algOf(name) {
	const a = ALGS[name];
	if (!a)
		die(`unknown alg ${name}`);
	return a;
}

function hexArg(h) {
	if (h === undefined || h === '')
		return Buffer.alloc(0);
	if (!/^([0-9a-fA-F]{2})*$/.test(h))
		die(`bad hex ${h}`);
	return Buffer.from(h, 'hex');
}

function b64u(s) {
	return Buffer.from(s, 'base64url');
}

function keygen(o) {
	const [name, privPath, pubPath] = o._;
	if (!pubPath)
		die('keygen ALG PRIV.pem PUB.pem');
	const a = algOf(name);
	const kp = a.kind === 'ec' ?
		crypto.generateKeyPairSync('ec', { namedCurve: a.curve }) :
		crypto.generateKeyPairSync('ed25519');
	fs.writeFileSync(privPath, kp.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
	fs.writeFileSync(pubPath, kp.publicKey.export({ type: 'spki', format: 'pem' }));
	return 0;
}

/* The node:crypto key of a PEM file: private when it holds one. */
function loadKey(path, wantPrivate) {
	const pem = fs.readFileSync(path);
	if (wantPrivate)
		return crypto.createPrivateKey(pem);
	try {
		return crypto.createPublicKey(pem);
	} catch (e) {
		return crypto.createPublicKey(crypto.createPrivateKey(pem));
	}
}

function checkKeyFits(a, key) {
	if (a.kind === 'ed25519') {
		if (key.asymmetricKeyType !== 'ed25519')
			die('EdDSA needs an Ed25519 key');
		return;
	}
	if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails.namedCurve !==
	    { 'P-256': 'prime256v1', 'P-384': 'secp384r1', 'P-521': 'secp521r1' }[a.curve])
		die(`${a.curve} key needed`);
}

async function signAuth0(a, name, key, payload, aad, untagged) {
	if (aad.length > 0)
		die('@auth0/cose cannot sign with external AAD (use --lib cose-js or raw)');
	const { Sign1, Headers, Algorithms } = require('@auth0/cose');
	const s = await Sign1.sign(new Map([[Headers.Algorithm, Algorithms[name]]]),
		new Map(), payload, key);
	if (!untagged)
		return Buffer.from(s.encode());
	/* the library only writes tagged messages: drop the tag (0xd2) */
	const t = Buffer.from(s.encode());
	if (t[0] !== 0xd2)
		die('unexpected encoding from @auth0/cose');
	return t.subarray(1);
}

async function signCoseJs(a, name, key, payload, aad, untagged) {
	if (a.kind !== 'ec')
		die('cose-js signs ECDSA only');
	const cose = require('cose-js');
	const jwk = key.export({ format: 'jwk' });
	const signer = { key: { d: b64u(jwk.d) } };
	if (aad.length > 0)
		signer.externalAAD = aad;
	const out = await cose.sign.create({ p: { alg: name }, u: {} }, payload, signer,
		{ excludetag: !!untagged });
	return Buffer.from(out);
}

async function signRaw(a, name, key, payload, aad, untagged) {
	const { Encoder, Tag } = require('cbor-x');
	const enc = new Encoder({ tagUint8Array: false, useRecords: false, mapsAsObjects: false });
	const prot = Buffer.from(enc.encode(new Map([[1, a.id]])));
	const tbs = Buffer.from(enc.encode(['Signature1', prot, aad, payload]));
	const sig = a.kind === 'ec' ?
		crypto.sign(a.hash, tbs, { key, dsaEncoding: 'ieee-p1363' }) :
		crypto.sign(null, tbs, key);
	const body = [prot, new Map(), payload, sig];
	return Buffer.from(enc.encode(untagged ? body : new Tag(body, 18)));
}

async function sign(o) {
	for (const r of ['lib', 'alg', 'key', 'payload', 'out'])
		if (!o[r])
			die(`sign needs --${r}`);
	const a = algOf(o.alg);
	const key = loadKey(o.key, true);
	checkKeyFits(a, key);
	const payload = fs.readFileSync(o.payload);
	const aad = hexArg(o.aad);
	const f = { auth0: signAuth0, 'cose-js': signCoseJs, raw: signRaw }[o.lib];
	if (!f)
		die(`unknown lib ${o.lib}`);
	const msg = await f(a, o.alg, key, payload, aad, o.untagged);
	fs.writeFileSync(o.out, msg);
	return 0;
}

/* Decodes with cbor-x only to locate parts; never used to decide validity. */
function sign1Parts(msg) {
	const { Decoder } = require('cbor-x');
	const dec = new Decoder({ mapsAsObjects: false, useRecords: false });
	/* strip tag 18 by hand: @auth0/cose registers a global cbor-x extension
	 * that would turn a tagged message into its own Sign1 object */
	let tag = null;
	let body = msg;
	if (msg.length > 0 && msg[0] === 0xd2) {
		tag = 18;
		body = msg.subarray(1);
	}
	const v = dec.decode(body);
	if (!Array.isArray(v) || v.length !== 4)
		throw new Error('not a COSE_Sign1 array');
	return { tag, prot: v[0], unprot: v[1], payload: v[2], sig: v[3] };
}

async function verifyAuth0(a, name, keyPath, msg, aad) {
	const { Sign1, Algorithms } = require('@auth0/cose');
	const key = loadKey(keyPath, false);
	const s = Sign1.decode(msg);
	if (s.protectedHeaders.get(1) !== Algorithms[name])
		throw new Error(`protected alg is ${s.protectedHeaders.get(1)}, want ${name}`);
	await s.verify(key, { externalAAD: aad, algorithms: [Algorithms[name]] });
	return Buffer.from(s.payload);
}

async function verifyCoseJs(a, name, keyPath, msg, aad) {
	if (a.kind !== 'ec')
		die('cose-js verifies ECDSA only');
	const cose = require('cose-js');
	const jwk = loadKey(keyPath, false).export({ format: 'jwk' });
	const verifier = { key: { x: b64u(jwk.x), y: b64u(jwk.y) } };
	if (aad.length > 0)
		verifier.externalAAD = aad;
	const p = sign1Parts(msg);
	const { Decoder } = require('cbor-x');
	const ph = new Decoder({ mapsAsObjects: false, useRecords: false }).decode(p.prot);
	if (ph.get(1) !== a.id)
		throw new Error(`protected alg is ${ph.get(1)}, want ${name}`);
	const out = await cose.sign.verify(msg, verifier, { defaultType: 18 });
	return Buffer.from(out);
}

async function verify(o) {
	for (const r of ['lib', 'alg', 'key', 'msg'])
		if (!o[r])
			die(`verify needs --${r}`);
	const a = algOf(o.alg);
	const msg = fs.readFileSync(o.msg);
	const aad = hexArg(o.aad);
	const f = { auth0: verifyAuth0, 'cose-js': verifyCoseJs }[o.lib];
	if (!f)
		die(`unknown lib ${o.lib}`);
	try {
		if (msg.length < 1 || msg[0] !== 0xd2)
			throw new Error('message is not tagged COSE_Sign1 (tag 18)');
		const payload = await f(a, o.alg, o.key, msg, aad);
		if (o['expect-payload'] !== undefined &&
		    !payload.equals(fs.readFileSync(o['expect-payload'])))
			throw new Error('payload differs from the expected bytes');
	} catch (e) {
		if (e instanceof UsageError)
			throw e;
		say(`invalid: ${e && e.message ? e.message : e}`);
		return 1;
	}
	say('valid');
	return 0;
}

/* Flips the lowest bit of the middle byte of one part, in place in the message bytes. */
function tamper(o) {
	for (const r of ['msg', 'out', 'what'])
		if (!o[r])
			die(`tamper needs --${r}`);
	const msg = Buffer.from(fs.readFileSync(o.msg));
	const p = sign1Parts(msg);
	const part = { sig: p.sig, payload: p.payload, protected: p.prot }[o.what];
	if (!part || part.length === 0)
		die(`no ${o.what} bytes to tamper with`);
	const hay = Buffer.from(part);
	/* the signature is last; the others are found by content (first hit) */
	const at = o.what === 'sig' ? msg.length - hay.length : msg.indexOf(hay);
	if (at < 0)
		die(`cannot locate ${o.what}`);
	/* middle byte of the signature or payload; last byte of the protected
	 * map (the alg value with only our headers): stays well-formed CBOR */
	const i = o.what === 'protected' ? at + hay.length - 1 : at + Math.floor(hay.length / 2);
	msg[i] ^= 0x01;
	fs.writeFileSync(o.out, msg);
	return 0;
}

async function run(argv) {
	const [cmd, ...rest] = argv;
	const o = parseArgs(rest);
	switch (cmd) {
	case 'keygen': return keygen(o);
	case 'sign': return sign(o);
	case 'verify': return verify(o);
	case 'tamper': return tamper(o);
	case 'batch': return batch(o);
	default: die('usage: cose_interop.js keygen|sign|verify|tamper|batch ...');
	}
}

/* One command's exit status; usage errors and exceptions give 2. */
async function runCaught(argv) {
	try {
		return { rc: await run(argv), why: '' };
	} catch (e) {
		return { rc: 2, why: e instanceof UsageError ? e.message : (e && e.stack) || String(e) };
	}
}

/*
 * batch FILE: runs one command per line, "WANT_RC COMMAND ARGS..." (words
 * split on blanks; '#' lines and blank lines skipped), in this one process,
 * and prints "FAIL ..." for each whose exit status differs from WANT_RC,
 * then "N passed, N failed". Exit 0 when none failed.
 */
async function batch(o) {
	const [file] = o._;
	if (!file)
		die('batch FILE');
	let pass = 0, fail = 0;
	quiet = true;
	for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
		const line = raw.trim();
		if (line === '' || line.startsWith('#'))
			continue;
		const [want, ...argv] = line.split(/\s+/);
		if (argv[0] === 'batch')
			die('batch inside batch');
		const r = await runCaught(argv);
		if (String(r.rc) === want) {
			pass++;
		} else {
			fail++;
			process.stdout.write(`FAIL (exit ${r.rc}, want ${want}): ${argv.join(' ')} ${r.why}\n`);
		}
	}
	quiet = false;
	process.stdout.write(`${pass} passed, ${fail} failed\n`);
	return fail === 0 ? 0 : 1;
}

runCaught(process.argv.slice(2)).then((r) => {
	if (r.rc === 2 && r.why)
		process.stderr.write(`cose_interop: ${r.why}\n`);
	process.exit(r.rc);
});
