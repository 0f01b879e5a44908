#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The short soak: tests/soak.sh for 20 s (the long one: make soak).
exec bash "$(dirname "$0")/../soak.sh" "${SLUICE_SOAK_SECONDS:-20}" 4
