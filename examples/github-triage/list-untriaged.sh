#!/bin/sh
# List the open issues of $GH_REPO without labels and split them into $1
# shards (work/shard-N.json); write the repository's labels to
# work/labels.txt for the agents to choose from.
set -eu
shards=${1:-3}
mkdir -p work
gh label list --repo "$GH_REPO" --limit 200 --json name --jq '.[].name' >work/labels.txt
gh issue list --repo "$GH_REPO" --state open --search 'no:label' --limit 300 \
	--json number,title,body >work/untriaged.json
i=1
while [ "$i" -le "$shards" ]; do
	jq --argjson i "$i" --argjson n "$shards" '[to_entries[] | select(.key % $n == $i - 1) | .value]' \
		work/untriaged.json >"work/shard-$i.json"
	i=$((i + 1))
done
echo "$(jq length work/untriaged.json) untriaged issues in $shards shards"
