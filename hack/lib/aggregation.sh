# shellcheck shell=bash
# The kube-apiserver's aggregation layer, shared by both cluster scripts: a front-proxy CA and the client
# certificate the apiserver presents when it proxies a request to an aggregated API server (our PackageManifest
# server, an operator's APIService), plus the flags that turn it on. Aggregated servers read the CA and the
# allowed names from kube-system/extension-apiserver-authentication, which the apiserver publishes from these flags.
#
#   aggregation_certs DIR     create (once) DIR/front-proxy-ca.{crt,key} and DIR/front-proxy-client.{crt,key}
#   aggregation_flags DIR     print the kube-apiserver flags, one per line
#
# --enable-aggregator-routing=true makes the apiserver dial an APIService's endpoint addresses instead of its
# Service IP: neither local cluster runs kube-proxy.

aggregation_certs() {
  local dir=$1
  mkdir -p "$dir"
  [ -f "$dir/front-proxy-client.crt" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=olm-rs-front-proxy-ca" \
    -keyout "$dir/front-proxy-ca.key" -out "$dir/front-proxy-ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" \
    -keyout "$dir/front-proxy-client.key" -out "$dir/front-proxy-client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' > "$dir/front-proxy-client.ext"
  openssl x509 -req -in "$dir/front-proxy-client.csr" -CA "$dir/front-proxy-ca.crt" -CAkey "$dir/front-proxy-ca.key" \
    -CAcreateserial -days 3650 -extfile "$dir/front-proxy-client.ext" -out "$dir/front-proxy-client.crt" 2>/dev/null
  rm -f "$dir/front-proxy-client.csr" "$dir/front-proxy-client.ext"
}

aggregation_flags() {
  local dir=$1
  printf '%s\n' \
    "--requestheader-client-ca-file=$dir/front-proxy-ca.crt" \
    "--requestheader-allowed-names=front-proxy-client" \
    "--requestheader-username-headers=X-Remote-User" \
    "--requestheader-group-headers=X-Remote-Group" \
    "--requestheader-extra-headers-prefix=X-Remote-Extra-" \
    "--proxy-client-cert-file=$dir/front-proxy-client.crt" \
    "--proxy-client-key-file=$dir/front-proxy-client.key" \
    "--enable-aggregator-routing=true"
}
