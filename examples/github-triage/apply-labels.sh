#!/bin/sh
# Apply the proposed labels of every shard (gh; GitHub's quota).
set -eu
cat work/labels-*.tsv | while IFS="$(printf '\t')" read -r number labels; do
	gh issue edit "$number" --repo "$GH_REPO" --add-label "$labels"
	echo "$number	$labels" >>work/applied.tsv
done
