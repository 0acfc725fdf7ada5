#!/usr/bin/env python3
"""A webhook receiver for the benchmark: HTTP/1.1 keep-alive, answers 200, counts POSTs.
Prints its port, then the count when stdin closes."""
import http.server
import sys
import threading

count = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global count
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            count += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
threading.Thread(target=srv.serve_forever, daemon=True).start()
print(srv.server_address[1], flush=True)
sys.stdin.read()
print(count, flush=True)
