# LLM calls over TLS + HTTP/2 (docs/architecture.md §10): a real TLS and
# HTTP/2 front end — nghttpx from Debian's nghttp2-proxy — in front of the
# mock server, with a certificate authority made here and trusted through
# SSL_CERT_FILE. 64 rows in flight must share a few multiplexed
# connections (not one TLS handshake each), and the answers, sinks and
# calls must be those of the same run over plain HTTP.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/llm_lib.sh"
cd "$WORK"
NGHTTPX=$(command -v nghttpx || echo /usr/sbin/nghttpx)
if [ ! -x "$NGHTTPX" ] || ! command -v openssl >/dev/null; then
  fail "nghttpx (nghttp2-proxy) and openssl are needed: scripts/install-deps.sh installs them"
  finish; exit
fi

# A CA, and a certificate for 127.0.0.1 / localhost signed by it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=elspeth test CA" \
  -keyout ca.key -out ca.pem >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout srv.key -out srv.csr \
  >/dev/null 2>&1
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile san.ext -out srv.pem >/dev/null 2>&1
is "a test CA and a server certificate" test -s srv.pem

start_mock m --latency fixed:50
MPORT=$PORT
# A free port for nghttpx: ask the kernel, then hand it over.
TPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$NGHTTPX" --conf=/dev/null --frontend="127.0.0.1,$TPORT" --backend="127.0.0.1,$MPORT" \
  --workers=1 --no-ocsp --log-level=WARN --errorlog-file=nghttpx.err \
  --accesslog-file=access.log \
  --accesslog-format='$remote_port $alpn $status $request' \
  --frontend-http2-max-concurrent-streams=128 \
  srv.key srv.pem > nghttpx.out 2>&1 &
NGPID=$!
MOCK_PIDS+=("$NGPID")
for _ in $(seq 200); do
  "$PY" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$TPORT" \
    2>/dev/null && break
  sleep 0.025
done

rows_csv in.csv 400
opts() {
  printf 'provider: openai\nmodel: m\nbase_url: %s\napi_key: k\n' "$1"
  printf 'template: "Classify: {{ row.text }}"\nresponse_field: label\npool_size: 64\n'
}
pipeline plain.yaml in.csv llm "$(opts "http://127.0.0.1:$MPORT/v1")"
pipeline tls.yaml in.csv llm "$(opts "https://localhost:$TPORT/v1")"

run plain plain.yaml --max-rows-in-flight 64
is "plain HTTP run succeeds" test "$RC" = 0

# Without the test CA every call fails on the certificate (the rows go to
# on_error): the verification is real.
SSL_CERT_FILE=/dev/null run untrusted tls.yaml --max-rows-in-flight 64
is "an untrusted certificate fails every call" test "$(nlines untrusted/errors.jsonl)" = 400
is "the error names the certificate" grep -qi 'cert' untrusted/errors.jsonl

: > access.log
SSL_CERT_FILE=$PWD/ca.pem run tls tls.yaml --max-rows-in-flight 64
is "TLS + HTTP/2 run succeeds (rc $RC)" test "$RC" = 0
is "sinks identical to plain HTTP" cmp -s plain/out.jsonl tls/out.jsonl
is "no errors over TLS" test "$(nlines tls/errors.jsonl)" = 0
is "400 answers over TLS" test "$(nlines tls/out.jsonl)" = 400
is "calls: every one ok" test "$(calls tls ok)" = "$(calls plain ok)"
is "the TLS run's audit trail verifies" verify_ok tls

sleep 0.3 # nghttpx writes its access log as streams close
conns=$(awk '{print $1}' access.log | sort -u | wc -l)
proto=$(awk '{print $2}' access.log | sort -u | tr '\n' ' ')
reqs=$(wc -l < access.log)
echo "# $reqs requests over $conns connection(s), ALPN: $proto"
is "400 requests reached nghttpx" test "$reqs" -ge 400
is "HTTP/2 was negotiated (ALPN $proto)" grep -q '^h2 \?$' <<<"$proto"
is "64 rows in flight share at most 4 connections ($conns)" test "$conns" -le 4

kill "$NGPID" 2>/dev/null
stop_mock
finish
