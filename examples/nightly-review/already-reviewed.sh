#!/bin/sh
# Reconcile before a re-run: exit 0 when today's review is written already
# (done), 1 when it is not (run the review).
if [ -s work/review.md ] && [ work/review.md -nt work/prs ]; then
	exit 0
fi
exit 1
