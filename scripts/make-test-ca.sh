#!/usr/bin/env bash
# Makes a throw-away certificate authority and a server certificate it signs, for test webhook
# receivers on this machine (D16: the service verifies certificates as usual; tests make it trust
# this CA through NODE_EXTRA_CA_CERTS or an explicit CA).
# Usage: scripts/make-test-ca.sh <dir>  ->  <dir>/ca.pem, <dir>/server-key.pem, <dir>/server.pem
set -euo pipefail
dir=${1:?usage: make-test-ca.sh <dir>}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Creator Income Verification test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
  -keyout ca-key.pem -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server-key.pem -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile server.ext -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
