# SPDX-License-Identifier: BSD-2-Clause
# Threads on both sides: a ThreadingHTTPServer and 16 client threads making
# 25 requests each (new connection each time), all in one process, so fd
# table updates (socket, accept, close) race with lookups in other threads.
import http.client
import http.server
import threading

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
good = []
lock = threading.Lock()


def client():
    n = 0
    for _ in range(25):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("HEAD", "/")
        n += c.getresponse().status == 200
        c.close()
    with lock:
        good.append(n)


ts = [threading.Thread(target=client) for _ in range(16)]
for t in ts:
    t.start()
for t in ts:
    t.join()
srv.shutdown()
print("ok", sum(good), "of", 16 * 25)
