// SPDX-License-Identifier: BSD-2-Clause
/*
 * A seeded network simulation: two stacks joined by the loop link with
 * loss, reordering, duplication, corruption and delay, on a virtual
 * clock.  TCP transfers of many sizes, in both directions at once, must
 * arrive complete and identical, for many seeds; afterwards no buffer or
 * socket is left behind once TIME_WAIT has run out.
 */
#include "netsim.h"

int main(void)
{
	static const size_t sizes[] = { 0, 1, 1460, 1461, 65536, 300000 };
	const struct sluice_loop_faults clean = { .delay_us = 500 };
	const struct sluice_loop_faults lossy = {
		.loss_ppm = 20000, .dup_ppm = 10000, .reorder_ppm = 20000,
		.corrupt_ppm = 5000, .delay_us = 2000,
	};
	const struct sluice_loop_faults harsh = {
		.loss_ppm = 80000, .dup_ppm = 30000, .reorder_ppm = 50000,
		.corrupt_ppm = 20000, .delay_us = 10000,
	};

	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ns_transfer(i + 1, &clean, sizes[i], sizes[(i + 3) % 6], "clean", NULL);
	for (uint64_t seed = 100; seed < 300; seed++)
		ns_transfer(seed, &lossy, sizes[seed % 6], sizes[(seed / 2) % 6], "lossy", NULL);
	for (uint64_t seed = 1000; seed < 1050; seed++)
		ns_transfer(seed, &harsh, 100000, 50000, "harsh", NULL);
	return tap_done();
}
