# Sourced by tests/cluster/up: runtime_nodes N starts N nodes that run their
# pods for real -- the kubelet built from the Kubernetes module, each on a
# containerd of its own (Debian's, with Debian's runc), images imported from
# OCI archives (no registry is reached), pods in the host's network
# namespace only. Node i is named and addressed 127.<octet>.255.<i>: an
# address of the cluster's own loopback /16 that the loopback kubelet hands
# out last, so pods that listen on their pod IP (the chart's bindPodIP) keep
# off every other address. Labelled pilotlight.dev/runtime=containerd and
# tainted the same (NoSchedule): only pods that mean to land there do.
#
# Uses up's DIR, BIN, P, API_URL, IP_OCTET, start, running, wait_for, fail,
# log and free_port. tests/cluster/down stops them: the kubelets, then every
# container through its containerd, then containerd; it fails when a shim,
# a container's process or a mount is left behind.
#
# Images: the pause image tests/cluster/build made, and each archive named
# in PILOTLIGHT_IMAGES (colon-separated; scripts/image --archive writes the
# pilotlight image's).
#
# Why the kubelet runs with these settings (docs/test-cluster.md):
# failCgroupV1: false, because Kubernetes 1.35+ refuses cgroup v1 hosts
# otherwise (this kind of machine is one); cgroupsPerQOS off, eviction and
# image garbage collection off, every path under the node's directory.

runtime_nodes() {  # runtime_nodes N
  local n=$1 i ip d missing=() images=() img
  [ "$n" -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || fail runtime-nodes "needs root (containerd, runc, mounts)"
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
  if [ ${#missing[@]} -gt 0 ]; then
    log "runtime nodes need ${missing[*]}: run scripts/deps"
    exit 1
  fi
  [ -x "$BIN/kubelet" ] && [ -f "$BIN/pause-image.tar" ] ||
    fail runtime-nodes "no kubelet or pause image in $BIN: run tests/cluster/build"
  PAUSE_IMAGE=$(cat "$BIN/pause-image.ref")
  mapfile -t images < <(runtime_images)
  for img in "${images[@]}"; do
    [ -f "$img" ] || { log "PILOTLIGHT_IMAGES names $img, which is missing"; exit 1; }
  done
  : >"$DIR/run/runtime-nodes"
  runtime_images_signature "${images[@]}" >"$DIR/run/runtime-images"
  for ((i = 1; i <= n; i++)); do
    ip=127.$IP_OCTET.255.$i
    d=$DIR/runtime/$i
    mkdir -p "$d/cni" "$d/kubelet" "$d/pod-logs" "$d/volume-plugins"
    runtime_node_files "$ip" "$d"
    start "containerd-$i" containerd --config "$d/containerd.toml"
    wait_for "containerd-$i" 30 ctr -a "$d/containerd.sock" version
    for img in "${images[@]}"; do
      ctr -a "$d/containerd.sock" -n k8s.io images import "$img" \
        >>"$DIR/logs/containerd-$i.log" 2>&1 ||
        fail "containerd-$i" "importing $img failed"
    done
    start "kubelet-$i" "$BIN/kubelet" --config="$d/kubelet.yaml" \
      --kubeconfig="$d/kubeconfig" --hostname-override="$ip" \
      --root-dir="$d/kubelet" --cert-dir="$d/pki" \
      --node-labels=pilotlight.dev/runtime=containerd
    echo "$ip" >>"$DIR/run/runtime-nodes"
  done
  ready_runtime() {
    [ "$(KUBECONFIG=$KUBECONFIG_PATH kubectl get nodes -l pilotlight.dev/runtime=containerd \
      --no-headers 2>/dev/null | grep -c ' Ready ')" -ge "$n" ]
  }
  wait_for kubelet-1 90 ready_runtime
  log "$n runtime nodes Ready (kubelet $(cat "$BIN/kubelet.version"), containerd" \
    "$(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'))" \
    "with ${#images[@]} images"
}

# runtime_images: the archives the nodes import, one a line -- the pause
# image, then each named in PILOTLIGHT_IMAGES.
runtime_images() {
  local more=()
  echo "$BIN/pause-image.tar"
  [ -z "${PILOTLIGHT_IMAGES:-}" ] || IFS=: read -r -a more <<<"$PILOTLIGHT_IMAGES"
  [ ${#more[@]} -eq 0 ] || printf '%s\n' "${more[@]}"
}

# runtime_images_signature ARCHIVE...: what up compares before it reuses a
# running cluster's runtime nodes (a rebuilt image is imported again).
runtime_images_signature() {
  local f
  for f in "$@"; do stat -c '%n %s %Y' "$f"; done
}

runtime_node_files() {  # runtime_node_files IP DIR: certificate, kubeconfig, configs
  local ip=$1 d=$2
  if [ ! -f "$d/node.crt" ]; then
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:$ip" \
      -keyout "$d/node.key" -out "$d/node.csr" 2>/dev/null
    openssl x509 -req -in "$d/node.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" \
      -CAcreateserial -days 30 -out "$d/node.crt" 2>/dev/null
  fi
  cat >"$d/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: pilotlight-test
  cluster: {server: "$API_URL", certificate-authority: "$P/ca.crt"}
users:
- name: node
  user: {client-certificate: "$d/node.crt", client-key: "$d/node.key"}
contexts:
- name: pilotlight-test
  context: {cluster: pilotlight-test, user: node}
current-context: pilotlight-test
KC
  # Pods use the host network; the CRI still wants a network config before
  # it reports the network ready, so it gets one that only brings up lo.
  printf '%s\n' '{"cniVersion": "0.4.0", "name": "loopback-only", "plugins": [{"type": "loopback"}]}' \
    >"$d/cni/10-loopback.conflist"
  cat >"$d/containerd.toml" <<TOML
version = 2
root = "$d/containerd"
state = "$d/state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "$ip"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
TOML
  cat >"$d/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $(free_port)
readOnlyPort: 0
healthzBindAddress: $ip
healthzPort: $(free_port)
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$d/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
evictionHard: {}
imageGCHighThresholdPercent: 100
podLogsDir: $d/pod-logs
volumePluginDir: $d/volume-plugins
registerWithTaints:
- {key: pilotlight.dev/runtime, value: containerd, effect: NoSchedule}
YAML
}
