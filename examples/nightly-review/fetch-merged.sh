#!/bin/sh
# Fetch the diff of every pull request of $GH_REPO merged in the last day into
# work/prs/<number>.diff (gh; its rate limit is the task's quota).
set -eu
mkdir -p work/prs
since=$(date -u -d '1 day ago' +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -v-1d +%Y-%m-%dT%H:%M:%SZ)
gh pr list --repo "$GH_REPO" --state merged --search "merged:>=$since" --limit 100 \
	--json number,title --jq '.[] | "\(.number)\t\(.title)"' |
while IFS="$(printf '\t')" read -r number title; do
	{
		printf '#%s %s\n\n' "$number" "$title"
		gh pr diff "$number" --repo "$GH_REPO"
	} >"work/prs/$number.diff"
done
echo "fetched $(ls work/prs | wc -l) pull requests"
