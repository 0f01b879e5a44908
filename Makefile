# SPDX-License-Identifier: BSD-2-Clause
#
# Sluice: the human wrapper.  User space builds into build/; the module is
# built by Kbuild (see Kbuild) against KDIR.
#
#   make              library (static and shared), tools, tests
#   make module       sluice.ko against KDIR (default: newest installed headers)
#   make check        every test: host unit tests, then the VM suite
#   make demo         the embedded demo (no InfiniBand hardware needed)
#   make bench        benchmarks, Sluice beside the kernel (not tests)
#   make sanitize     library and unit tests under ASan and UBSan (build/asan)
#   make checkpatch   checkpatch.pl from linux-source-6.1 over kernel/ and uapi

VERSION := 0.1.0

# Not `uname -r`: the build host's own kernel may have no headers at all.
KDIR ?= $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)
KSELFTEST ?= /usr/src/linux-source-6.1/tools/testing/selftests
CHECKPATCH ?= /usr/src/linux-source-6.1/scripts/checkpatch.pl

CC ?= cc
AR ?= ar
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wformat=2 -Wvla
CPPFLAGS += -Iinclude -D_GNU_SOURCE
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -fPIC

B := build
# The verbs link (lib/link_verbs.c) uses rdma-core.
LIBS := -libverbs

LIB_SRCS := lib/device.c lib/csum.c lib/region.c lib/buf.c lib/lock.c lib/sock.c lib/timer.c lib/tcp.c lib/tcp_input.c lib/tcp_output.c lib/tcp_timer.c lib/tcp_cc.c \
	lib/ip.c lib/icmp.c lib/udp.c lib/api.c lib/link_loop.c lib/eth.c lib/link_tap.c \
	lib/ipoib.c lib/link_verbs.c
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)

TOOL := $(B)/tools/sluice
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/test_*.c))
INTEROP := $(B)/tests/interop/peer $(B)/tests/interop/mkstack $(B)/tests/interop/verbs_peer $(B)/tests/bench/bench
KSELFTESTS := $(patsubst tests/kselftest/%.c,$(B)/tests/kselftest/%,$(wildcard tests/kselftest/*.c))

.PHONY: all lib tools tests bench sanitize unit-tests module module-clean check demo checkpatch clean

all: lib tools tests

lib: $(B)/libsluice.a $(B)/libsluice.so
tools: $(TOOL)
tests: $(UNIT_TESTS) $(KSELFTESTS) $(INTEROP)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(B)/libsluice.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(B)/libsluice.so: $(LIB_OBJS) lib/libsluice.map
	$(CC) -shared -Wl,-soname,libsluice.so.0 -Wl,--version-script=lib/libsluice.map \
		-Wl,-z,defs -o $@ $(LIB_OBJS) $(LIBS)

$(TOOL): $(B)/tools/sluice.o $(B)/libsluice.a
	$(CC) -o $@ $^ $(LIBS)

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(B)/libsluice.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/interop/%: $(B)/tests/interop/%.o $(B)/libsluice.a
	$(CC) -o $@ $^ $(LIBS)

$(B)/tests/bench/%: $(B)/tests/bench/%.o $(B)/libsluice.a
	$(CC) -o $@ $^ $(LIBS)

bench: all
	$(B)/tests/bench/bench all

# The library and the host unit tests again, under AddressSanitizer and
# UndefinedBehaviorSanitizer, in build/asan/ (tests/run.sh runs them).
sanitize:
	$(MAKE) B=build/asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		LDFLAGS="-fsanitize=address,undefined" unit-tests

unit-tests: $(UNIT_TESTS)

# The kselftest harness is GPL and lives in the kernel source package; it is
# used from there, never copied into this tree.
$(B)/tests/kselftest/%: tests/kselftest/%.c tests/kselftest/sluice_util.h include/uapi/sluice.h
	@test -f $(KSELFTEST)/kselftest_harness.h || \
		{ echo "missing $(KSELFTEST): run tests/vm/deps.sh" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(KSELFTEST) -std=gnu11 -Wall -Wextra -Werror \
		-Wno-unused-parameter -Wno-sign-compare $(CFLAGS) -o $@ $<

module:
	@test -n "$(KDIR)" || { echo "no kernel headers under /lib/modules/*/build: run tests/vm/deps.sh" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

module-clean:
	@test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(CURDIR) clean

check:
	bash tests/run.sh

demo:
	bash tools/demo.sh

checkpatch:
	$(CHECKPATCH) --no-tree --strict --terse --show-types -f \
		kernel/*.c kernel/*.h include/uapi/sluice.h

clean: module-clean
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' -type f 2>/dev/null)
