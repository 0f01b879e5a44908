// SPDX-License-Identifier: BSD-2-Clause
/*
 * The synchronized states against the main events, as a table
 * (RFC 9293 3.10.7.4, RFC 5961): every state is built by driving a real
 * connection there, then one event is injected and the state that
 * follows and the reply are checked.  LISTEN, SYN-SENT and SYN-RECEIVED
 * are in test_tcp_open.c.
 */
#include "tcp_fixture.h"

#define IRS 40000u

enum ev { E_SYN, E_RST, E_RST_WIN, E_OOW, E_BADACK, E_DATA, E_FIN, E_ACK, E_N };

static const char *const ev_name[E_N] = {
	"SYN", "RST at RCV.NXT", "RST in window", "out-of-window data", "ACK above SND.NXT",
	"data", "FIN", "ACK of all",
};

static const char *const st_name[] = {
	"CLOSED", "LISTEN", "SYN-SENT", "SYN-RECEIVED", "ESTABLISHED", "FIN-WAIT-1",
	"FIN-WAIT-2", "CLOSE-WAIT", "CLOSING", "LAST-ACK", "TIME-WAIT",
};

#define R_NONE	0	/* nothing sent at once */
#define R_ACK	1	/* a bare ACK */
#define R_DATA	2	/* nothing at once, 4 bytes readable */

struct expect {
	uint8_t state;		/* after the event */
	uint8_t reply;
};

/* [state - ESTABLISHED][event] */
static const struct expect table[7][E_N] = {
	/* ESTABLISHED */
	{ { SL_TCP_ESTABLISHED, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_ESTABLISHED, R_ACK }, { SL_TCP_ESTABLISHED, R_ACK },
	  { SL_TCP_ESTABLISHED, R_ACK }, { SL_TCP_ESTABLISHED, R_DATA },
	  { SL_TCP_CLOSE_WAIT, R_ACK }, { SL_TCP_ESTABLISHED, R_NONE } },
	/* FIN-WAIT-1 (after shutdown(SHUT_WR): still reading) */
	{ { SL_TCP_FIN_WAIT_1, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_FIN_WAIT_1, R_ACK }, { SL_TCP_FIN_WAIT_1, R_ACK },
	  { SL_TCP_FIN_WAIT_1, R_ACK }, { SL_TCP_FIN_WAIT_2, R_DATA },
	  { SL_TCP_TIME_WAIT, R_ACK }, { SL_TCP_FIN_WAIT_2, R_NONE } },
	/* FIN-WAIT-2 */
	{ { SL_TCP_FIN_WAIT_2, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_FIN_WAIT_2, R_ACK }, { SL_TCP_FIN_WAIT_2, R_ACK },
	  { SL_TCP_FIN_WAIT_2, R_ACK }, { SL_TCP_FIN_WAIT_2, R_DATA },
	  { SL_TCP_TIME_WAIT, R_ACK }, { SL_TCP_FIN_WAIT_2, R_NONE } },
	/* CLOSE-WAIT: text and FIN after the FIN are ignored */
	{ { SL_TCP_CLOSE_WAIT, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_CLOSE_WAIT, R_ACK }, { SL_TCP_CLOSE_WAIT, R_ACK },
	  { SL_TCP_CLOSE_WAIT, R_ACK }, { SL_TCP_CLOSE_WAIT, R_NONE },
	  { SL_TCP_CLOSE_WAIT, R_NONE }, { SL_TCP_CLOSE_WAIT, R_NONE } },
	/* CLOSING */
	{ { SL_TCP_CLOSING, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_CLOSING, R_ACK }, { SL_TCP_CLOSING, R_ACK },
	  { SL_TCP_CLOSING, R_ACK }, { SL_TCP_TIME_WAIT, R_NONE },
	  { SL_TCP_TIME_WAIT, R_NONE }, { SL_TCP_TIME_WAIT, R_NONE } },
	/* LAST-ACK */
	{ { SL_TCP_LAST_ACK, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_LAST_ACK, R_ACK }, { SL_TCP_LAST_ACK, R_ACK },
	  { SL_TCP_LAST_ACK, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_CLOSED, R_NONE }, { SL_TCP_CLOSED, R_NONE } },
	/*
	 * TIME-WAIT, the entry that stands in for the connection (tcp_tw.c),
	 * as Linux's tcp_timewait_state_process() answers: a FIN, data or an
	 * old SYN get an ACK; a reset elsewhere than RCV.NXT and a bare ACK at
	 * RCV.NXT (whatever it acknowledges) get nothing.
	 */
	{ { SL_TCP_TIME_WAIT, R_ACK }, { SL_TCP_CLOSED, R_NONE },
	  { SL_TCP_TIME_WAIT, R_NONE }, { SL_TCP_TIME_WAIT, R_ACK },
	  { SL_TCP_TIME_WAIT, R_NONE }, { SL_TCP_TIME_WAIT, R_ACK },
	  { SL_TCP_TIME_WAIT, R_ACK }, { SL_TCP_TIME_WAIT, R_NONE } },
};

/* The state as the table names it: a socket closed by entering TIME-WAIT
 * (as on Linux, the user's socket is closed there) is TIME-WAIT while its
 * entry lives. */
static int state_of(struct sl_sock *so)
{
	if (so->state == SL_TCP_CLOSED &&
	    sl_tw_find(T.s, so->laddr, so->lport, so->raddr, so->rport))
		return SL_TCP_TIME_WAIT;
	return so->state;
}

/* Drive a fresh connection to state st (not orphaned: shutdown(), not
 * close(), so every state is reached by the user's own socket). */
static struct sl_sock *to_state(int st)
{
	uint32_t iss;
	struct sl_sock *so = tf_connect(IRS, &iss, NULL, 8192);
	uint16_t p = ntohs(so->lport);

	/* Past the quick-ACK start (test_tcp_data): data waits for the
	 * delayed ACK, as in the table. */
	tf_past_quickack(so);
	switch (st) {
	case SL_TCP_FIN_WAIT_1:
	case SL_TCP_FIN_WAIT_2:
	case SL_TCP_CLOSING:
	case SL_TCP_TIME_WAIT:
		sl_tcp_shutdown(T.s, so, SHUT_WR, tf_now_us);
		if (st == SL_TCP_CLOSING)
			tf_seg(p, TH_ACK_ | TH_FIN_, IRS + 1, iss + 1, 8192, NULL, 0);
		if (st == SL_TCP_FIN_WAIT_2 || st == SL_TCP_TIME_WAIT)
			tf_seg(p, TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
		if (st == SL_TCP_TIME_WAIT)
			tf_seg(p, TH_ACK_ | TH_FIN_, IRS + 1, iss + 2, 8192, NULL, 0);
		break;
	case SL_TCP_CLOSE_WAIT:
	case SL_TCP_LAST_ACK:
		tf_seg(p, TH_ACK_ | TH_FIN_, IRS + 1, iss + 1, 8192, NULL, 0);
		if (st == SL_TCP_LAST_ACK)
			sl_tcp_shutdown(T.s, so, SHUT_WR, tf_now_us);
		break;
	default:
		break;
	}
	tf_clear();
	return so;
}

static void run_case(int st, enum ev e)
{
	const struct expect *x = &table[st - SL_TCP_ESTABLISHED][e];
	struct sl_sock *so;
	uint32_t rn, sn;
	uint16_t p;
	struct tf_seg g;
	bool ok;

	tf_init("st");
	so = to_state(st);
	if (!tap_ok(so && state_of(so) == st, "built %s", st_name[st])) {
		tf_finish();
		return;
	}
	rn = so->tcp.rcv_nxt;
	sn = so->tcp.snd_max;
	p = ntohs(so->lport);
	switch (e) {
	case E_SYN:
		tf_seg(p, TH_SYN_, rn, 0, 8192, NULL, 0);
		break;
	case E_RST:
		tf_seg(p, TH_RST_, rn, 0, 0, NULL, 0);
		break;
	case E_RST_WIN:
		tf_seg(p, TH_RST_, rn + 100, 0, 0, NULL, 0);
		break;
	case E_OOW:
		tf_seg(p, TH_ACK_, rn + 1000000, sn, 8192, "oow!", 4);
		break;
	case E_BADACK:
		tf_seg(p, TH_ACK_, rn, sn + 1000, 8192, NULL, 0);
		break;
	case E_DATA:
		tf_seg(p, TH_ACK_, rn, sn, 8192, "data", 4);
		break;
	case E_FIN:
		tf_seg(p, TH_ACK_ | TH_FIN_, rn, sn, 8192, NULL, 0);
		break;
	default:
		tf_seg(p, TH_ACK_, rn, sn, 8192, NULL, 0);
		break;
	}
	g = tf_last();
	switch (x->reply) {
	case R_ACK:
		ok = T.n == 1 && g.flags == TH_ACK_ && g.seq == so->tcp.snd_nxt;
		break;
	case R_DATA:
		ok = T.n == 0 && so->rxq_bytes == 4;
		break;
	default:
		ok = T.n == 0;
		break;
	}
	tap_ok(state_of(so) == x->state && ok, "%s + %s: %s, %s", st_name[st], ev_name[e],
	       st_name[x->state],
	       x->reply == R_ACK ? "ACK" : x->reply == R_DATA ? "data queued" : "no reply");
	if (state_of(so) != x->state || !ok)
		printf("#   state %s, %u frames, flags 0x%x\n", st_name[state_of(so)], T.n, g.flags);
	tf_finish();
}

int main(void)
{
	for (int st = SL_TCP_ESTABLISHED; st <= SL_TCP_TIME_WAIT; st++)
		for (int e = 0; e < E_N; e++)
			run_case(st, (enum ev)e);
	return tap_done();
}
