#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The settings our packetdrill scripts assume, for the kernel's run in its
# namespace (a Sluice stack reads the same sysctls when it is made): those
# of Linux's defaults that the scripts depend on, and no qdisc pacing on
# tun0. Run as the scripts' first line.
sysctl -q net.ipv4.tcp_timestamps=1 net.ipv4.tcp_sack=1 net.ipv4.tcp_dsack=1 \
	net.ipv4.tcp_window_scaling=1 net.ipv4.tcp_ecn=0 net.ipv4.tcp_syncookies=1 \
	net.ipv4.tcp_early_retrans=4 net.ipv4.tcp_recovery=1 net.ipv4.tcp_frto=2 \
	net.ipv4.tcp_reordering=3 net.ipv4.tcp_slow_start_after_idle=0 \
	net.ipv4.tcp_min_tso_segs=2
sysctl -q net.ipv4.tcp_rmem="4096 540000 15728640"
sysctl -q net.ipv4.tcp_wmem="4096 262144 4194304"
sysctl -q net.ipv4.tcp_congestion_control=cubic
tc qdisc add dev tun0 root pfifo
