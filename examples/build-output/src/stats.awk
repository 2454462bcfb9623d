# stats.awk - summary statistics of a column of numbers.
#
# Input: one number per line; blank lines and lines starting with '#' are
# skipped. Output: count, sum, min, max, mean and median, one per line.
# An input line that is not a number is an error (exit status 2).
# Coverage: when the environment names STATS_COV, every function appends its
# name to that file (tests/run.sh turns that into coverage/).

function cov(name) {
	if (ENVIRON["STATS_COV"] != "")
		print name >> ENVIRON["STATS_COV"]
}

function is_number(s) {
	cov("is_number")
	return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/
}

function insert_sorted(v,    i) {
	cov("insert_sorted")
	i = n
	while (i > 0 && vals[i] > v) {
		vals[i + 1] = vals[i]
		i--
	}
	vals[i + 1] = v
	n++
}

function median(    m) {
	cov("median")
	if (n % 2 == 1)
		return vals[(n + 1) / 2]
	m = n / 2
	return (vals[m] + vals[m + 1]) / 2
}

function fmt(x) {
	cov("fmt")
	if (x == int(x))
		return sprintf("%d", x)
	return sprintf("%.2f", x)
}

function fail(msg) {
	cov("fail")
	print "stats: line " NR ": " msg > "/dev/stderr"
	bad = 1
	exit 2
}

BEGIN { n = 0; sum = 0; bad = 0 }

/^[ \t]*(#|$)/ { next }

{
	gsub(/^[ \t]+|[ \t]+$/, "")
	if (!is_number($0))
		fail("not a number: " $0)
	insert_sorted($0 + 0)
	sum += $0
}

END {
	if (bad)
		exit 2
	print "count " n
	if (n == 0)
		exit 0
	print "sum " fmt(sum)
	print "min " fmt(vals[1])
	print "max " fmt(vals[n])
	print "mean " fmt(sum / n)
	print "median " fmt(median())
}
