'use strict';
// cbor-x loads this inside try/catch and uses its JavaScript decoder when it throws.
throw new Error('cbor-extract native accelerator is not available (ota interop stub)');
