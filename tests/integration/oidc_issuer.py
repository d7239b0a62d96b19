"""A test OpenID Connect issuer for test_serve_oidc.sh: serves its
discovery document and JWKS over HTTP on loopback, counts the requests,
and mints RS256 tokens signed with openssl (the keys are files made by
openssl genrsa). Python's standard library only.

  oidc_issuer.py serve PORTFILE KEYS_DIR      (keys: good.pem, as kid "k1")
  oidc_issuer.py mint KEY.pem KID CLAIMS_JSON [ALG]   -> the token on stdout
"""
import base64, http.server, json, os, subprocess, sys, threading


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwk(pem, kid):
    out = subprocess.run(["openssl", "rsa", "-in", pem, "-noout", "-modulus"],
                         check=True, capture_output=True, text=True).stdout
    n = bytes.fromhex(out.strip().split("=", 1)[1])
    return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
            "n": b64(n), "e": b64((65537).to_bytes(3, "big"))}


def mint(pem, kid, claims, alg="RS256"):
    head = {"alg": alg, "typ": "JWT"}
    if kid:
        head["kid"] = kid
    signing = b64(json.dumps(head).encode()) + "." + b64(json.dumps(claims).encode())
    if alg == "none":
        return signing + "."
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", pem],
                         input=signing.encode(), check=True, capture_output=True).stdout
    return signing + "." + b64(sig)


def serve(portfile, keys):
    hits = {"discovery": 0, "jwks": 0}

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            base = "http://127.0.0.1:%d" % self.server.server_port
            if self.path == "/.well-known/openid-configuration":
                hits["discovery"] += 1
                body = {"issuer": base, "jwks_uri": base + "/jwks"}
            elif self.path == "/jwks":
                hits["jwks"] += 1
                body = {"keys": [jwk(os.path.join(keys, "good.pem"), "k1")]}
            elif self.path == "/hits":
                body = hits
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_port))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        print(mint(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]),
                   sys.argv[5] if len(sys.argv) > 5 else "RS256"))
