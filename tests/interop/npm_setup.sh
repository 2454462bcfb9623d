# Sourced by tests/cli/interop_*.sh: installs tests/interop's pinned npm
# packages once per build tree, in $OTA_BINARY_DIR/interop-node (never in the
# source tree), again only when package.json or package-lock.json change, and
# copies the helper scripts next to them. Sets NODE_DIR. Needs SRC and BIN.
interop_node_setup() {
	local t stamp
	for t in node npm flock; do
		command -v "$t" >/dev/null || { echo "interop: $t is required (scripts/install-deps.sh)" >&2; return 1; }
	done
	NODE_DIR=$BIN/interop-node
	mkdir -p "$NODE_DIR" || return 1
	exec 9>"$NODE_DIR/.lock"
	flock 9
	stamp=$(cat "$SRC/tests/interop/package.json" "$SRC/tests/interop/package-lock.json" | sha256sum | cut -d' ' -f1)
	if [ ! -f "$NODE_DIR/.stamp" ] || [ "$(cat "$NODE_DIR/.stamp")" != "$stamp" ] ||
	   [ ! -d "$NODE_DIR/node_modules" ]; then
		rm -rf "$NODE_DIR/node_modules" "$NODE_DIR/.stamp" "$NODE_DIR/stub"
		cp "$SRC/tests/interop/package.json" "$SRC/tests/interop/package-lock.json" "$NODE_DIR/"
		cp -r "$SRC/tests/interop/stub" "$NODE_DIR/stub"
		if ! (cd "$NODE_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) \
			>"$NODE_DIR/npm.log" 2>&1; then
			cat "$NODE_DIR/npm.log" >&2
			echo "interop: npm ci failed" >&2
			flock -u 9
			return 1
		fi
		echo "$stamp" >"$NODE_DIR/.stamp"
	fi
	cp "$SRC"/tests/interop/*.js "$NODE_DIR/"
	flock -u 9
}
