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
#   make bench-lossy  bulk TCP goodput over netem loss (0.1/1/5%, 10 ms), in the VM
#   make bench-many   costs with many connections (issue 23): the epoll
#                     ping-pong beside 0 to 100,000 idle connections (in its
#                     set up to the fd limit; in the stack, with memory
#                     before, open and after close), nginx with 10,000
#                     keep-alive connections
#   make sanitize     library and unit tests under ASan and UBSan (build/asan)
#   make checkpatch   checkpatch.pl from linux-source-6.1 over kernel/ and uapi
#   make fuzz         libFuzzer targets (clang-14, ASan, UBSan) in build/fuzz
#   make fuzz-long    each fuzz target for FUZZ_LONG_SECONDS (default 600)
#   make soak         forking server soak, SOAK_SECONDS (default 120)
#   make soak-kill    pre-forking server under sluice run: 1000 worker kills
#   make conformance  gVisor's socket syscall tests on the kernel and under sluice run (GVISOR=)
#   make install      PREFIX (default /usr/local), DESTDIR; make uninstall
#   make deb          Debian packages sluice, libsluice-dev, sluice-dkms in build/deb/

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
CPPFLAGS += -Iinclude -Ilib -D_GNU_SOURCE
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -fPIC

B := build
# The verbs link (lib/link/verbs*.c) uses rdma-core.
LIBS := -libverbs

# The library by layer, lowest first (lib/README.md): a layer's files may
# include only its own headers and the public headers of layers below.
LIB_LAYERS := os core proto proto/tcp run link api
LIB_SRCS := $(foreach l,$(LIB_LAYERS),$(sort $(wildcard lib/$(l)/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/%.o)
PRELOAD_SRCS := $(wildcard lib/preload/*.c)
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(B)/%.o)
PRELOAD := $(B)/libsluice-preload.so

TOOL := $(B)/tools/sluice
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/test_*.c))
INTEROP := $(B)/tests/interop/peer $(B)/tests/interop/mkstack $(B)/tests/bench/bench \
	$(B)/tests/interop/kpeer $(B)/tests/interop/kring_peer $(B)/tests/interop/scribble \
	$(B)/tests/interop/soak $(B)/tests/interop/verbs_peer $(B)/tests/interop/holdlock
PRELOAD_TESTS := $(B)/tests/preload/conform $(B)/tests/preload/dlopen_prog $(B)/tests/preload/fork_srv $(B)/tests/preload/killsoak \
	$(B)/tests/bench/epoll_idle $(B)/tests/bench/conn_churn $(B)/tests/bench/conn_many \
	$(B)/tests/bench/http_many $(B)/tests/bench/lossy_relay \
	$(B)/tests/preload/sockfd_prog $(B)/tests/preload/sandboxed $(B)/tests/preload/oslisten \
	$(B)/tests/preload/kconnect $(B)/tests/preload/fork_start $(B)/tests/preload/v6dual \
	$(B)/tests/preload/pool_many $(B)/tests/preload/handoff_prog $(B)/tests/preload/errq \
	$(B)/tests/preload/rawcalls $(B)/tests/preload/v6send $(B)/tests/preload/v6ll \
	$(B)/tests/preload/exec_keep \
	$(B)/tests/preload/autobind $(B)/tests/preload/sndbuf_wake $(B)/tests/preload/fdnum \
	$(B)/tests/preload/oob \
	$(B)/tests/preload/sigio \
	$(B)/tests/preload/badptr
KSELFTESTS := $(patsubst tests/kselftest/%.c,$(B)/tests/kselftest/%,$(wildcard tests/kselftest/*.c))
PRELOAD_TESTS += $(B)/tests/preload/sockcache $(B)/tests/preload/twin_echo \
	$(B)/tests/preload/resv_hold
PRELOAD_TESTS += $(B)/tests/preload/share_rx
PRELOAD_TESTS += $(B)/tests/preload/epoll_excl
PRELOAD_TESTS += $(B)/tests/preload/close_blocked $(B)/tests/preload/udp_autobind
PRELOAD_TESTS += $(B)/tests/preload/handover
PRELOAD_TESTS += $(B)/tests/preload/v6echo
PRELOAD_TESTS += $(B)/tests/preload/fork_cost
PRELOAD_TESTS += $(B)/tests/preload/tcpopts
PRELOAD_TESTS += $(B)/tests/preload/timers_away

.PHONY: install uninstall deb all lib tools tests bench bench-lossy bench-many bench-programs sanitize unit-tests module module-clean check demo checkpatch clean \
	fuzz fuzz-long soak soak-kill

all: lib tools tests

lib: $(B)/libsluice.a $(B)/libsluice.so $(PRELOAD)
tools: $(TOOL)
tests: $(UNIT_TESTS) $(KSELFTESTS) $(INTEROP) $(PRELOAD_TESTS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# Thread-local variables at a fixed offset from the thread pointer, not
# through __tls_get_addr() at each use: the library's objects end up in
# executables and in the preload (loaded at start, or by dlopen(), which
# takes its few hundred bytes from the static TLS surplus, as sl_kp_w's
# kilobyte always did).  Callgrind of a poll and non-blocking recv round
# trip under `sluice run`: ~260 of ~15,000 instructions were those calls.
$(LIB_OBJS) $(PRELOAD_OBJS): ALL_CFLAGS += -ftls-model=initial-exec

$(B)/libsluice.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(B)/libsluice.so: $(LIB_OBJS) lib/libsluice.map
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libsluice.so.0 -Wl,--version-script=lib/libsluice.map \
		-Wl,-z,defs -o $@ $(LIB_OBJS) $(LIBS)

# The BSD sockets interposition library (sluice run): the stack's objects,
# the wrappers, urcu-bp for the fd table; exports only what preload.map lists.
# -Bsymbolic-functions: a wrapper's call to another (sendmmsg to sendmsg)
# stays in the library when it is dlopen()ed rather than preloaded.
# -z now: its calls into libc are bound once as a program starts; lazily,
# each child of a forking server bound again the ones its parent had not
# made yet (the dynamic linker's lookups, at every connection).
# -e: the library is also a program the dynamic linker runs (ld.so LIB):
# the stack's death watcher (lib/preload/watch.c).
# rdma-core is not linked: the verbs links' calls to it go (--wrap) to
# lib/preload/verbs.c, which loads it on first use; -z defs fails the link
# if they name a function this list lacks.
PRELOAD_VERBS := ibv_get_device_list ibv_free_device_list ibv_get_device_name \
	ibv_open_device ibv_close_device ibv_query_device ibv_query_port ibv_query_gid \
	_ibv_query_gid_ex ibv_query_pkey ibv_alloc_pd ibv_dealloc_pd ibv_reg_mr_iova2 \
	ibv_dereg_mr ibv_create_comp_channel ibv_destroy_comp_channel ibv_create_cq \
	ibv_destroy_cq ibv_create_qp ibv_modify_qp ibv_destroy_qp ibv_attach_mcast \
	ibv_detach_mcast ibv_create_ah ibv_destroy_ah ibv_get_cq_event ibv_ack_cq_events \
	ibv_get_async_event ibv_ack_async_event
$(PRELOAD): $(LIB_OBJS) $(PRELOAD_OBJS) lib/preload/preload.map
	$(CC) -shared $(LDFLAGS) -Wl,--version-script=lib/preload/preload.map -Wl,-z,defs \
		-Wl,-Bsymbolic-functions -Wl,-z,now -Wl,-e,pl_watch_entry -Wl,-fini=pl_fini \
		$(PRELOAD_VERBS:%=-Wl,--wrap=%) -o $@ \
		$(LIB_OBJS) $(PRELOAD_OBJS) -lurcu-bp -ldl -lpthread

$(TOOL): $(B)/tools/sluice.o $(B)/tools/run.o $(B)/tools/json.o $(B)/tools/metrics.o $(B)/tools/tcpdump.o \
		$(B)/tools/doctor.o $(B)/tools/devlink.o $(B)/tools/handoff.o $(B)/libsluice.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) -lpcap

$(B)/tests/unit/%: $(B)/tests/unit/%.o $(B)/libsluice.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# The library again with its kill points live (lib/core/killpt.c), for
# test_killpt only: every other build has none.
KP_OBJS := $(LIB_SRCS:%.c=$(B)/kp/%.o)
$(B)/kp/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSL_KILL_POINTS $(ALL_CFLAGS) -MMD -MP -c -o $@ $<
$(B)/kp/libsluice.a: $(KP_OBJS)
	$(AR) rcs $@ $^
$(B)/tests/unit/test_killpt.o: CPPFLAGS += -DSL_KILL_POINTS
$(B)/tests/unit/test_killpt: $(B)/tests/unit/test_killpt.o $(B)/kp/libsluice.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/interop/%: $(B)/tests/interop/%.o $(B)/libsluice.a
	$(CC) -o $@ $^ $(LIBS)

$(B)/tests/bench/%: $(B)/tests/bench/%.o $(B)/libsluice.a
	$(CC) -o $@ $^ $(LIBS)

# A plain program (sluice run meets it through the preload), as tests/preload/.
$(B)/tests/bench/epoll_idle: $(B)/tests/bench/epoll_idle.o
	$(CC) -o $@ $^
$(B)/tests/bench/conn_churn: $(B)/tests/bench/conn_churn.o
	$(CC) -o $@ $^
$(B)/tests/bench/conn_many: $(B)/tests/bench/conn_many.o
	$(CC) -o $@ $^
$(B)/tests/bench/http_many: $(B)/tests/bench/http_many.o
	$(CC) -o $@ $^
$(B)/tests/bench/lossy_relay: $(B)/tests/bench/lossy_relay.o
	$(CC) -o $@ $^

# The module's pure IPoIB functions (kernel/ipoib_addr.c), compiled
# unchanged as user space against tests/fuzz/kshim, under test_kipoib.
$(B)/tests/unit/test_kipoib.o: CPPFLAGS := -Itests/fuzz/kshim $(CPPFLAGS)
$(B)/kshim/kernel/%.o: kernel/%.c
	@mkdir -p $(dir $@)
	$(CC) -Itests/fuzz/kshim $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<
$(B)/tests/unit/test_kipoib: $(B)/tests/unit/test_kipoib.o $(B)/kshim/kernel/ipoib_addr.o
	$(CC) $(LDFLAGS) -o $@ $^

# Plain programs: they meet Sluice only through sluice run (LD_PRELOAD).
# Fortified, so the __recv_chk family is what they call.
$(B)/tests/preload/%.o: CPPFLAGS += -D_FORTIFY_SOURCE=2
$(B)/tests/preload/%: $(B)/tests/preload/%.o
	$(CC) -o $@ $^ -lpthread
# Its pthread_create() is to be the one the preload library calls.
$(B)/tests/preload/fork_start: $(B)/tests/preload/fork_start.o
	$(CC) -rdynamic -o $@ $^ -lpthread

bench: all
	$(B)/tests/bench/bench all
	bash tests/bench/epoll_idle.sh
	bash tests/bench/conn_many.sh

# Bulk TCP goodput over a lossy 10 ms path (netem), Sluice beside the
# kernel, in the QEMU VM (tests/vm/bench_lossy.sh; a few minutes).
bench-lossy: all
	bash tests/vm/run.sh --bench lossy

bench-many: all
	bash tests/bench/epoll_idle.sh 20000 0 1000 10000 100000
	bash tests/bench/conn_many.sh 1000,10000,100000 12 3
	bash tests/bench/programs.sh -t 10 -r 2 -o nginx-10k

# Real programs (sockperf, iperf3, redis-benchmark, nginx + wrk) on the
# kernel and under `sluice run`, side by side.
bench-programs: all
	bash tests/bench/programs.sh

# The library and the host unit tests again, under AddressSanitizer and
# UndefinedBehaviorSanitizer, in build/asan/ (tests/run.sh runs them), and
# the preload library (tests/host/test_preload.sh runs conform on it).
sanitize:
	$(MAKE) B=build/asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		LDFLAGS="-fsanitize=address,undefined" unit-tests build/asan/libsluice-preload.so

unit-tests: $(UNIT_TESTS)

# The kselftest harness is GPL and lives in the kernel source package; it is
# used from there, never copied into this tree.
$(B)/tests/kselftest/%: tests/kselftest/%.c tests/kselftest/sluice_util.h tests/kselftest/sluice_veth.h include/uapi/sluice.h
	@test -f $(KSELFTEST)/kselftest_harness.h || \
		{ echo "missing $(KSELFTEST): run tests/vm/deps.sh" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(KSELFTEST) -std=gnu11 -Wall -Wextra -Werror \
		-Wno-unused-parameter -Wno-sign-compare $(CFLAGS) -o $@ $<

# Fuzz targets (tests/README.md, "Fuzzing"): the library again with clang-14,
# the sanitizers and coverage for libFuzzer, in build/fuzz/.
FUZZ_CC ?= clang-14
FB := $(B)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=gnu11 $(WARN) -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN)
FUZZ_TARGETS := $(FB)/fuzz_packet $(FB)/fuzz_tcp $(FB)/fuzz_ioctl
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FB)/%.o)
# The module's files, built as user space against tests/fuzz/kshim.
FUZZ_KERN_OBJS := $(FB)/kernel/layout.o $(FB)/kernel/uarg.o
FUZZ_LONG_SECONDS ?= 600

fuzz: $(FUZZ_TARGETS)

$(FB)/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FB)/kernel/%.o: kernel/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -Itests/fuzz/kshim $(CPPFLAGS) -DKBUILD_MODNAME='"sluice"' $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FB)/fuzz_%.o: tests/fuzz/fuzz_%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FB)/fuzz_ioctl.o: CPPFLAGS := -Itests/fuzz/kshim $(CPPFLAGS)

$(FB)/fuzz_packet $(FB)/fuzz_tcp: $(FB)/%: $(FB)/%.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS)

$(FB)/fuzz_ioctl: $(FB)/fuzz_ioctl.o $(FUZZ_KERN_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^

fuzz-long: fuzz
	bash tests/fuzz/run.sh --seconds $(FUZZ_LONG_SECONDS)

module:
	@test -n "$(KDIR)" || { echo "no kernel headers under /lib/modules/*/build: run tests/vm/deps.sh" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

module-clean:
	@test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(CURDIR) clean

check:
	bash tests/run.sh

demo:
	bash tools/demo.sh

SOAK_SECONDS ?= 120
soak: all
	bash tests/soak.sh $(SOAK_SECONDS)

# Issue 17: the suite's test_killsoak with 1000 worker and 250 client kills.
soak-kill: all
	bash tests/host/test_killsoak.sh 1000 250 100

checkpatch:
	$(CHECKPATCH) --no-tree --strict --terse --show-types -f \
		kernel/*.c kernel/*.h include/uapi/sluice.h

# Installing (PREFIX, DESTDIR as usual): the tool, the libraries (the
# preload one where the tool looks for it: PKGLIBDIR, LIBDIR/sluice
# unless told), the headers,
# sluice.pc, the man pages, the udev rule and the module's DKMS source tree.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
PKGLIBDIR ?= $(LIBDIR)/sluice
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
UDEVDIR ?= /lib/udev
DKMSDIR ?= /usr/src/sluice-$(VERSION)
SONAME := libsluice.so.0
# In sluice.pc, relative to ${prefix} where they are under PREFIX, so that
# pkg-config --define-variable=prefix=... moves them with it.
PC_LIBDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCLUDEDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
REALNAME := libsluice.so.$(VERSION)

install: lib tools
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/sluice/uapi $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(UDEVDIR)/rules.d \
		$(DESTDIR)$(DKMSDIR)/kernel $(DESTDIR)$(DKMSDIR)/include/uapi
	install -m 755 $(TOOL) $(DESTDIR)$(BINDIR)/sluice
	install -m 644 $(B)/libsluice.a $(DESTDIR)$(LIBDIR)/libsluice.a
	install -m 755 $(B)/libsluice.so $(DESTDIR)$(LIBDIR)/$(REALNAME)
	ln -sf $(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsluice.so
	install -m 755 $(PRELOAD) $(DESTDIR)$(PKGLIBDIR)/libsluice-preload.so
	install -m 644 include/sluice/sluice.h $(DESTDIR)$(INCLUDEDIR)/sluice/sluice.h
	install -m 644 include/uapi/sluice.h $(DESTDIR)$(INCLUDEDIR)/sluice/uapi/sluice.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' -e '/^# SPDX/d' tools/pkg/sluice.pc.in \
		>$(DESTDIR)$(LIBDIR)/pkgconfig/sluice.pc
	install -m 644 tools/man/sluice.1 $(DESTDIR)$(MANDIR)/man1/sluice.1
	install -m 644 tools/man/sluice.3 $(DESTDIR)$(MANDIR)/man3/sluice.3
	install -m 644 tools/man/sluice.7 $(DESTDIR)$(MANDIR)/man7/sluice.7
	install -m 644 tools/pkg/60-sluice.rules $(DESTDIR)$(UDEVDIR)/rules.d/60-sluice.rules
	install -m 644 Kbuild dkms.conf $(DESTDIR)$(DKMSDIR)/
	install -m 644 kernel/*.c kernel/*.h $(DESTDIR)$(DKMSDIR)/kernel/
	install -m 644 include/uapi/sluice.h $(DESTDIR)$(DKMSDIR)/include/uapi/sluice.h

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sluice $(DESTDIR)$(LIBDIR)/libsluice.a \
		$(DESTDIR)$(LIBDIR)/$(REALNAME) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libsluice.so $(DESTDIR)$(PKGLIBDIR)/libsluice-preload.so \
		$(DESTDIR)$(INCLUDEDIR)/sluice/sluice.h $(DESTDIR)$(INCLUDEDIR)/sluice/uapi/sluice.h \
		$(DESTDIR)$(LIBDIR)/pkgconfig/sluice.pc $(DESTDIR)$(MANDIR)/man1/sluice.1 \
		$(DESTDIR)$(MANDIR)/man3/sluice.3 $(DESTDIR)$(MANDIR)/man7/sluice.7 \
		$(DESTDIR)$(UDEVDIR)/rules.d/60-sluice.rules
	rm -rf $(DESTDIR)$(DKMSDIR)
	-rmdir $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(INCLUDEDIR)/sluice/uapi \
		$(DESTDIR)$(INCLUDEDIR)/sluice 2>/dev/null

# Debian packages from a build of their own (build/deb/, Debian's
# hardening flags): tools/pkg/deb/README.md.  As root or not (dpkg-deb
# --root-owner-group: no fakeroot needed).
deb:
	bash tools/pkg/deb/mkdeb.sh

clean: module-clean
	rm -rf $(B)

# Not build/deb's (make deb's own build, B=build/deb): tests/run.sh may
# run make deb beside another make of the tree.
-include $(shell find $(B) -path $(B)/deb -prune -o -name '*.d' -type f -print 2>/dev/null)

# gVisor's socket syscall tests, Sluice beside the kernel (make conformance
# GVISOR=/path/to/gvisor): tests/conformance/README.md.
include tests/conformance/gvisor.mk
include tests/conformance/packetdrill.mk
