// LoopbackKubelet: the one part of the local test cluster that stands in
// for a real node. It serves the Nodes labelled for it (tests/cluster/up
// creates them next to kwok's fake GPU pools): keeps them Ready (a Lease in
// kube-node-lease renewed every 10 s, the Ready condition), and runs every
// pod the real kube-scheduler binds to them as one real
// pilotlight-model-server process on the pod's own loopback address
// (127.X.Y.Z), after a cold-start delay. It reports what really happened
// and when: Pending/ContainerCreating during the delay, Running with the
// pod IP once the process starts, Ready once /health answers; the pod
// condition times are the real times (the operator learns cold starts from
// them). A deleted pod's process is killed and the pod removed (there is no
// real runtime to finish it); a process that dies is restarted and counted
// in restartCount.
//
// A pod whose image is `pilotlight` (any registry, any tag) runs the
// pilotlight binary instead, as a real kubelet would run the image: the
// container's args with $(VAR) expanded, its env (literal values and the
// downward API's fieldRefs), KUBERNETES_SERVICE_HOST/PORT, a service-account
// token from the TokenRequest API (bound to the pod, refreshed) with the
// cluster CA bind-mounted at /var/run/secrets/kubernetes.io/serviceaccount
// in a mount namespace of its own, and its securityContext's user, group
// and read-only root filesystem. It starts at once (no model to load), is
// Ready when its readinessProbe's httpGet answers (probed for as long as it
// runs), and on deletion gets SIGTERM and its grace period before SIGKILL.
// This needs root (mount namespaces).
//
// The container's args are passed to the model server (e.g. --model
// llama-3.1-8b --gpu l4), followed by --address <pod IP> --port <first
// containerPort, default 8000>. The pod annotation
// pilotlight.dev/cold-start-seconds overrides the delay.
#pragma once

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/kube/kube_config.h"

namespace pilotlight::tools {

struct LoopbackKubeletOptions {
  kube::KubeConfig kube;
  // Label selector of the Nodes this kubelet serves.
  std::string node_selector = "pilotlight.dev/loopback=true";
  std::string model_server;  // path to pilotlight-model-server
  std::string pilotlight;    // path to pilotlight, for pilotlight images
  std::string state_dir;     // pilotlight pods' service-account files
  std::string api_host;      // KUBERNETES_SERVICE_HOST/PORT for them
  int api_port = 0;
  absl::Duration cold_start = absl::Seconds(3);
  std::string log_dir;       // one log file per model-server process
  int ip_second_octet = 77;  // pods get 127.<this>.Y.Z
  absl::Duration heartbeat = absl::Seconds(10);
};

// Runs until `stop` becomes true, then kills every process it started.
// Returns an error only for what cannot be retried (bad options); API
// server errors are logged and retried.
absl::Status RunLoopbackKubelet(const LoopbackKubeletOptions& options,
                                const std::atomic<bool>& stop);

}  // namespace pilotlight::tools
