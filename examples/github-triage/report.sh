#!/bin/sh
# Count the issues labelled, by label, into work/report.md.
set -eu
{
	echo "# Triage $(date -u +%Y-%m-%d)"
	echo
	cut -f2 work/applied.tsv | tr ',' '\n' | sort | uniq -c | sort -rn | awk '{ print "- " $2 ": " $1 }'
} >work/report.md
cat work/report.md
