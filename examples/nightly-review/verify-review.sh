#!/bin/sh
# Accept the review only when every pull request fetched has a line in it and
# every line has the form the brief asks for.
set -eu
[ -s work/review.md ] || { echo "work/review.md is missing or empty" >&2; exit 1; }
for f in work/prs/*.diff; do
	[ -e "$f" ] || continue
	n=$(basename "$f" .diff)
	grep -q "^#$n[ :]" work/review.md || { echo "no line for #$n" >&2; exit 1; }
done
if grep -qv '^#[0-9][0-9]*[ :]' work/review.md; then
	echo "a line of work/review.md is not '#<number> …'" >&2
	exit 1
fi
