#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The fuzz targets (tests/fuzz/): build them (make fuzz, clang-14 with
# libFuzzer, ASan and UBSan), replay every input that once crashed, and
# fuzz each target briefly from its seeds.  FUZZ_SECONDS sets the time per
# target (default 15; make fuzz-long runs 10 minutes each).
set -u
cd "$(dirname "$0")/../.."
if ! command -v clang-14 >/dev/null; then
	echo "ok 1 - fuzz targets # SKIP clang-14 is not installed (tests/vm/deps.sh)"
	echo "1..1"
	exit 0
fi
if ! make -s -j2 fuzz >build/fuzz-build.log 2>&1; then
	echo "not ok 1 - make fuzz"
	tail -n 20 build/fuzz-build.log | sed 's/^/# /'
	echo "1..1"
	exit 1
fi
exec bash tests/fuzz/run.sh --seconds "${FUZZ_SECONDS:-15}"
