// SPDX-License-Identifier: BSD-2-Clause
//
// The glue that lets gVisor's syscall tests (test/syscalls/linux) build
// without Bazel against Debian's gtest, gmock and absl.  It replaces two
// files of gVisor's test/util that need Bazel-only pieces:
//
//   test_util_impl.cc      TestInit() and RunAllTests() also drive Google
//                          benchmark, which no socket test uses; here they
//                          are the gtest half only.
//   test_util_runfiles.cc  RunfilePath() looks paths up in Bazel's runfiles
//                          tree; there is none, so a path is itself.
//
// Everything else (test_main.cc, save_util.cc, save_util_linux.cc, ...) is
// gVisor's own, compiled unchanged: save/restore only acts when
// GVISOR_SAVE_TEST is set, and the runner never sets it.

#include <signal.h>

#include <string>

#include "gtest/gtest.h"
#include "absl/flags/parse.h"
#include "test/util/logging.h"
#include "test/util/test_util.h"

namespace gvisor {
namespace testing {

void SetupGvisorDeathTest() {}

void TestInit(int* argc, char*** argv) {
	::testing::InitGoogleTest(argc, *argv);
	::absl::ParseCommandLine(*argc, *argv);

	// As gVisor's own: tests are not expected to handle SIGPIPE.
	struct sigaction sa = {};
	sa.sa_handler = SIG_IGN;
	TEST_CHECK(sigaction(SIGPIPE, &sa, nullptr) == 0);
}

int RunAllTests() { return RUN_ALL_TESTS(); }

std::string RunfilePath(std::string path) { return path; }

}  // namespace testing
}  // namespace gvisor
