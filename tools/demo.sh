#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The Sluice demo on an embedded default that needs no InfiniBand hardware:
# install what is missing, build sluice.ko against Debian's kernel, boot
# that kernel under QEMU, load the module, show what it reports, unload.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/vm/deps.sh
exec bash tests/vm/run.sh --demo
