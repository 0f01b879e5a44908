// SPDX-License-Identifier: BSD-2-Clause
//
// Compatibility shim for gVisor's tests built against Debian 12's absl
// (20220623): newer absl's MutexLock also takes a Mutex& (epoll.cc uses
// `absl::MutexLock lock(m)`), the 2022 one only a Mutex*.  This header is
// found first (-Itests/conformance/compat), includes the real one and
// names MutexLock a subclass that takes either.  The name is a macro, so
// gtest's and gmock's headers (which have a MutexLock of their own) are
// read before it is defined.
#ifndef SLUICE_CONFORMANCE_ABSL_MUTEX_H
#define SLUICE_CONFORMANCE_ABSL_MUTEX_H

#include_next <absl/synchronization/mutex.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace absl {
class ABSL_SCOPED_LOCKABLE MutexLockEither : public MutexLock {
 public:
	using MutexLock::MutexLock;
	explicit MutexLockEither(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
		: MutexLock(&mu) {}
};
}  // namespace absl

#define MutexLock MutexLockEither

#endif
