# Sourced by tests/cluster/up: prints the GPU node pools as Node objects for
# kwok to keep Ready. Two GPU classes, each an on-demand and a spot pool of
# NODES_PER_POOL nodes over three zones, with the labels real clusters use
# (Karpenter, NVIDIA GPU feature discovery, topology) and the taint spot
# nodes commonly carry.
NODES_PER_POOL=${NODES_PER_POOL:-2}

# gpu_nodes [loopback]: with "loopback", one node per pool for the loopback
# kubelet instead (named loopback-CLASS-CAP, no kwok annotation, labelled
# pilotlight.dev/loopback=true and tainted so only pods that tolerate it,
# the ones meant to run real model servers, land there).
gpu_nodes() {
  local pool class instance product gpus cap i zone name node_spec
  local mode=${1:-kwok} count=$NODES_PER_POOL prefix=gpu annotations taints
  if [ "$mode" = loopback ]; then
    count=1
    prefix=loopback
  fi
  local pools=("l4 g6.xlarge NVIDIA-L4 1" "a100-80gb p4de.24xlarge NVIDIA-A100-SXM4-80GB 8")
  if [ "$mode" = loopback ]; then  # one node a pool: room for 8 replicas
    pools[0]="l4 g6.48xlarge NVIDIA-L4 8"
  fi
  for pool in "${pools[@]}"; do
    read -r class instance product gpus <<<"$pool"
    for cap in on-demand spot; do
      for ((i = 0; i < count; i++)); do
        zone=us-east-1$(printf '%s' abc | cut -c$((i % 3 + 1)))
        name=$prefix-$class-$cap-$i
        annotations="{kwok.x-k8s.io/node: fake}"
        taints=()
        if [ "$mode" = loopback ]; then
          annotations="{}"
          taints+=("{key: pilotlight.dev/loopback, value: \"true\", effect: NoSchedule}")
        fi
        if [ "$cap" = spot ]; then
          taints+=("{key: karpenter.sh/capacity-type, value: spot, effect: NoSchedule}")
        fi
        node_spec="spec: {taints: [$(IFS=,; echo "${taints[*]}")]}"
        cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations: $annotations
  labels:
    type: $mode
    pilotlight.dev/loopback: "$([ "$mode" = loopback ] && echo true || echo false)"
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: $instance
    nvidia.com/gpu.product: $product
    nvidia.com/gpu.count: "$gpus"
    karpenter.sh/capacity-type: $cap
    topology.kubernetes.io/zone: $zone
    pilotlight.dev/gpu-class: $class
$node_spec
status:
  allocatable: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "$gpus"}
  capacity: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "$gpus"}
NODE
      done
    done
  done
}
