/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Touching shared memory: the one set of helpers for every load or store
 * of a region field that another process (or the module) may write at the
 * same time.  Modelled on the kernel's READ_ONCE()/WRITE_ONCE() and smp_*
 * family, on the compiler's __atomic builtins, so they work on the plain
 * types of the region's structs (no _Atomic casts, no volatile).  core.h
 * includes this; nothing else does.
 *
 * The rule:
 *  - A field written only under the stack lock and read only under it is
 *    a plain access: the lock orders it.
 *  - Anything read without the lock, or written by someone who does not
 *    hold it (the module; a process attaching; a lock waiter), goes
 *    through these helpers, and every acquire or release says in a
 *    one-line comment what it orders.
 *  - A value read from the region and then checked is read once
 *    (SL_READ_ONCE) and the checked copy is the one used: another process
 *    may change the field between two loads.
 *  - A counter several processes bump without the lock is an atomic
 *    read-modify-write (sl_fetch_add*).
 * Read-modify-writes are fully ordered unless their name says otherwise,
 * as the kernel's value-returning atomics are (on x86 every one is a
 * locked instruction either way).
 */
#ifndef SLUICE_SHM_H
#define SLUICE_SHM_H

/* One load (store) the compiler may neither repeat, tear nor drop. */
#define SL_READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define SL_WRITE_ONCE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Acquire: later accesses stay after it.  Release: earlier ones stay
 * before it. */
#define sl_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define sl_store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Read-modify-write; each returns the old value. */
#define sl_fetch_add(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define sl_fetch_sub(p, v)	__atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)
#define sl_fetch_or(p, v)	__atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define sl_fetch_and(p, v)	__atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
/* Statistics only: orders nothing. */
#define sl_fetch_add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define sl_xchg(p, v)		__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define sl_xchg_release(p, v)	__atomic_exchange_n((p), (v), __ATOMIC_RELEASE)
#define sl_xchg_relaxed(p, v)	__atomic_exchange_n((p), (v), __ATOMIC_RELAXED)

/*
 * Compare and exchange: if *p == *oldp, store new and return true; else
 * load *p into *oldp and return false (the kernel's try_cmpxchg()).  The
 * _weak forms may fail spuriously: use them in a loop.
 */
#define sl_cmpxchg(p, oldp, new)						\
	__atomic_compare_exchange_n((p), (oldp), (new), 0, __ATOMIC_SEQ_CST,	\
				    __ATOMIC_SEQ_CST)
#define sl_cmpxchg_weak_acquire(p, oldp, new)					\
	__atomic_compare_exchange_n((p), (oldp), (new), 1, __ATOMIC_ACQUIRE,	\
				    __ATOMIC_RELAXED)
#define sl_cmpxchg_weak_relaxed(p, oldp, new)					\
	__atomic_compare_exchange_n((p), (oldp), (new), 1, __ATOMIC_RELAXED,	\
				    __ATOMIC_RELAXED)

/* *p = max(*p, v), for high-water marks kept without the lock. */
#define sl_store_max(p, v)							\
	do {									\
		__typeof__(*(p)) o_ = SL_READ_ONCE(*(p)), v_ = (v);		\
		while (o_ < v_ && !sl_cmpxchg_weak_relaxed((p), &o_, v_))	\
			;							\
	} while (0)

/* A full barrier (the kernel's smp_mb()). */
#define sl_smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
/* Loads before it complete before loads after it (a seqlock reader's
 * re-read of the count). */
#define sl_smp_rmb()		__atomic_thread_fence(__ATOMIC_ACQUIRE)

#endif /* SLUICE_SHM_H */
