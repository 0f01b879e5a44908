# SPDX-License-Identifier: BSD-2-Clause
# Sourced: nginx_conf DIR PORT WORKERS [CONNECTIONS] writes DIR/nginx.conf,
# a configuration of the caller's own (every path in DIR, in the
# foreground, serving DIR/www/index.html, 4000 random base64 bytes, on
# 127.0.0.1:PORT), for tests/host/test_preload_nginx.sh and
# tests/bench/programs.sh.  CONNECTIONS (default 256): each worker's
# worker_connections; given, the worker's fd limit (worker_rlimit_nofile)
# is twice that (at most `ulimit -Hn`) and the listen backlog CONNECTIONS
# (Linux caps it at net.core.somaxconn).
nginx_conf() {
	local dir=$1 port=$2 workers=$3 conns=${4:-256} user="" rl="" bl="" hard fds

	mkdir -p "$dir/www" "$dir/logs"
	head -c 4000 /dev/urandom | base64 >"$dir/www/index.html"
	[ "$(id -u)" = 0 ] && user="user root;"
	if [ -n "${4:-}" ]; then
		hard=$(ulimit -Hn)
		fds=$((conns * 2))
		[ "$hard" != unlimited ] && [ "$hard" -lt "$fds" ] && fds=$hard
		rl="worker_rlimit_nofile $fds;"
		bl=" backlog=$conns"
	fi
	cat >"$dir/nginx.conf" <<EOF
$user
daemon off;
master_process on;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/logs/error.log notice;
$rl
events { worker_connections $conns; }
http {
	access_log off;
	sendfile on;
	keepalive_requests 1000000;
	client_body_temp_path $dir/body;
	proxy_temp_path $dir/proxy;
	fastcgi_temp_path $dir/fastcgi;
	uwsgi_temp_path $dir/uwsgi;
	scgi_temp_path $dir/scgi;
	server {
		listen 127.0.0.1:$port$bl;
		root $dir/www;
	}
}
EOF
}
