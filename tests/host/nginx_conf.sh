# SPDX-License-Identifier: BSD-2-Clause
# Sourced: nginx_conf DIR PORT WORKERS writes DIR/nginx.conf, a
# configuration of the caller's own (every path in DIR, in the foreground,
# serving DIR/www/index.html, 4000 random base64 bytes, on 127.0.0.1:PORT),
# for tests/host/test_preload_nginx.sh and tests/bench/programs.sh.
nginx_conf() {
	local dir=$1 port=$2 workers=$3 user=""

	mkdir -p "$dir/www" "$dir/logs"
	head -c 4000 /dev/urandom | base64 >"$dir/www/index.html"
	[ "$(id -u)" = 0 ] && user="user root;"
	cat >"$dir/nginx.conf" <<EOF
$user
daemon off;
master_process on;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/logs/error.log notice;
events { worker_connections 256; }
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
		listen 127.0.0.1:$port;
		root $dir/www;
	}
}
EOF
}
