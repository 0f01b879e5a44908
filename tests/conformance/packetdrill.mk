# SPDX-License-Identifier: BSD-2-Clause
#
# Google's packetdrill (github.com/google/packetdrill) against a Sluice
# stack, from a packetdrill checkout named by PACKETDRILL (never copied
# here). Included by the top Makefile:
#
#   make packetdrill-build PACKETDRILL=/path/to/packetdrill   the packetdrill binary
#        (built in its checkout) and build/conformance/pd_plugin.so
#   make packetdrill PACKETDRILL=/path/to/packetdrill         build, then
#        tests/conformance/packetdrill.sh: each listed gtests/net/tcp script
#        on the kernel and on Sluice (PD_ARGS: more runner options)
#
# The plugin is the stack's objects and tests/conformance/pd_plugin.c, built
# against packetdrill.h from the checkout; it exports only
# packetdrill_interface_init. README.md says more.

PACKETDRILL ?=
PD_DIR = $(PACKETDRILL)/gtests/net/packetdrill
PD_PLUGIN := $(B)/conformance/pd_plugin.so
PD_ARGS ?=

.PHONY: packetdrill packetdrill-build packetdrill-check

packetdrill-check:
	@test -n "$(PACKETDRILL)" && test -f "$(PD_DIR)/packetdrill.h" || \
		{ echo "set PACKETDRILL to a packetdrill checkout (tests/conformance/README.md)" >&2; exit 1; }

packetdrill-build: packetdrill-check
	cd $(PD_DIR) && { test -f Makefile || ./configure; } && $(MAKE) packetdrill
	$(MAKE) PACKETDRILL=$(PACKETDRILL) $(PD_PLUGIN)

$(B)/conformance/pd_plugin.o: tests/conformance/pd_plugin.c
	@test -f "$(PD_DIR)/packetdrill.h" || { echo "PACKETDRILL is not a packetdrill checkout" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(PD_DIR) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(PD_PLUGIN): $(B)/conformance/pd_plugin.o $(LIB_OBJS) tests/conformance/pd_plugin.map
	$(CC) -shared -Wl,--version-script=tests/conformance/pd_plugin.map -Wl,-z,defs \
		-o $@ $(B)/conformance/pd_plugin.o $(LIB_OBJS) $(LIBS) -lpthread

packetdrill: packetdrill-build
	bash tests/conformance/packetdrill.sh --packetdrill $(PACKETDRILL) --plugin $(PD_PLUGIN) $(PD_ARGS)
