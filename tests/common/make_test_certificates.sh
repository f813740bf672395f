#!/usr/bin/env bash
# Makes throw-away TLS material for tests in DIR with Debian's openssl:
#   ca.pem ca.key                 the test CA
#   server.pem server.key         hpcai500d's certificate: localhost, 127.0.0.1
#   node-a.pem node-a.key         an agent's client certificate for node-a
#   other-ca.pem other-ca.key     a second CA, unrelated to the first
#   other-node-a.pem .key         a node-a client certificate from other-ca
# Usage: make_test_certificates.sh DIR (made if missing). Valid for 2 days.
set -euo pipefail
DIR="$1"
mkdir -p "$DIR"
cd "$DIR"

# NAME SUBJECT: a self-signed CA.
make_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2"
}

# NAME CA CN EXTENSIONS: a leaf certificate signed by CA.
make_leaf() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.csr" -subj "/CN=$3"
  printf 'basicConstraints=CA:FALSE\n%s\n' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days 2 -extfile "$1.ext" \
    -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}

make_ca ca "hpcai500 test CA"
make_ca other-ca "unrelated test CA"
make_leaf server ca localhost \
  $'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth'
make_leaf node-a ca "hpcai500 agent" \
  $'subjectAltName=DNS:node-a\nextendedKeyUsage=clientAuth'
make_leaf other-node-a other-ca node-a \
  $'subjectAltName=DNS:node-a\nextendedKeyUsage=clientAuth'
