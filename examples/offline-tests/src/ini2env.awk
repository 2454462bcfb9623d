# ini2env.awk - an INI file to shell environment assignments.
#
#   [server]            ->  SERVER_HOST='example.internal'
#   host = example.internal
#
# Sections and keys are upper-cased, characters other than [A-Z0-9_] become
# '_'; values are trimmed and single-quoted (a ' inside becomes '\''). Lines
# starting with ';' or '#' and blank lines are skipped. A key outside any
# section has no prefix. A malformed line is an error: the line number on
# stderr and exit status 2.

function ident(s) {
	s = toupper(s)
	gsub(/[^A-Z0-9_]/, "_", s)
	return s
}

function trim(s) {
	gsub(/^[ \t]+|[ \t]+$/, "", s)
	return s
}

function quote(s) {
	gsub(/'/, "'\\''", s)
	return "'" s "'"
}

BEGIN { section = ""; bad = 0 }

/^[ \t]*([;#]|$)/ { next }

/^[ \t]*\[[^]]+\][ \t]*$/ {
	s = $0
	sub(/^[ \t]*\[/, "", s)
	sub(/\][ \t]*$/, "", s)
	section = ident(trim(s))
	next
}

/=/ {
	i = index($0, "=")
	key = trim(substr($0, 1, i - 1))
	if (key == "") {
		print "ini2env: line " NR ": empty key" > "/dev/stderr"
		bad = 1
		exit 2
	}
	name = ident(key)
	if (section != "")
		name = section "_" name
	print name "=" quote(trim(substr($0, i + 1)))
	next
}

{
	print "ini2env: line " NR ": not a section or key = value" > "/dev/stderr"
	bad = 1
	exit 2
}

END { if (bad) exit 2 }
