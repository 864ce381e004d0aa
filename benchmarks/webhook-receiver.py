"""A webhook receiver for benchmarks/webhooks.sh: answers every POST with 200 at once (HTTP/1.1,
keep-alive) on 127.0.0.1 and records when each arrived. Writes its port to argv[1]; on SIGTERM, or
after an hour, writes "count first last" (monotonic seconds) to argv[2] and exits."""
import http.server, signal, sys, threading, time

arrivals = []
lock = threading.Lock()

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        now = time.monotonic()
        with lock:
            arrivals.append(now)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))

def report(*_):
    with lock:
        line = f"{len(arrivals)} {arrivals[0] if arrivals else 0} {arrivals[-1] if arrivals else 0}\n"
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(line)
    import os
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])

def stop(*_):
    report()
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGUSR1, report)
timer = threading.Timer(3600, lambda: (report(), __import__("os")._exit(0)))
timer.daemon = True
timer.start()
server.serve_forever()
