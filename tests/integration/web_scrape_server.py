#!/usr/bin/env python3
"""A small web server for test_web_scrape.sh: pages, redirects, errors.

    web_scrape_server.py --pages DIR --port-file FILE --log FILE [--host H]

Listens on HOST (127.0.0.1) at a free port, written to --port-file once it
listens. Every request is logged to --log as one JSON line (host the request
came to, path, the request's headers). Routes:

  /pages/NAME            the file DIR/NAME, text/html; charset=utf-8
                         (NAME ending in .latin1.html: charset=iso-8859-1)
  /redirect/to?u=URL     302 to URL (absolute or relative), as given
  /redirect/chain        301 -> /redirect/step -> 302 -> /pages/simple.html
  /redirect/loop         302 to itself, forever
  /redirect/nolocation   302 without a Location
  /status/CODE           that status, a short HTML body
  /slow?s=SECONDS        waits, then 200
  /binary                application/octet-stream, 256 bytes 0..255
  /csv                   text/csv; charset=utf-8, a three-line CSV (blob_fetch)
"""
import argparse
import json
import os
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def send(self, code, body=b"", ctype="text/html; charset=utf-8", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        with open(self.server.log, "a") as f:
            f.write(json.dumps({"host": self.server.server_address[0], "path": self.path,
                                "headers": dict(self.headers.items())}) + "\n")
        p = url.path
        if p.startswith("/pages/"):
            name = os.path.basename(p[len("/pages/"):])
            try:
                with open(os.path.join(self.server.pages, name), "rb") as f:
                    body = f.read()
            except OSError:
                return self.send(404, b"<html><body><h1>Not found</h1></body></html>")
            cs = "iso-8859-1" if name.endswith(".latin1.html") else "utf-8"
            return self.send(200, body, "text/html; charset=" + cs)
        if p == "/redirect/to":
            return self.send(302, b"", headers=[("Location", q["u"][0])])
        if p == "/redirect/chain":
            return self.send(301, b"", headers=[("Location", "/redirect/step")])
        if p == "/redirect/step":
            return self.send(302, b"", headers=[("Location", "/pages/simple.html")])
        if p == "/redirect/loop":
            return self.send(302, b"", headers=[("Location", "/redirect/loop")])
        if p == "/redirect/nolocation":
            return self.send(302, b"")
        if p.startswith("/status/"):
            code = int(p[len("/status/"):])
            return self.send(code, b"<html><body><p>status %d</p></body></html>" % code)
        if p == "/slow":
            time.sleep(float(q.get("s", ["5"])[0]))
            return self.send(200, b"<html><body><p>late</p></body></html>")
        if p == "/csv":
            return self.send(200, b'id,text\r\n1,alpha\r\n2,"b, c"\r\n', "text/csv; charset=utf-8")
        if p == "/binary":
            return self.send(200, bytes(range(256)), "application/octet-stream")
        return self.send(404, b"<html><body><h1>Not found</h1></body></html>")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    srv = ThreadingHTTPServer((a.host, a.port), Handler)
    srv.daemon_threads = True
    srv.pages, srv.log = a.pages, a.log
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, a.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
