# SPDX-License-Identifier: BSD-2-Clause
#
# gVisor's socket syscall tests (github.com/google/gvisor, test/syscalls/linux)
# built without Bazel, against Debian 12's libgtest-dev, libgmock-dev and
# libabsl-dev, from a gVisor checkout named by GVISOR (never copied here).
# Included by the top Makefile:
#
#   make conformance-build GVISOR=/path/to/gvisor   the binaries, in build/conformance/
#   make conformance GVISOR=/path/to/gvisor         build, then tests/conformance/gvisor.sh
#
# Each binary is its Bazel target's name in test/syscalls/linux/BUILD and is
# linked from that target's srcs plus the srcs of the test/syscalls/linux
# libraries it depends on (listed below per binary), test/util's sources
# (as an archive, so only what a binary uses is linked, as Bazel does),
# test/util/test_main.cc, test/util/errno_safe_allocator.cc (the targets'
# malloc) and tests/conformance/glue.cc (see there).  README.md says more.

GVISOR ?=
GV_OUT := $(B)/conformance
GV_LINUX := $(GVISOR)/test/syscalls/linux
GV_UTILDIR := $(GVISOR)/test/util
GV_CXX ?= g++
GV_CXXFLAGS ?= -O1 -g0
GV_ABSL := absl_flags_parse absl_strings absl_str_format absl_time absl_synchronization \
	absl_status absl_statusor
GV_ALL_CXXFLAGS = -std=c++17 -pthread -w -Itests/conformance/compat -I$(GVISOR) $(GV_CXXFLAGS) \
	$(shell pkg-config --cflags gmock gtest $(GV_ABSL))
GV_LIBS = $(shell pkg-config --libs gmock gtest $(GV_ABSL)) -pthread

# test/util: every source a socket binary needs; Fuchsia's, the non-Linux
# save stub, the Bazel runfiles lookup and the benchmark-driving main are
# left out (glue.cc stands in for the last two).
GV_UTIL_SRCS := logging.cc posix_error.cc save_util.cc save_util_linux.cc \
	socket_util.cc socket_util_impl.cc test_util.cc fs_util.cc temp_path.cc \
	linux_capability_util.cc multiprocess_util.cc timer_util.cc signal_util.cc \
	rlimit_util.cc epoll_util.cc

# Each binary's sources in test/syscalls/linux: its own srcs, then those of
# the cc_library targets of that folder it depends on.
GV_BINS := tcp_socket_test udp_socket_test socket_inet_loopback_test \
	socket_inet_loopback_nogotsan_test socket_ip_tcp_generic_loopback_test \
	socket_ip_tcp_loopback_test socket_ip_tcp_loopback_non_blocking_test \
	socket_stream_blocking_tcp_test socket_ip_udp_loopback_test \
	socket_ip_udp_loopback_non_blocking_test socket_non_stream_blocking_udp_test \
	socket_blocking_ip_test socket_ip_tcp_udp_generic_loopback_test \
	socket_ipv4_udp_unbound_loopback_test socket_ipv4_udp_unbound_loopback_nogotsan_test \
	socket_ipv4_datagram_based_socket_unbound_loopback_test socket_ip_unbound_test \
	socket_ipv6_unbound_test socket_ipv6_udp_unbound_loopback_test \
	sendfile_socket_test udp_bind_test socket_test poll_test select_test epoll_test

GV_SRCS_tcp_socket_test := tcp_socket.cc
GV_SRCS_udp_socket_test := udp_socket.cc ip_socket_test_util.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_inet_loopback_test := socket_inet_loopback.cc ip_socket_test_util.cc
GV_SRCS_socket_inet_loopback_nogotsan_test := socket_inet_loopback_nogotsan.cc ip_socket_test_util.cc
GV_SRCS_socket_ip_tcp_generic_loopback_test := socket_ip_tcp_generic_loopback.cc \
	ip_socket_test_util.cc socket_ip_tcp_generic.cc
GV_SRCS_socket_ip_tcp_loopback_test := socket_ip_tcp_loopback.cc ip_socket_test_util.cc \
	socket_generic_test_cases.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_ip_tcp_loopback_non_blocking_test := socket_ip_tcp_loopback_nonblock.cc \
	ip_socket_test_util.cc socket_non_blocking.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_stream_blocking_tcp_test := socket_ip_tcp_loopback_blocking.cc \
	ip_socket_test_util.cc socket_stream_blocking.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_ip_udp_loopback_test := socket_ip_udp_loopback.cc ip_socket_test_util.cc \
	socket_generic_test_cases.cc unix_domain_socket_test_util.cc socket_ip_udp_generic.cc \
	socket_non_stream.cc
GV_SRCS_socket_ip_udp_loopback_non_blocking_test := socket_ip_udp_loopback_nonblock.cc \
	ip_socket_test_util.cc socket_non_blocking.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_non_stream_blocking_udp_test := socket_ip_udp_loopback_blocking.cc \
	ip_socket_test_util.cc socket_non_stream_blocking.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_blocking_ip_test := socket_ip_loopback_blocking.cc ip_socket_test_util.cc \
	socket_blocking.cc unix_domain_socket_test_util.cc
GV_SRCS_socket_ip_tcp_udp_generic_loopback_test := socket_ip_tcp_udp_generic.cc ip_socket_test_util.cc
GV_SRCS_socket_ipv4_udp_unbound_loopback_test := socket_ipv4_udp_unbound_loopback.cc \
	ip_socket_test_util.cc socket_ipv4_udp_unbound.cc
GV_SRCS_socket_ipv4_udp_unbound_loopback_nogotsan_test := \
	socket_ipv4_udp_unbound_loopback_nogotsan.cc ip_socket_test_util.cc
GV_SRCS_socket_ipv4_datagram_based_socket_unbound_loopback_test := \
	socket_ipv4_datagram_based_socket_unbound_loopback.cc ip_socket_test_util.cc \
	socket_ipv4_datagram_based_socket_unbound.cc
GV_SRCS_socket_ip_unbound_test := socket_ip_unbound.cc ip_socket_test_util.cc
GV_SRCS_socket_ipv6_unbound_test := socket_ipv6_unbound.cc ip_socket_test_util.cc
GV_SRCS_socket_ipv6_udp_unbound_loopback_test := socket_ipv6_udp_unbound_loopback.cc \
	ip_socket_test_util.cc socket_ipv6_udp_unbound.cc
GV_SRCS_sendfile_socket_test := sendfile_socket.cc ip_socket_test_util.cc unix_domain_socket_test_util.cc
GV_SRCS_udp_bind_test := udp_bind.cc
GV_SRCS_socket_test := socket.cc
GV_SRCS_poll_test := poll.cc base_poll_test.cc
GV_SRCS_select_test := select.cc base_poll_test.cc
GV_SRCS_epoll_test := epoll.cc

GV_UTIL_OBJS := $(GV_UTIL_SRCS:%.cc=$(GV_OUT)/obj/util/%.o)
GV_MAIN_OBJS := $(GV_OUT)/obj/util/test_main.o $(GV_OUT)/obj/util/errno_safe_allocator.o \
	$(GV_OUT)/obj/glue.o

.PHONY: conformance conformance-build conformance-check-gvisor conformance-vm

conformance-check-gvisor:
	@test -n "$(GVISOR)" && test -f "$(GV_LINUX)/BUILD" || \
		{ echo "set GVISOR to a gVisor checkout (tests/conformance/README.md)" >&2; exit 1; }

conformance-build: conformance-check-gvisor
	@$(MAKE) --no-print-directory $(GV_BINS:%=$(GV_OUT)/%)

conformance: conformance-build lib tools
	bash tests/conformance/gvisor.sh --bindir $(GV_OUT) $(CONFORMANCE_ARGS)

# The same cases on the module path, in QEMU (tests/vm/gvisor.sh): the
# binaries of GVISOR_BIN (else $(GV_OUT)), the cases of GVISOR_VM_SUBSET
# (default subset.txt, about 7 minutes under TCG) or every case of the
# binaries GVISOR_VM_BINARIES names; VM_KERNEL, default the first listed.
VM_KERNEL ?= $(shell bash tests/vm/run.sh --list | head -n 1)
conformance-vm:
	SLUICE_VM_ONLY=gvisor SLUICE_VM_MEM=$${SLUICE_VM_MEM:-2048} \
		SLUICE_VM_TIMEOUT=$${SLUICE_VM_TIMEOUT:-3600} \
		GVISOR_BIN=$${GVISOR_BIN:-$(GV_OUT)} bash tests/vm/run.sh --kernel $(VM_KERNEL)

$(GV_OUT)/obj/util/%.o: $(GV_UTILDIR)/%.cc
	@mkdir -p $(dir $@)
	$(GV_CXX) $(GV_ALL_CXXFLAGS) -c -o $@ $<

$(GV_OUT)/obj/linux/%.o: $(GV_LINUX)/%.cc
	@mkdir -p $(dir $@)
	$(GV_CXX) $(GV_ALL_CXXFLAGS) -c -o $@ $<

$(GV_OUT)/obj/glue.o: tests/conformance/glue.cc
	@mkdir -p $(dir $@)
	$(GV_CXX) $(GV_ALL_CXXFLAGS) -c -o $@ $<

$(GV_OUT)/libgvutil.a: $(GV_UTIL_OBJS)
	$(AR) rcs $@ $^

define GV_LINK
$(GV_OUT)/$(1): $(GV_SRCS_$(1):%.cc=$(GV_OUT)/obj/linux/%.o) $(GV_MAIN_OBJS) $(GV_OUT)/libgvutil.a
	$$(GV_CXX) -o $$@ $$(filter %.o,$$^) $(GV_OUT)/libgvutil.a $$(GV_LIBS)
endef
$(foreach b,$(GV_BINS),$(eval $(call GV_LINK,$(b))))
