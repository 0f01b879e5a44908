/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP: per-connection state kept in the socket slot, and the entry points
 * the rest of the stack calls.  Every entry point runs with the stack lock
 * held and takes the time as an argument; output leaves through
 * sl_ip_output(), so a test drives the core segment by segment.
 *
 * Files: tcp.c (lifecycle, user calls, ISN), tcp_input.c (segment
 * arrival, RFC 9293 3.10.7), tcp_output.c (segment building and the send
 * loop), tcp_timer.c (the one socket deadline and what it multiplexes),
 * tcp_cc.c (congestion control: CUBIC with a NewReno fallback).
 */
#ifndef SLUICE_TCP_H
#define SLUICE_TCP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sl_stack;
struct sl_sock;
struct sl_ip;

/* Bytes of a socket slot available to the protocol part. */
#define SL_SOCK_PROTO_SPACE	720

/* RFC 9293 section 3.3.2, ordered so that predicates are comparisons. */
enum sl_tcp_state {
	SL_TCP_CLOSED = 0,
	SL_TCP_LISTEN,
	SL_TCP_SYN_SENT,
	SL_TCP_SYN_RECEIVED,
	SL_TCP_ESTABLISHED,
	SL_TCP_FIN_WAIT_1,
	SL_TCP_FIN_WAIT_2,
	SL_TCP_CLOSE_WAIT,
	SL_TCP_CLOSING,
	SL_TCP_LAST_ACK,
	SL_TCP_TIME_WAIT,
};

/* Sequence-number arithmetic modulo 2^32 (RFC 9293 3.4). */
#define SEQ_LT(a, b)	((int32_t)((uint32_t)(a) - (uint32_t)(b)) < 0)
#define SEQ_LEQ(a, b)	((int32_t)((uint32_t)(a) - (uint32_t)(b)) <= 0)
#define SEQ_GT(a, b)	((int32_t)((uint32_t)(a) - (uint32_t)(b)) > 0)
#define SEQ_GEQ(a, b)	((int32_t)((uint32_t)(a) - (uint32_t)(b)) >= 0)
#define SEQ_MAX(a, b)	(SEQ_GT(a, b) ? (a) : (b))
#define SEQ_MIN(a, b)	(SEQ_LT(a, b) ? (a) : (b))

/* Constants, with where they come from. */
#define SL_TCP_MSS_DEFAULT	536		/* RFC 9293 3.7.1 */
#define SL_TCP_MSS_MIN		88		/* Linux TCP_MIN_MSS */
#define SL_TCP_IW_SEGS		10		/* RFC 6928; Linux TCP_INIT_CWND */
#define SL_TCP_WMEM_MAX		4194304u	/* Linux tcp_wmem[2] default */
#define SL_TCP_RMEM_MAX		6291456u	/* Linux tcp_rmem[2] default */
/* HyStart (Linux tcp_cubic.c: hystart_low_window, HYSTART_MIN_SAMPLES,
 * HYSTART_DELAY_MIN/MAX): from 16 segments, 8 samples a round, a rise
 * of min_RTT/8 clamped to 4-16 ms ends slow start. */
#define SL_TCP_HS_LOW_WINDOW	16
#define SL_TCP_HS_SAMPLES	8
#define SL_TCP_HS_DELAY_MIN_US	4000u
#define SL_TCP_HS_DELAY_MAX_US	16000u
#define SL_TCP_RTO_INIT_US	1000000u	/* RFC 6298 2.1: 1 s */
#define SL_TCP_RTO_MIN_US	200000u		/* Linux TCP_RTO_MIN (RFC 6298 2.4 says 1 s) */
#define SL_TCP_TLP_MIN_US	2000u		/* added to a PTO: Linux TCP_TIMEOUT_MIN (2 ms) */
#define SL_TCP_RTO_MAX_US	120000000u	/* Linux TCP_RTO_MAX; RFC 6298 2.5 allows >= 60 s */
#define SL_TCP_SYN_RETRIES	6		/* Linux tcp_syn_retries; RFC 1122 4.2.3.5 R2 >= 3 min */
#define SL_TCP_SYNACK_RETRIES	5		/* Linux tcp_synack_retries */
#define SL_TCP_SYNCNT_MAX	127		/* Linux MAX_TCP_SYNCNT */
#define SL_TCP_DATA_RETRIES	15		/* Linux tcp_retries2; RFC 1122 4.2.3.5 R2 */
#define SL_TCP_ORPHAN_RETRIES	8		/* Linux tcp_orphan_retries (0 means 8) */
#define SL_TCP_MSL_US		30000000ull	/* RFC 9293 3.4.2: MSL (2 min there; 30 s as BSD) */
#define SL_TCP_TIME_WAIT_US	(2 * SL_TCP_MSL_US)	/* RFC 9293 3.6: 2 MSL */
#define SL_TCP_TW_REUSE_US	1000000	/* Linux tcp_twsk_unique(): 1 s in TIME-WAIT */
/* SYN cookies (RFC 4987 3.6): a cookie's clock ticks every 64 s and one of
 * this tick or the last is taken; cookies are looked at for 2 minutes after
 * the listener last sent one (Linux TCP_SYNCOOKIE_VALID). */
#define SL_TCP_COOKIE_TICK_US	(64ull * 1000000)
#define SL_TCP_COOKIE_LISTEN_S	120
#define SL_TCP_FIN_TIMEOUT_US	60000000ull	/* orphan FIN-WAIT-2 limit, Linux tcp_fin_timeout */
#define SL_TCP_LINGER2_MAX_S	120		/* Linux TCP_FIN_TIMEOUT_MAX */
#define SL_TCP_CORK_US		200000u		/* tcp(7): TCP_CORK's 200 ms ceiling */
#define SL_TCP_POOL_US		5000u		/* a send the pool refused: looked at again */
#define SL_TCP_QUICKACKS	16		/* Linux TCP_MAX_QUICKACKS */
/* The ACK timeout (Linux's icsk_ack.ato), ms: its floor and start
 * (TCP_ATO_MIN), its ceiling for a short segment or an exchange
 * (TCP_DELACK_MAX, icsk_delack_max) and otherwise (HZ / 2): all within
 * RFC 9293 3.8.6.3's 0.5 s. */
#define SL_TCP_ATO_MIN_MS	40	/* RFC 9293 3.8.6.3 (< 0.5 s); Linux TCP_ATO_MIN, TCP_DELACK_MIN */
#define SL_TCP_ATO_PUSHED_MS	200
#define SL_TCP_ATO_MAX_MS	500
#define SL_TCP_KEEPIDLE_S	7200		/* RFC 1122 4.2.3.6: >= 2 hours */
#define SL_TCP_KEEPINTVL_S	75		/* Linux tcp_keepalive_intvl */
#define SL_TCP_KEEPCNT		9		/* Linux tcp_keepalive_probes */
#define SL_TCP_WSCALE_MAX	14		/* RFC 7323 2.3 */
#define SL_TCP_SOMAXCONN	4096		/* Linux SOMAXCONN */
#define SL_TCP_SYNQ_MIN		8		/* SYN queue floor for tiny backlogs */
#define SL_TCP_SYNQ_SHARE	4		/* embryos, all listeners: <= max_sockets / 4 */
/* Out-of-order buffers a connection may hold, besides rcvbuf's bound
 * (Linux has that bound only); the window offered stays within it
 * (sl_tcp_rcv_space_mss()), 4,096 segments of 1,460 bytes (~6 MB) so a
 * kernel sender's slow start over a 10 ms path is not held below what a
 * kernel receiver lets it (2,262 segments at 0.1 % loss,
 * tests/bench/lossy_host.sh -d receive).  Inserting walks the sorted
 * list. */
#define SL_TCP_OOO_MAX		4096
#define SL_TCP_DUPACK_THRESH	3		/* RFC 5681 3.2 */
#define SL_TCP_SACK_MAX		4		/* RFC 2018 3: at most 4 blocks (3 with TS) */
#define SL_TCP_CHALLENGE_MAX	100		/* RFC 5961 7: challenge ACKs a second, per connection */
#define SL_TCP_OOW_LIMIT_MS	500		/* Linux tcp_invalid_ratelimit: out-of-window ACKs */
#define SL_TCP_PAWS_IDLE_S	(24u * 86400)	/* RFC 7323 5.5: TS.Recent invalid after 24 days */

/*
 * Send-queue buffers are laid out so that headers are written in place in
 * front of the payload, with room for the longest TCP header:
 *   [SL_HEADROOM][20 IPv4][up to 60 TCP header + options][payload]
 */
#define SL_TCP_HDR_MAX		60
#define SL_TCP_DATA_OFF		(SL_HEADROOM + 20 + SL_TCP_HDR_MAX)
/* Payload bytes a send buffer holds after that room: the bound every length
 * read from a send buffer (or an MSS) is checked against. */
#define SL_TCP_BUF_PAYLOAD(s)	((s)->buf_size - SL_TCP_DATA_OFF)
/* Payload of one segment spanning buffers inside the stack: its IPv4
 * length must fit 16 bits. */
#define SL_TCP_CHAIN_BYTES	(65535 - 20 - SL_TCP_HDR_MAX)

/* sluice_buf.flags on TCP's own queues */
#define SL_TBF_SENT	0x01	/* sent at least once */
#define SL_TBF_REXMIT	0x02	/* retransmitted: no RTT sample (Karn) */
#define SL_TBF_SACKED	0x04	/* covered by a SACK block from the peer */
#define SL_TBF_FIN	0x08	/* out-of-order queue: a FIN follows the payload */
#define SL_TBF_RECOV	0x10	/* retransmitted in the current recovery */
#define SL_TBF_PSH	0x20	/* send queue: a write ends here (Linux's tcp_mark_push()) */
/* SACK connections: taken for lost by RACK (RFC 8985 6.2), until it is
 * acknowledged, SACKed or the RTO goes back. Sent again: SL_TBF_RECOV as
 * well, cleared when RACK finds that retransmission lost too (Linux's
 * TCPCB_LOST and TCPCB_SACKED_RETRANS). */
#define SL_TBF_LOST	0x40

/* sl_tcp_sock.tflags */
#define SL_TF_WS	0x0001	/* window scaling agreed (RFC 7323 2) */
#define SL_TF_TS	0x0002	/* timestamps agreed (RFC 7323 3) */
#define SL_TF_SACK	0x0004	/* SACK permitted by both (RFC 2018) */
#define SL_TF_ACKNOW	0x0008	/* send an ACK at the end of this event */
#define SL_TF_FIN_Q	0x0010	/* FIN queued after snd_end */
#define SL_TF_FIN_RCVD	0x0020	/* peer's FIN received in order */
#define SL_TF_RECOVERY	0x0040	/* in fast recovery (RFC 6582) */
/* 0x0080 free (was SL_TF_TIMING: RTT samples now come from each ACK) */
#define SL_TF_PASSIVE	0x0100	/* child of a listener */
#define SL_TF_ACCQ	0x0200	/* on its listener's accept queue */
#define SL_TF_CONNECTED	0x0400	/* reached ESTABLISHED once */
#define SL_TF_PROBE	0x0800	/* persist timer armed for a zero window */
#define SL_TF_EMBRYO	0x1000	/* counted in sluice_region.tcp_embryos */
#define SL_TF_OVERRIDE	0x2000	/* SWS override timeout: send what the window takes */
#define SL_TF_DONE	0x4000	/* ended (reset, refused, closed): reads give 0 (Linux SOCK_DONE) */
#define SL_TF_CORK	0x8000	/* TCP_CORK: partial segments wait (tcp(7)) */
/* A TCP_NOTSENT_LOWAT mark is in force, the socket's or the sysctl's
 * (tcp.c, notsent_ok()): one bit on the line every send reads. */
#define SL_TF_LOWAT	0x10000
#define SL_TF_RENO	0x20000	/* TCP_CONGESTION "reno": Reno, not CUBIC, avoidance */
#define SL_TF_CONN_PEND	0x40000	/* connect() began, its end not yet seen by connect() (Linux SS_CONNECTING) */
#define SL_TF_TLP	0x80000	/* a tail loss probe is out, up to tlp_high (RFC 8985 7) */
#define SL_TF_PROBING	0x100000 /* sl_tcp_output() is sending that probe's new segment */
/* A listener whose kernel twin (the preload's OS-backed listener,
 * lib/preload/twin.c) may have a connection waiting: it polls readable. */
#define SL_TF_OSREADY	0x200000
#define SL_TF_TLP_RETX	0x400000 /* that probe sent a segment again (Linux tlp_retrans) */
#define SL_TF_FIN_ALONE	0x800000 /* the FIN left in a segment of its own (Linux: its own skb) */
#define SL_TF_SNDBUF_SET 0x1000000 /* SO_SNDBUF set by the user: no growth (Linux SOCK_SNDBUF_LOCK) */
/* Urgent mode (RFC 9293 3.8.5): snd_up holds the end of urgent data sent
 * with MSG_OOB, until SND.UNA reaches it (Linux's tcp_urg_mode()). */
#define SL_TF_URG	0x2000000
/* Linux's interactive (pingpong) mode, tcp_pingpong_thresh 1: this end
 * sent data within the ACK timeout (ato_ms) of data coming in, so its
 * ACKs ride on its replies, or TCP_QUICKACK was set off; left when a
 * delayed ACK has to go alone, or TCP_QUICKACK is set on.  No quick
 * ACKs while in it (Linux tcp_in_quickack_mode()). */
#define SL_TF_PINGPONG	0x4000000
/* A short segment came and its ACK is delayed, once (PUSHED) or again
 * (PUSHED2) since the last ACK sent (Linux ICSK_ACK_PUSHED, _PUSHED2):
 * a read that empties the queue sends that ACK (tcp.c, ack_on_read()). */
#define SL_TF_PUSHED	0x8000000
#define SL_TF_PUSHED2	0x10000000
/* A DSACK block (RFC 2883), dsack_seq..dsack_end, waits for the next
 * segment that carries SACK blocks: it goes first, once (Linux
 * rx_opt.dsack, tcp_options_write()). */
#define SL_TF_DSACK	0x20000000
/* CUBIC has no W_max (Linux's last_max_cwnd 0): from the start, and
 * after every RTO (cubictcp_state() resets it on entering Loss) until the
 * next reduction sets one; congestion avoidance then grows cwnd at least
 * 5 % a round trip (bictcp_update(): cnt at most 20). tcp_cc.c. */
#define SL_TF_NOWMAX	0x40000000

/* sl_tcp_sock.urg_data, as Linux's tp->urg_data: the low byte is the
 * urgent byte once it arrived (SL_URG_VALID). */
#define SL_URG_VALID	0x0100	/* the byte at urg_seq is here, unread out of band */
#define SL_URG_NOTYET	0x0200	/* a pointer came; its byte has not */
#define SL_URG_READ	0x0400	/* read by recv(MSG_OOB); still in the stream, skipped */

/* Per-connection TCP state (the TCB, RFC 9293 3.3.1). */
struct sl_tcp_sock {
	/* Send sequence space: una <= nxt <= max <= end (+1 with a FIN). */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_end;
	uint32_t snd_wnd, snd_wl1, snd_wl2, max_sndwnd;
	/* Receive sequence space; rcv_adv is the right edge advertised. */
	uint32_t irs, rcv_nxt, rcv_adv, last_ack_sent;

	uint32_t tflags;		/* SL_TF_* */
	uint16_t mss;			/* send MSS: payload bytes per segment */
	uint16_t peer_mss;		/* from the peer's MSS option */
	uint16_t user_mss;		/* TCP_MAXSEG, 0: none */
	uint8_t snd_wscale, rcv_wscale;

	/* RFC 7323 timestamps */
	uint32_t ts_recent, ts_offset;

	/* The RTT estimator and RTO, as Linux's tcp_rtt_estimator() and
	 * tcp_set_rto() (tcp_timer.c, sl_tcp_rtt_sample()): SRTT, RTTVAR
	 * (Linux's rttvar_us: the most of mdev_us over the last window, at
	 * least RTO_MIN), the RTO; rtt_seq, SND.MAX when the window began
	 * (it ends when SND.UNA passes it); rtt_start_us, when the SYN or
	 * SYN-ACK went (the handshake's sample). */
	uint32_t srtt_us, rttvar_us, rto_us;
	uint32_t rtt_seq;
	uint64_t rtt_start_us;
	uint8_t backoff;		/* RTO expirations in a row */
	uint8_t dupacks;
	uint8_t delack_segs;		/* in-order segments not yet ACKed */
	uint8_t keep_probes;		/* also persist probes */
	int32_t soft_err;		/* RFC 1122 4.2.3.9 soft error */

	/* Congestion control (tcp_cc.c), bytes */
	uint32_t cwnd, ssthresh, recover;
	/* Payload above SND.UNA the peer has SACKed (the SL_TBF_SACKED
	 * buffers'): delivered already, so not counted again when the
	 * cumulative ACK covers it (tcp_input.c, ack_process()). */
	uint32_t sacked_bytes;
	/* RFC 6937 PRR, in a SACK recovery: data delivered and sent since it
	 * began, the flight it began with (RecoverFS), and what the last ACK
	 * leaves sl_tcp_output() to send (cwnd - pipe). */
	uint32_t prr_delivered, prr_out, recover_fs, prr_room;
	/* RFC 8985 7 Tail Loss Probe: when the probe is due (0: none), and
	 * SND.MAX when one was sent (SL_TF_TLP until an ACK passes it). */
	uint64_t t_tlp;
	uint32_t tlp_high;
	uint32_t cc_wmax, cc_west, cc_k_ms, cc_acc;
	uint64_t cc_epoch_us;

	/* Deadlines, absolute microseconds; 0 when off. */
	uint64_t t_rexmt, t_dack, t_persist, t_keep, t_close;

	/* Send queue: buffers in sequence order (seq, aux = payload bytes);
	 * sndq_hint is where the send loop stopped (NONE: start at head). */
	uint32_t sndq_head, sndq_tail, sndq_bytes, sndq_hint;
	/* Out-of-order queue (payload trimmed in place, sorted by seq). */
	uint32_t ooo_head, ooo_bytes;
	uint16_t ooo_count;
	uint16_t backlog;
	uint32_t sack_last;		/* seq of the newest out-of-order arrival */

	/* Listener: accept queue (linked by sl_sock.next_idx) and SYN queue. */
	uint32_t acc_head, acc_tail;
	uint16_t acc_len, syn_len, syn_max;
	/* Linux tcp_oow_rate_limited: when (ms, mod 2^16) we last answered an
	 * out-of-window segment; 0 none.  Fills what was padding. */
	uint16_t oow_ack_ms;

	/* RFC 5961 7: challenge ACKs sent in the current second */
	uint32_t chal_sec;
	uint16_t chal_cnt;

	/* Keepalive (RFC 1122 4.2.3.6) */
	uint16_t keep_idle_s, keep_intvl_s;
	uint8_t keep_cnt;
	/* ACKs of new data still sent at once, outside an exchange (Linux
	 * icsk_ack.quick, quick-ACK mode): up to SL_TCP_QUICKACKS from the
	 * first data that comes, and again after a pause longer than the
	 * RTO (tcp_input.c, ato_update()); one spent by each ACK of new data
	 * sent (tcp_output.c).  What was padding. */
	uint8_t quickacks;
	/* RFC 7323 5.5: when ts_recent was taken, seconds (what was padding). */
	uint32_t ts_recent_s;
	uint64_t last_rx_us;
	/* Listener: when (seconds, + 1) it last answered a SYN with a cookie;
	 * 0 never.  Only then are cookies in ACKs looked at. */
	uint32_t cookie_s;
	/* TCP_USER_TIMEOUT, ms (0: off), and when the data the
	 * retransmission timer is backing off for was first sent. */
	uint32_t user_timeout_ms;
	uint64_t rexmt_first_us;
	/* TCP_CORK's ceiling (tcp(7): 200 ms) for a held partial segment. */
	uint64_t t_cork;
	/* TCP_LINGER2: an orphan's FIN-WAIT-2 time, s; 0 the default
	 * (tcp_fin_timeout), -1 none (reset at once). */
	int32_t linger2_s;
	/* TCP_WINDOW_CLAMP, bytes; 0 none. */
	uint32_t window_clamp;
	/* The end of the last short segment sent: Nagle holds a short one
	 * back only while that one is unacknowledged (Minshall's variant,
	 * as Linux's tcp_minshall_check()). */
	uint32_t snd_sml;
	/* TCP_SYNCNT: SYN (a child: SYN-ACK) retransmissions, 0 the default;
	 * TCP_DEFER_ACCEPT as Linux keeps it: SYN-ACK retransmissions a bare
	 * ACK is ignored for, waiting for data (0: off). */
	uint8_t syn_retries, defer_accept;
	/* The peer's segment size as this receiver guesses it (Linux
	 * icsk_ack.rcv_mss): 536 or less until a larger segment comes
	 * (tcp_input.c, rcv_mss(), measure_rcv_mss()); 0 until data came.
	 * What was padding. */
	uint16_t rcv_mss;
	/* Listener: connections of this stack that met its full accept
	 * queue, oldest first, a list through the slots with no fixed
	 * limit (tcp.c, sl_tcp_park(); proto/sock.c, sl_sock_park_link()):
	 * park_head and park_tail on the listener, park_next and park_prev
	 * on each parked socket, and park_lso the listener it waits on
	 * (NONE: on no list). */
	uint32_t park_head, park_tail, park_next, park_prev, park_lso;
	/* Path MTU (RFC 1191): the one mss was made for (Linux
	 * icsk_pmtu_cookie) and sl_region.pmtu_gen then; mtup set once a
	 * black hole was found (RFC 4821, Linux icsk_mtup.enabled with
	 * tcp_mtu_probing=1): the path is taken as tcp_base_mss's. */
	uint16_t pmtu, pmtu_gen;
	uint8_t mtup;
	/* The ACK timeout, ms (Linux icsk_ack.ato; 0 until data first
	 * came): what a delayed ACK waits, within its bounds
	 * (tcp_input.c, delack_arm()), set from the gaps between the peer's
	 * segments and doubled by a delayed ACK that had to go alone. */
	uint16_t ato_ms;
	/* When in-order data last came, ms mod 2^32 (Linux
	 * icsk_ack.lrcvtime): pingpong is data sent within ato_ms of it. */
	uint32_t lrcv_ms;
	/*
	 * A listener's children not yet accepted (SL_TF_PASSIVE or
	 * SL_TF_ACCQ, parent_idx the listener): a list through the slots
	 * from the listener's kid_head, so its close visits its children
	 * alone, not every slot.  A child is on it exactly while its
	 * parent_idx names the listener; recovery builds the lists again.
	 */
	uint32_t kid_next, kid_prev, kid_head;
	/* RFC 3168 ECN (SL_ECN_*), and the end of the window a cwnd
	 * reduction for an ECN-Echo covers (SL_ECN_CWR_WND until SND.UNA
	 * passes it: one reduction a window, 6.1.2). */
	uint8_t ecn;
	/* New segments sent so far in this sl_tcp_output() pass since the
	 * last PSH: Linux's GSO packet being filled (tcp_output.c, psh()). */
	uint8_t gso_cnt;
	/* The last short segment's size when it looked full-sized (Linux
	 * icsk_ack.last_seg_size): two alike in a row set rcv_mss.  What
	 * was padding. */
	uint16_t rcv_lss;
	uint32_t ecn_high;
	/*
	 * RACK (RFC 8985 6, as Linux's tcp_recovery.c), SACK connections:
	 * the send time (sluice_buf.ts_us) and end of the segment sent last
	 * among those delivered (RACK.xmit_ts, RACK.end_seq), the RTT it
	 * gave (RACK.rtt), the least RTT seen (Linux's min_rtt filter, here
	 * over the connection's life), the reordering timer's deadline (0:
	 * off), the highest SACKed sequence (reordering is a delivery below
	 * it), the reordering window in min_RTT/4 steps (grown on DSACK) and
	 * the recoveries it is kept for, and SL_RACK_* flags.
	 */
	uint64_t rack_xmit_us, t_reo;
	uint32_t rack_end_seq, rack_rtt_us, min_rtt_us, sack_high;
	uint8_t reo_steps, reo_persist, rack;
	/* A send the buffer pool refused (tcp.c, pool_refused()): when to
	 * look again whether the pool has room, and then wake the writer
	 * (0: none). */
	uint64_t t_pool;
	/*
	 * Undo of a cwnd reduction found needless (RFC 3522 Eifel with
	 * timestamps, RFC 3708 with DSACK, RFC 5682 F-RTO), as Linux's
	 * tcp_try_undo_*(): SND.UNA when the recovery or the RTO began
	 * (undo_marker, while SL_UNDO_MARK), its retransmissions not yet
	 * reported twice by DSACK (-1: none sent yet; 0: all were needless),
	 * the TSval of its first retransmission (retrans_ts, while
	 * SL_UNDO_STAMP), and cwnd and ssthresh as they were before it
	 * (prior_ssthresh 0: not to be restored, an ECN-Echo came).
	 */
	uint32_t undo_marker, retrans_ts, prior_cwnd, prior_ssthresh;
	int32_t undo_retrans;
	uint8_t undo;			/* SL_UNDO_* */
	/* SO_TIMESTAMP: when in-order data last came (the stack's clock, µs;
	 * kept only with the option set), what recvmsg tells as
	 * SCM_TIMESTAMP. */
	uint64_t rx_stamp_us;
	/* Receive-buffer growth (tcp.c, rcv_space_adjust(), Linux's
	 * tcp_rcv_space_adjust()): when the round being measured began
	 * (0: not yet), the first byte the user had not read then, and the
	 * most read in one round so far. */
	uint64_t rcvq_time_us;
	uint32_t rcvq_seq, rcvq_space;
	/* HyStart's delay test in slow start (tcp_timer.c,
	 * sl_tcp_rtt_sample()): the round ends when SND.UNA passes
	 * hs_end_seq; the least of its first SL_TCP_HS_SAMPLES RTT samples
	 * (hs_rtt_us, hs_samples of them so far). */
	uint32_t hs_end_seq, hs_rtt_us;
	uint8_t hs_samples;
	/*
	 * Urgent data (RFC 9293 3.8.5, RFC 6093; as Linux's tcp_urg(),
	 * tcp_recv_urg()).  Sending: snd_up, the sequence after the last
	 * byte of a MSG_OOB send, while SL_TF_URG.  Receiving: urg_seq,
	 * the sequence of the urgent byte (the peer's pointer less one,
	 * Linux's tcp_stdurg 0), and urg_data (SL_URG_*; 0: none).  The
	 * byte stays in the receive queue: reads stop at it and, without
	 * SO_OOBINLINE, step over it.  urg_sigs counts the new urgent
	 * pointers taken: each where Linux sends SIGURG to the owner
	 * (sk_send_sigurg()).
	 */
	uint32_t snd_up, urg_seq, urg_sigs;
	uint16_t urg_data;
	/* The duplicate data to report, while SL_TF_DSACK (tcp_input.c,
	 * dsack_set(); Linux's duplicate_sack[0]). */
	uint32_t dsack_seq, dsack_end;
	/* The rest of Linux's estimator (sl_tcp_rtt_sample()): mdev_us,
	 * four times the smoothed mean deviation; mdev_max_us, its most in
	 * this window (from RTO_MIN); srtt_lo, the three bits below srtt_us
	 * (Linux keeps SRTT scaled by 8). */
	uint32_t mdev_us, mdev_max_us;
	/* TCP_NOTSENT_LOWAT as set (0: net.ipv4.tcp_notsent_lowat's): the
	 * bytes written but not yet sent above which the socket is not
	 * writable (tcp.c, sl_tcp_notsent_ok(), as Linux's
	 * tcp_stream_memory_free()).  A child has its listener's. */
	uint32_t notsent_lowat;
	/* TCP_FASTOPEN on a listener: the queue length it was given, as
	 * Linux keeps it (at most somaxconn), for getsockopt; the stack
	 * makes no cookies (lib/preload/README.md, "Options"). */
	uint32_t fastopen_qlen;
	/* TCP_FASTOPEN_CONNECT as set on a socket the stack connects
	 * itself: its connect() is the kernel's without a cookie, a plain
	 * handshake (lib/preload/README.md, "Options"). */
	uint8_t fastopen_connect;
	uint8_t srtt_lo;	/* the estimator's, above (kept here: padding) */
};

/* sl_tcp_sock.undo */
#define SL_UNDO_MARK	0x01	/* undo_marker holds an episode's start */
#define SL_UNDO_STAMP	0x02	/* retrans_ts holds its first retransmission's TSval */
#define SL_UNDO_LOSS	0x04	/* after an RTO, until SND.UNA passes recover (Linux CA_Loss) */
#define SL_UNDO_FRTO	0x08	/* F-RTO is judging that RTO (RFC 5682 3.1) */
#define SL_UNDO_FRTO_NEW 0x10	/* F-RTO step 2b: new data went; the next ACK decides */
#define SL_UNDO_ORIG	0x20	/* this ACK delivered data never sent again, below recover */
#define SL_UNDO_ECE	0x40	/* this ACK carried an ECN-Echo: no cwnd undo (Linux FLAG_ECE) */

/* sl_tcp_sock.rack */
#define SL_RACK_ADVANCED	0x01	/* RACK.xmit_ts moved: look for losses */
#define SL_RACK_REORD		0x02	/* reordering seen (Linux reord_seen) */
#define SL_RACK_DSACK		0x04	/* a DSACK came: widen the window once */
#define SL_RACK_HIGH		0x08	/* sack_high holds a SACKed sequence */
/* Linux TCP_RACK_RECOVERY_THRESH: recoveries a widened window is kept for. */
#define SL_RACK_PERSIST		16
/* Linux TCP_TIMEOUT_MIN_US: added to a reordering timeout. */
#define SL_TCP_REO_SLACK_US	2000u

/* The ECN field of the IPv4 TOS byte (RFC 3168 5). */
#define SL_IP_ECN_MASK	0x03
#define SL_IP_ECN_ECT0	0x02
#define SL_IP_ECN_CE	0x03

/* sl_tcp_sock.ecn */
#define SL_ECN_OK	0x01	/* agreed (SYN_SENT: offered) */
#define SL_ECN_QUEUE_CWR 0x02	/* the next new data segment carries CWR */
#define SL_ECN_DEMAND_CWR 0x04	/* a CE arrived: ECE on every segment until a CWR */
#define SL_ECN_CWR_WND	0x08	/* cwnd reduced for an ECE, until ecn_high is acked */
#define SL_ECN_ECT	0x10	/* the segment being sent is new data: ECT(0) */

/* net.ipv4.tcp_ecn as read (struct sl_stack.tcp_ecn): 0, 1 or 2. */
static inline unsigned int sl_tcp_ecn_mode(const struct sl_stack *s)
{
	return s->tcp_ecn ? s->tcp_ecn - 1u : 2u;
}

/* When an orphan's FIN-WAIT-2 ends: TCP_LINGER2 seconds, or the default;
 * with TCP_LINGER2 -1, at once (the timer then resets, as Linux's
 * tcp_close() does for linger2 < 0). */
static inline uint64_t sl_tcp_fin_wait2_end(const struct sl_tcp_sock *tp, uint64_t now_us)
{
	int32_t l = tp->linger2_s;

	if (l < 0)
		return now_us ? now_us : 1;
	return now_us + (l ? (uint64_t)l * 1000000 : SL_TCP_FIN_TIMEOUT_US);
}

/* ---- Entry points (proto.h declares the rest) ------------- */
/*
 * TIME-WAIT (tcp_tw.c).  A connection that enters TIME-WAIT leaves its
 * socket slot and buffers at once (the user's fd, if it still has one,
 * sees the socket closed, as on Linux) and lives on as one of these in the
 * region's ring of s->tw_max entries, the kernel's inet_timewait_sock:
 * what answering a late segment needs, and nothing else.  Entries run
 * oldest to newest from tw_tail to tw_head; all wait the same 2 MSL, so
 * the oldest expires first, and a full ring drops its oldest
 * (tcp_tw_overflow, Linux's TCPTimeWaitOverflow) rather than refuse or
 * delay a connection.  Two hashes find them: by 4-tuple for input and
 * connect(), by local port (doubly linked) for bind().
 */
struct sl_tw {
	uint64_t expire_us;
	uint32_t laddr, raddr;		/* network order */
	uint16_t lport, rport;		/* network order */
	uint32_t snd_nxt, rcv_nxt;	/* what its ACKs carry */
	uint32_t ts_recent, ts_recent_s;	/* RFC 7323, as the connection had them */
	uint32_t ts_offset;		/* its TSval clock (tcp_output.c ts_now()) */
	uint32_t hnext;			/* 4-tuple chain: an entry index */
	uint32_t pnext, pprev;		/* local-port chain */
	/* The module filter of its port, held with SL_TW_FILTER (filter.c):
	 * the kernel must not hand the port out while it waits. */
	uint32_t filter_id, filter_laddr;
	uint16_t wnd;			/* window field of its ACKs, as last sent */
	uint16_t oow_ms;		/* last out-of-window ACK (SL_TCP_OOW_LIMIT_MS) */
	uint8_t flags;			/* SL_TW_* */
	uint8_t pad[3];
	/* The port's IPv6 filter, held with SL_TW_FILTER6 (its local
	 * address filter_laddr, as a socket's filter6_id). */
	uint32_t filter6_id;
};

#define SL_TW_LIVE	0x01
#define SL_TW_TS	0x02		/* timestamps on */
#define SL_TW_AUTOBIND	0x04		/* its port was picked by connect() */
#define SL_TW_FILTER	0x08		/* holds filter_id */
#define SL_TW_GONE	0x10		/* handed to a kernel socket: segments are dropped */
#define SL_TW_FILTER6	0x20		/* holds filter6_id */

/* Turn so, which just entered TIME-WAIT, into an entry; so is done. */
void sl_tw_enter(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
void sl_tw_gone(struct sl_stack *s, const struct sl_sock *so, uint64_t now_us);
struct sl_tw *sl_tw_find(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			 uint16_t rport);
void sl_tw_kill(struct sl_stack *s, struct sl_tw *tw);
/* Restart its 2 MSL: it moves to the newest end, and this is where. */
struct sl_tw *sl_tw_rearm(struct sl_stack *s, struct sl_tw *tw, uint64_t now_us);
/* End the entries whose time is up; O(those). */
void sl_tw_expire(struct sl_stack *s, uint64_t now_us);
/* Does an entry hold (laddr, lport) against a bind() without SO_REUSEADDR? */
bool sl_tw_port_used(struct sl_stack *s, uint32_t laddr, uint16_t lport);
/* May connect() from (laddr, lport) to (raddr, rport)?  An entry with that
 * 4-tuple that may be recycled (Linux tcp_tw_reuse) is left in *reuse. */
bool sl_tw_connect_ok(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
		      uint16_t rport, uint64_t now_us, struct sl_tw **reuse);
/* A live entry on lport (laddr: 0 any) that holds no filter takes filter
 * id; false if there is none.  Is there one that holds one? */
bool sl_tw_filter_take(struct sl_stack *s, uint16_t lport, uint32_t laddr, uint32_t id, bool v6);
bool sl_tw_filter_held(struct sl_stack *s, uint16_t lport, uint32_t laddr, bool v6);
/* After a holder died (recover.c): relink every entry; O(tw_max). */
void sl_tw_rebuild(struct sl_stack *s);
/* Entries newest first, for inspection; returns how many were given. */
unsigned int sl_tw_list(struct sl_stack *s, void (*fn)(const struct sl_tw *tw, void *arg),
			void *arg);
int sl_tcp_send_tw_ack(struct sl_stack *s, const struct sl_tw *tw, uint64_t now_us);

void sl_tcp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen,
		  uint64_t now_us);
struct sl_icmp_err;
void sl_tcp_icmp_error(struct sl_stack *s, const struct sl_ip *quoted, int err,
		       const struct sl_icmp_err *ie);
/* ICMP fragmentation needed quoting a segment of ours: next-hop MTU mtu. */
void sl_tcp_icmp_frag(struct sl_stack *s, const struct sl_ip *quoted, uint32_t mtu);
/* Go back to snd_una and send again (RFC 6298 5.4; tcp_timer.c). */
void sl_tcp_go_back(struct sl_stack *s, struct sl_tcp_sock *tp);
/* Linux tcp_base_mss: the MSS a black-holed path is taken to carry. */
#define SL_TCP_BASE_MSS		1024

/* tcp_handoff.c: a connection to a kernel socket (TCP repair).  Lock held;
 * 0 and *kfd, a kernel socket that holds it (the stack's socket is left
 * closed, silently), or -errno and the connection is still the stack's. */
int sl_tcp_handoff(struct sl_stack *s, struct sl_sock *so, int *kfd, uint64_t now_us);
/* Linux tcp_retries1: RTOs before a black hole is suspected. */
#define SL_TCP_RETRIES1		3
#define SL_TCP_MTU_PROBE_FLOOR	48
int sl_tcp_connect(struct sl_stack *s, struct sl_sock *so, uint32_t raddr, uint16_t rport,
		   uint64_t now_us);
/* connect() after a failed non-blocking attempt: that attempt's error
 * (ECONNABORTED if it was read already), once; 0 otherwise. */
int sl_tcp_connect_failed(struct sl_stack *s, struct sl_sock *so);
/* connect()'s work once the socket is looked at: its implicit bind (or a
 * kring stack's port again) and the SYN; -EINPROGRESS once that is out. */
int sl_tcp_open(struct sl_stack *s, struct sl_sock *so, uint32_t daddr, uint16_t dport);
int sl_tcp_listen(struct sl_stack *s, struct sl_sock *so, int backlog);
int sl_tcp_accept(struct sl_stack *s, struct sl_sock *lso, struct sl_sock **child);
ssize_t sl_tcp_send(struct sl_stack *s, struct sl_sock *so, const void *buf, size_t len,
		    int flags, uint64_t now_us);
/* Lending buffers for a copy without the lock (tcp.c); lock held. */
uint32_t sl_tcp_recv_lend(struct sl_stack *s, struct sl_sock *so, size_t len, size_t *bytes);
bool sl_tcp_recv_return(struct sl_stack *s, struct sl_sock *so, uint32_t gen, uint32_t head,
			uint64_t now_us);
uint32_t sl_tcp_send_lend(struct sl_stack *s, struct sl_sock *so, size_t len, size_t *bytes);
ssize_t sl_tcp_send_return(struct sl_stack *s, struct sl_sock *so, uint32_t gen, uint32_t head,
			   uint64_t now_us);
uint32_t sl_tcp_send_tail_room(struct sl_stack *s, const struct sl_sock *so);
ssize_t sl_tcp_recv(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len, int flags,
		    uint64_t now_us);
/* recv(MSG_OOB): the urgent byte (Linux's tcp_recv_urg()); never waits. */
ssize_t sl_tcp_recv_urg(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len, int flags);
/* FIONREAD (SIOCINQ), as Linux's tcp_ioctl(): with urgent data held
 * (not inline), the bytes before its mark. */
uint32_t sl_tcp_inq(const struct sl_sock *so);
/* SIOCATMARK: the next byte to read is the urgent one. */
bool sl_tcp_atmark(const struct sl_sock *so);
int sl_tcp_shutdown(struct sl_stack *s, struct sl_sock *so, int how, uint64_t now_us);
void sl_tcp_close(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
uint32_t sl_tcp_poll(struct sl_stack *s, struct sl_sock *so);
void sl_tcp_timer(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
void sl_tcp_pool_look(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
void sl_tcp_output(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
void sl_tcp_notsent_sent(struct sl_stack *s, struct sl_sock *so, uint32_t max_before);
int sl_tcp_setsockopt(struct sl_stack *s, struct sl_sock *so, int level, int name,
		      const void *val, unsigned int len);
int sl_tcp_getsockopt(struct sl_stack *s, struct sl_sock *so, int level, int name, void *val,
		      unsigned int *len);

/* ---- Internal, shared by tcp*.c ----------------------------------- */

/* tcp.c */
/* The first sequence the user has not read (Linux's copied_seq). */
uint32_t sl_tcp_copied_seq(const struct sl_sock *so);
/* Take n bytes (n <= rxq_bytes) off the head of the receive queue. */
void sl_tcp_rxq_eat(struct sl_stack *s, struct sl_sock *so, uint32_t n);
uint32_t sl_tcp_isn(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
		    uint16_t rport, uint64_t now_us);
/* Linux's sk_acceptq_is_full(): the queue holds backlog + 1. */
static inline bool sl_tcp_acceptq_full(const struct sl_tcp_sock *ltp)
{
	return ltp->acc_len > ltp->backlog;
}

/* A connection of this stack met listener lso's full accept queue
 * (false: no room to hold it, its timer will do); and accept() made room
 * (tcp.c). */
void sl_tcp_park(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *so);
void sl_tcp_unpark(struct sl_stack *s, struct sl_sock *lso, uint64_t now_us);
bool sl_tcp_parked_for(const struct sl_sock *lso, const struct sl_sock *c);
uint64_t sl_tcp_port_hash(struct sl_stack *s, uint32_t laddr, uint32_t raddr, uint16_t rport);
uint32_t sl_tcp_ts_offset(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			  uint16_t rport);
/* Fresh TCB for a connection from so's addresses; sets mss, rto, cwnd. */
void sl_tcp_init_tcb(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
void sl_tcp_set_state(struct sl_stack *s, struct sl_sock *so, enum sl_tcp_state st);
/* The connection is over: CLOSED, err (positive errno or 0) reported,
 * queues freed; orphans and unaccepted children are released. */
void sl_tcp_done(struct sl_stack *s, struct sl_sock *so, int err);
/* A listener's child leaves the embryo count (accepted queue or gone). */
void sl_tcp_embryo_done(struct sl_stack *s, struct sl_sock *so);
/* Release everything a socket holds and its slot. */
void sl_tcp_destroy(struct sl_stack *s, struct sl_sock *so);
/* Payload bytes we could accept now (before window rules). */
uint32_t sl_tcp_rcv_space(struct sl_stack *s, const struct sl_sock *so);
/* The same, given sl_tcp_our_mss() (a caller that has it already). */
uint32_t sl_tcp_rcv_space_mss(struct sl_stack *s, const struct sl_sock *so, uint32_t mss);
/* Embryonic connections (SYN-RECEIVED children) the whole stack may
 * hold: a SYN flood must leave socket slots for everything else. */
uint32_t sl_tcp_synq_cap(const struct sl_stack *s);
/* Our MSS to advertise. */
uint16_t sl_tcp_our_mss(struct sl_stack *s, const struct sl_sock *so);
/* Send MSS from the peer's MSS, our MTU, TCP_MAXSEG and options. */
void sl_tcp_set_mss(struct sl_stack *s, struct sl_sock *so);

/* tcp_output.c */
int sl_tcp_send_ctl(struct sl_stack *s, struct sl_sock *so, uint8_t flags, uint32_t seq,
		    uint64_t now_us);
int sl_tcp_send_ack(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
/* A challenge ACK (RFC 5961), rate limited per connection (section 7). */
void sl_tcp_challenge_ack(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
/* An ACK answering an out-of-window or PAWS-failed segment.  Pure ACKs
 * and SYNs are answered at most once per SL_TCP_OOW_LIMIT_MS, so two ends
 * that each find the other's segments out of window (a connection to
 * itself, a spoofed one) cannot ACK each other forever; with_data (the
 * segment carried payload or FIN, no SYN) is always answered. */
void sl_tcp_oow_ack(struct sl_stack *s, struct sl_sock *so, bool with_data, uint64_t now_us);
int sl_tcp_send_syn(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
/* An RST answering a segment that matched no connection (RFC 9293 3.10.7.1). */
/* Its TCP header at th, for segment in carrying plen bytes: the rule of
 * 3.10.7.1 for IPv4 and IPv6 alike (ip6.c). */
void sl_tcp_rst_fill(struct sl_tcph *th, const struct sl_tcph *in, unsigned int plen);
void sl_tcp_send_reset(struct sl_stack *s, const struct sl_ip *ip, const void *th,
		       unsigned int plen);
/* (Re)transmit send-queue buffer idx as one segment. */
/* Free buffers lent to a process that died with them (tcp.c). */
void sl_tcp_lent_reap(struct sl_stack *s, struct sl_sock *so);
/* The source address a connection to raddr uses (127.0.0.1 for 127/8, else
 * the stack's address); 0 if there is none. */
uint32_t sl_tcp_src_addr(const struct sl_stack *s, uint32_t raddr);
/* A SYN cookie for the connection (our side laddr:lport) whose SYN had
 * sequence number peer_isn and MSS option peer_mss: our ISN. */
uint32_t sl_tcp_cookie_make(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			    uint16_t rport, uint32_t peer_isn, uint16_t peer_mss, uint64_t now_us);
/* The MSS a cookie (an ACK's ack - 1) carries if it is ours, fresh and for
 * this connection; 0 if not. */
uint16_t sl_tcp_cookie_check(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			     uint16_t rport, uint32_t peer_isn, uint32_t cookie, uint64_t now_us);
int sl_tcp_xmit_buf(struct sl_stack *s, struct sl_sock *so, uint32_t idx, uint64_t now_us);
uint16_t sl_tcp_window_field(struct sl_stack *s, struct sl_sock *so);
uint32_t sl_tcp_rcv_window(struct sl_stack *s, const struct sl_sock *so);
bool sl_tcp_ack_moves_wnd(struct sl_stack *s, const struct sl_sock *so);
uint32_t sl_tcp_rcv_wnd_max(struct sl_stack *s, const struct sl_sock *so);

/* tcp_timer.c */
void sl_tcp_arm(struct sl_stack *s, struct sl_sock *so);
void sl_tcp_rtt_sample(struct sl_tcp_sock *tp, uint32_t rtt_us, uint32_t ca_rtt_us);
void sl_tcp_rearm_rexmt(struct sl_sock *so, uint64_t now_us);
void sl_tcp_tlp_arm(struct sl_sock *so, uint64_t now_us);
/* tcp_input.c: RACK's reordering timer ran out (RFC 8985 6.3). */
void sl_tcp_rack_timeout(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
/* tcp_input.c: an RTO begins an episode undo and F-RTO judge (Linux's
 * tcp_enter_loss()); called before cwnd is cut.  True when the RTO is to
 * reduce ssthresh: not inside a reduction made for this window. */
bool sl_tcp_undo_rto(struct sl_stack *s, struct sl_sock *so);
void sl_tcp_keep_reset(struct sl_sock *so, uint64_t now_us);

/* tcp_cc.c */
void sl_tcp_cc_init(struct sl_tcp_sock *tp);
void sl_tcp_cc_ack(struct sl_tcp_sock *tp, uint32_t acked, uint64_t now_us);
void sl_tcp_cc_loss(struct sl_tcp_sock *tp, uint64_t now_us);
void sl_tcp_cc_cwr(struct sl_tcp_sock *tp);
void sl_tcp_cc_rto(struct sl_tcp_sock *tp, bool reduce);
/* Sending again after more than an RTO with nothing received (RFC 5681 4.1). */
void sl_tcp_cc_idle(struct sl_tcp_sock *tp);
/* An undo's memory: keep cwnd and ssthresh as a reduction begins; put
 * them back when it proves needless. */
void sl_tcp_cc_save(struct sl_tcp_sock *tp, bool in_reduction, bool none);
void sl_tcp_cc_undo(struct sl_tcp_sock *tp);
uint32_t sl_tcp_flight(const struct sl_tcp_sock *tp);

#endif /* SLUICE_TCP_H */
