#!/bin/sh
# Accept shard $1's labels: a line for every issue of the shard, and only
# labels the repository has.
set -eu
tsv="work/labels-$1.tsv"
[ -s "$tsv" ] || { echo "$tsv is missing or empty" >&2; exit 1; }
for n in $(jq -r '.[].number' "work/shard-$1.json"); do
	grep -q "^$n	" "$tsv" || { echo "$tsv has no line for #$n" >&2; exit 1; }
done
cut -f2 "$tsv" | tr ',' '\n' | sed '/^$/d' | sort -u | while read -r label; do
	grep -qxF "$label" work/labels.txt || { echo "$tsv: no label \"$label\" in this repository" >&2; exit 1; }
done
