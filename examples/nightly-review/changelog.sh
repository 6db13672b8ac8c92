#!/bin/sh
# Write work/CHANGELOG.md from the merge commits of the last day.
set -eu
mkdir -p work
{
	echo "# Merged $(date -u +%Y-%m-%d)"
	echo
	git log --merges --since='24 hours ago' --format='- %s (%h)'
} >work/CHANGELOG.md
