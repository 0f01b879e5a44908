#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The library's shape (lib/README.md, "Layers"), checked so it stays:
#  - every file of lib/ belongs to a layer, and the layers are ordered
#      os < core < proto (with proto/tcp) < run < link < api < preload;
#  - a file includes only headers of its own layer or the public header
#    of a layer below it (os/os.h, core/core.h, proto/proto.h, run/run.h,
#    link/link.h, api/api.h): never one above, never another layer's
#    private header;
#  - one style for shared memory: lib/core/shm.h's helpers; no _Atomic,
#    <stdatomic.h>, volatile or __atomic builtin anywhere else in lib/;
#  - one door to the OS: no object of the library outside os/ and preload/
#    refers to a name that libsluice-preload.so interposes (nm -u), so the
#    stack's own descriptors never enter the preload's wrappers.
set -u
. "$(dirname "$0")/lib.sh"
cd "$top"

rank() {
	case $1 in
	os/*) echo 0 ;; core/*) echo 1 ;; proto/*) echo 2 ;; run/*) echo 3 ;;
	link/*) echo 4 ;; api/*) echo 5 ;; preload/*) echo 6 ;; *) echo -1 ;;
	esac
}
layer() { echo "${1%%/*}"; }
public="os/os.h core/core.h proto/proto.h run/run.h link/link.h api/api.h"

stray=$(cd lib && find . -name '*.[ch]' | sed 's|^\./||' | while read -r f; do
	[ "$(rank "$f")" -ge 0 ] || echo "$f"
done)
check "every source file of lib/ is in a layer${stray:+ (not: $stray)}" [ -z "$stray" ]

bad=""
n=0
while read -r f; do
	rf=$(rank "$f")
	while read -r inc; do
		n=$((n + 1))
		# Quoted includes are relative to lib/ (-Ilib) or to the file.
		if [ -f "lib/$inc" ]; then
			t=$inc
		elif [ -f "lib/$(dirname "$f")/$inc" ]; then
			t=$(realpath -m --relative-to=lib "lib/$(dirname "$f")/$inc")
		else
			bad="$bad $f:$inc(missing)"
			continue
		fi
		rt=$(rank "$t")
		if [ "$rt" -lt 0 ] || [ "$rt" -gt "$rf" ]; then
			bad="$bad $f->$t(up)"
		elif [ "$(layer "$t")" != "$(layer "$f")" ] && ! [[ " $public " == *" $t "* ]]; then
			bad="$bad $f->$t(private)"
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "lib/$f")
done < <(cd lib && find . -name '*.[ch]' | sed 's|^\./||' | sort)
check "no include runs up a layer or into another layer's private header ($n checked)${bad:+:$bad}" [ -z "$bad" ]

styles=$(grep -rnE '_Atomic|stdatomic\.h|volatile|__atomic_|__sync_' lib --include='*.[ch]' |
	grep -v '^lib/core/shm\.h:' | grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)' | cut -d: -f1,2 | tr '\n' ' ')
check "shared memory is touched only through core/shm.h${styles:+ (also: $styles)}" [ -z "$styles" ]

# The names the preload interposes, from its version script.
names=$(sed -n '/global:/,/local:/p' lib/preload/preload.map | tr -s ' \t;' '\n' |
	grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -v -e '^global$' -e '^local$' | sort -u)
check "the preload's interposed names are read ($(echo "$names" | wc -l))" [ "$(echo "$names" | wc -l)" -ge 30 ]
objs=$(find build/lib -name '*.o' ! -path 'build/lib/os/*' ! -path 'build/lib/preload/*' | sort)
check "the library's objects are built ($(echo "$objs" | wc -w))" [ "$(echo "$objs" | wc -w)" -ge 20 ]
leaks=""
for o in $objs; do
	u=$(nm -u "$o" | awk '{print $2}' | sed 's/@.*//' | sort -u | comm -12 - <(echo "$names"))
	[ -n "$u" ] && leaks="$leaks ${o#build/lib/}:$(echo $u | tr ' ' ',')"
done
check "no object outside os/ and preload/ calls an interposed name${leaks:+:$leaks}" [ -z "$leaks" ]
done_testing
