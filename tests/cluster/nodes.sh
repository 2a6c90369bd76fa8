# Sourced by tests/cluster/up: prints the GPU node pools as Node objects for
# kwok to keep Ready. Two GPU classes, each an on-demand and a spot pool of
# NODES_PER_POOL nodes over three zones, with the labels real clusters use
# (Karpenter, NVIDIA GPU feature discovery, topology) and the taint spot
# nodes commonly carry.
NODES_PER_POOL=${NODES_PER_POOL:-2}

gpu_nodes() {
  local pool class instance product gpus cap i zone name node_spec
  for pool in "l4 g6.xlarge NVIDIA-L4 1" \
              "a100-80gb p4de.24xlarge NVIDIA-A100-SXM4-80GB 8"; do
    read -r class instance product gpus <<<"$pool"
    for cap in on-demand spot; do
      for ((i = 0; i < NODES_PER_POOL; i++)); do
        zone=us-east-1$(printf '%s' abc | cut -c$((i % 3 + 1)))
        name=gpu-$class-$cap-$i
        node_spec="spec: {}"
        if [ "$cap" = spot ]; then
          node_spec='spec: {taints: [{key: karpenter.sh/capacity-type, value: spot, effect: NoSchedule}]}'
        fi
        cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations: {kwok.x-k8s.io/node: fake}
  labels:
    type: kwok
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
