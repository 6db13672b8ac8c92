#!/bin/sh
# Post the review and the changelog as one comment on the tracking issue.
set -eu
{
	echo "## Nightly review"
	echo
	cat work/review.md
	echo
	cat work/CHANGELOG.md
} >work/comment.md
gh issue comment "$TRACKING_ISSUE" --repo "$GH_REPO" --body-file work/comment.md
