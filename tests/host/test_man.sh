#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The documentation: every man page in tools/man/ renders without a
# warning from man-db and from groff, carries its licence line and names
# its own section; README.md stays a user's page (at most 12 KiB), and
# every relative link in it and in the folder READMEs names a file that
# exists.
set -u
. "$(dirname "$0")/lib.sh"
cd "$top"

have_man=1
for t in man groff; do
	if ! command -v "$t" >/dev/null 2>&1; then
		fail "$t is installed (man-db, groff-base: tests/vm/deps.sh)"
		have_man=0
	fi
done

pages=$(ls tools/man/*.[0-9] 2>/dev/null)
check "tools/man/ has man pages" [ -n "$pages" ]
for p in $pages; do
	name=${p#tools/man/}
	sec=${p##*.}
	first=$(head -n 1 "$p")
	check "$name: licence line first" \
		[ "$first" = '.\" SPDX-License-Identifier: BSD-2-Clause' ]
	th=$(sed -n 's/^\.TH [^ ]* \([0-9]\) .*/\1/p' "$p")
	check "$name: .TH names section $sec" [ "$th" = "$sec" ]
	[ "$have_man" = 1 ] || continue
	# man-db's own warnings (groff -wmac) and groff's with every warning
	# on, at a terminal's width; both must say nothing.
	out=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$p" 2>&1 >/dev/null)
	check "$name: man --warnings -l is silent${out:+ (said: $out)}" [ -z "$out" ]
	out=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$p" 2>&1)
	check "$name: groff -man -ww is silent${out:+ (said: $out)}" [ -z "$out" ]
	lines=$(MANWIDTH=80 LC_ALL=C.UTF-8 man -l "$p" 2>/dev/null | wc -l)
	check "$name: renders ($lines lines)" [ "$lines" -gt 10 ]
done

size=$(wc -c <README.md)
check "README.md is at most 12288 bytes ($size)" [ "$size" -le 12288 ]

# [text](target): every target that is not a URL or an anchor, relative to
# the file's folder, with any #fragment taken off.
for md in README.md kernel/README.md tests/README.md tools/README.md; do
	[ -f "$md" ] || { fail "$md exists"; continue; }
	dir=$(dirname "$md")
	bad=""
	n=0
	for target in $(grep -o '\]([^)]*)' "$md" | sed 's/^](//; s/)$//'); do
		case $target in
		http://* | https://* | mailto:* | '#'*) continue ;;
		esac
		n=$((n + 1))
		[ -e "$dir/${target%%#*}" ] || bad="$bad $target"
	done
	check "$md: its $n relative links name files that exist${bad:+ (missing:$bad)}" [ -z "$bad" ]
done
done_testing
