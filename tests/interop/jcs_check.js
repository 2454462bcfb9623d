#!/usr/bin/env node
'use strict';
/*
 * Checks the JCS golden vectors (vectors/jcs/<case>/output.json) against an
 * independent RFC 8785 implementation: the npm package `canonicalize` over
 * JavaScript's own JSON.parse (whose strings are UTF-16, so RFC 8785's member
 * order is the language's native string order). For every case with an
 * output.json: canonicalize(JSON.parse(input)) must equal output.json byte
 * for byte, and canonicalize(JSON.parse(output)) must too. Refusal vectors
 * are not checked here (JSON.parse accepts duplicates and lone surrogates;
 * tests/tools/jcs_check.py checks them).
 *
 *   jcs_check.js VECTOR_DIR      prints "N passed, N failed"; exit 0 when none failed
 */
const fs = require('fs');
const path = require('path');
const canonicalize = require('canonicalize');

const dir = process.argv[2];
if (!dir) {
	process.stderr.write('usage: jcs_check.js VECTOR_DIR\n');
	process.exit(2);
}
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
let pass = 0, fail = 0;
for (const c of fs.readdirSync(dir).sort()) {
	const out = path.join(dir, c, 'output.json');
	if (!fs.existsSync(out))
		continue;
	const want = fs.readFileSync(out);
	try {
		const got = Buffer.from(canonicalize(JSON.parse(utf8.decode(fs.readFileSync(path.join(dir, c, 'input.json'))))), 'utf8');
		const again = Buffer.from(canonicalize(JSON.parse(utf8.decode(want))), 'utf8');
		if (!got.equals(want))
			throw new Error(`differs:\n  want ${want.toString()}\n  got  ${got.toString()}`);
		if (!again.equals(want))
			throw new Error('output.json is not a fixed point');
		pass++;
	} catch (e) {
		fail++;
		process.stdout.write(`FAIL ${c}: ${e.message}\n`);
	}
}
process.stdout.write(`${pass} passed, ${fail} failed\n`);
process.exit(fail === 0 && pass > 0 ? 0 : 1);
