#!/bin/sh
# Reconcile before applying again: exit 0 when every proposed line has been
# applied (done), 1 when some remain (run apply-labels.sh, which adds labels:
# applying one twice changes nothing).
[ -f work/applied.tsv ] || exit 1
cat work/labels-*.tsv | while read -r line; do
	grep -qxF "$line" work/applied.tsv || exit 1
done
