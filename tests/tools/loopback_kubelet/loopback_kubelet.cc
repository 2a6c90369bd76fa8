#include "tests/tools/loopback_kubelet/loopback_kubelet.h"

#include <fcntl.h>
#include <grp.h>
#include <httplib.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace pilotlight::tools {
namespace {

using json = nlohmann::json;
using kube::KubeClient;

constexpr char kColdStartAnnotation[] = "pilotlight.dev/cold-start-seconds";
constexpr absl::Duration kRestartDelay = absl::Seconds(1);
constexpr absl::Duration kTick = absl::Milliseconds(100);

std::mutex log_mu;
void Log(absl::string_view what) {
  const std::lock_guard<std::mutex> lock(log_mu);
  std::cerr << absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone())
            << " loopback-kubelet: " << what << std::endl;
}

// metav1.Time: seconds. metav1.MicroTime (Lease renewTime): microseconds.
std::string Time(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}
std::string MicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

// How to start one container's process.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::optional<std::vector<std::string>> env;  // KEY=VALUE; unset: ours
  // In-cluster identity: this directory (token, ca.crt, namespace) is
  // bind-mounted at the service-account path in a mount namespace of the
  // process's own, as a kubelet mounts the projected volume.
  std::string service_account_dir;
  bool read_only_root = false;  // securityContext.readOnlyRootFilesystem
  int uid = -1, gid = -1;       // securityContext.runAsUser/runAsGroup
};

constexpr char kServiceAccountPath[] =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// Starts spec.argv[0] with stdout and stderr appended to `log_path`; the
// child is killed if this thread dies (PR_SET_PDEATHSIG), so no process
// outlives its kubelet. What cannot be set up in the child (a mount, the
// user) is written to the log and ends it with 126, as a runtime that
// cannot start a container reports it.
absl::StatusOr<pid_t> Spawn(const ProcessSpec& spec,
                            const std::string& log_path) {
  std::vector<char*> args;
  args.reserve(spec.argv.size() + 1);
  for (const std::string& a : spec.argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<char*> envp;
  if (spec.env) {
    for (const std::string& e : *spec.env) {
      envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);
  }
  if (!spec.service_account_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(kServiceAccountPath, ec);
  }
  const int fd =
      ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", log_path));
  }
  // Opened here, run from the descriptor: a process that gives up root
  // may not be able to walk the path to it (/root is 0700).
  const int exe = ::open(args[0], O_RDONLY | O_CLOEXEC);
  if (exe < 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot open ", spec.argv[0]));
  }
  const pid_t kubelet = ::getpid();  // the child's parent, while it lives
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls from here on
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    auto die = [](const char* what) {
      ::write(2, what, std::strlen(what));
      ::_exit(126);
    };
    if (!spec.service_account_dir.empty() || spec.read_only_root) {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        die("loopback-kubelet: no mount namespace (needs root)\n");
      }
      if (!spec.service_account_dir.empty() &&
          ::mount(spec.service_account_dir.c_str(), kServiceAccountPath,
                  nullptr, MS_BIND | MS_RDONLY, nullptr) != 0) {
        die("loopback-kubelet: cannot mount the service account\n");
      }
      if (spec.read_only_root &&
          ::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY,
                  nullptr) != 0) {
        die("loopback-kubelet: cannot make / read-only\n");
      }
    }
    if (spec.gid >= 0 && (::setgroups(0, nullptr) != 0 ||
                          ::setgid(static_cast<gid_t>(spec.gid)) != 0)) {
      die("loopback-kubelet: cannot set the group\n");
    }
    if (spec.uid >= 0 && ::setuid(static_cast<uid_t>(spec.uid)) != 0) {
      die("loopback-kubelet: cannot set the user\n");
    }
    if (::chdir("/") != 0) {
      die("loopback-kubelet: cannot chdir /\n");
    }
    // Set after the user and group: a change of credentials clears it (a
    // pod running as 65532 outlived its kubelet). If the kubelet died
    // before this, nobody is left to send it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != kubelet) {
      ::_exit(1);
    }
    ::fexecve(exe, args.data(), spec.env ? envp.data() : environ);
    ::_exit(127);
  }
  ::close(fd);
  ::close(exe);
  if (pid < 0) {
    return absl::InternalError("fork failed");
  }
  return pid;
}

// The image runs pilotlight itself (controller or activator) rather than a
// model server: its repository's last path element is `pilotlight`.
bool IsPilotlightImage(absl::string_view image) {
  image = image.substr(0, image.find('@'));
  const size_t slash = image.rfind('/');
  absl::string_view name =
      slash == absl::string_view::npos ? image : image.substr(slash + 1);
  name = name.substr(0, name.find(':'));
  return name == "pilotlight";
}

// $(VAR) in a container's args, as the kubelet expands them: a defined VAR
// is replaced, $$ is a literal $, anything else is left as written.
std::string ExpandVars(const std::string& in,
                       const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (in[i] == '$' && i + 1 < in.size() && in[i + 1] == '(') {
      const size_t close = in.find(')', i + 2);
      if (close != std::string::npos) {
        const auto it = env.find(in.substr(i + 2, close - i - 2));
        if (it != env.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += in[i];
  }
  return out;
}

// SIGTERM, then SIGKILL after two seconds; reaps the child.
void Kill(pid_t pid) {
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 20; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

json Condition(absl::string_view type, bool status, absl::Time since,
               absl::string_view reason = "") {
  json c = {{"type", type},
            {"status", status ? "True" : "False"},
            {"lastProbeTime", nullptr},
            {"lastTransitionTime", Time(since)}};
  if (!reason.empty()) {
    c["reason"] = reason;
  }
  return c;
}

// What this kubelet knows of one pod it runs.
struct LocalPod {
  std::string ns, name, uid;
  std::vector<std::string> args;  // the container's args
  std::string container = "model-server";
  std::string image;
  int port = 8000;
  // A pilotlight pod (IsPilotlightImage): run as in a cluster, with its
  // env, service account, security context and readiness probe.
  bool pilotlight = false;
  json pod;  // the pod as first seen (spec, metadata)
  std::string probe_path = "/health";
  int probe_port = 0;  // 0: `port`
  absl::Duration probe_period = absl::Seconds(10);
  absl::Time next_probe;
  absl::Time token_at;  // when its service-account token was written
  bool terminating = false;
  absl::Time kill_at;
  json scheduled;  // the scheduler's PodScheduled condition
  absl::Time seen;
  absl::Time start_after;
  absl::Time not_ready_since;
  pid_t pid = -1;
  std::string ip;
  absl::Time started;
  bool ready = false;
  absl::Time ready_at;
  int restarts = 0;
  int last_exit = 0;
  absl::Time last_exit_at;
  bool dirty = true;  // status to be written
};

class Kubelet {
 public:
  Kubelet(LoopbackKubeletOptions options, const std::atomic<bool>& stop)
      : options_(std::move(options)), stop_(stop) {}

  absl::Status Run();

 private:
  void Heartbeat();
  void WatchNode(const std::string& node);
  void Reconcile(const json& pod, absl::Time now, KubeClient& client);
  void Start(LocalPod& p, absl::Time now, KubeClient& client);
  absl::StatusOr<ProcessSpec> PilotlightProcess(LocalPod& p,
                                                KubeClient& client);
  absl::Status WriteServiceAccount(LocalPod& p, KubeClient& client);
  bool Terminate(LocalPod& p, const json& meta, absl::Time now);
  void Stop(LocalPod& p);
  json Status(const LocalPod& p) const;
  std::string AllocateIp();
  std::string SecretsDir(const LocalPod& p) const;
  bool Healthy(const LocalPod& p) const;

  LoopbackKubeletOptions options_;
  const std::atomic<bool>& stop_;

  std::mutex mu_;                     // guards nodes_, pods_, watch_clients_
  std::set<std::string> nodes_;       // the Nodes served
  std::map<std::string, json> pods_;  // uid -> latest pod on those nodes
  // The node watchers' clients, cancelled at shutdown so they can be
  // joined (a watch otherwise blocks until its server-side timeout).
  std::vector<KubeClient*> watch_clients_;

  // Main loop only.
  std::map<std::string, LocalPod> local_;  // uid -> process state
  std::set<std::string> used_ips_;
  int next_ip_ = 0;
  std::vector<std::thread> watchers_;
};

absl::Status Kubelet::Run() {
  absl::StatusOr<std::unique_ptr<KubeClient>> client =
      KubeClient::Create(options_.kube);
  if (!client.ok()) {
    return client.status();
  }
  std::thread heartbeat([this] { Heartbeat(); });
  while (!stop_.load()) {
    std::map<std::string, json> pods;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      pods = pods_;
    }
    const absl::Time now = absl::Now();
    for (auto it = local_.begin(); it != local_.end();) {
      if (pods.count(it->first) == 0) {  // deleted while we were not looking
        Log(absl::StrCat("pod ", it->second.ns, "/", it->second.name,
                         " is gone: stopping its model server"));
        Stop(it->second);
        it = local_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [uid, pod] : pods) {
      Reconcile(pod, now, **client);
    }
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(kTick));
  }
  for (auto& [uid, p] : local_) {
    Stop(p);
  }
  heartbeat.join();
  // Cancel the node watches and join their threads: they use this object
  // (ThreadSanitizer found detached ones still reading pods_ as it went).
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (KubeClient* c : watch_clients_) {
      c->Cancel();
    }
  }
  for (std::thread& t : watchers_) {
    t.join();
  }
  return absl::OkStatus();
}

void Kubelet::Reconcile(const json& pod, absl::Time now, KubeClient& client) {
  const json meta = pod.value("metadata", json::object());
  const json spec = pod.value("spec", json::object());
  const json status = pod.value("status", json::object());
  const std::string uid = meta.value("uid", "");
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  const std::string phase = status.value("phase", "");
  if (phase == "Succeeded" || phase == "Failed") {
    return;
  }
  auto it = local_.find(uid);
  if (meta.contains("deletionTimestamp")) {
    if (it != local_.end()) {
      if (!Terminate(it->second, meta, now)) {
        return;  // still within its grace period
      }
      Stop(it->second);
      local_.erase(it);
    }
    // No runtime is left to finish the pod: remove it now, this exact one.
    const json body = {{"gracePeriodSeconds", 0},
                       {"preconditions", {{"uid", uid}}}};
    absl::StatusOr<KubeClient::Response> r = client.Request(
        "DELETE", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name),
        body.dump());
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
      Log(absl::StrCat("delete ", ns, "/", name, ": ", r.status().message()));
    }
    return;
  }
  if (it == local_.end()) {
    LocalPod p;
    p.ns = ns;
    p.name = name;
    p.uid = uid;
    p.seen = now;
    p.not_ready_since = now;
    absl::Duration cold = options_.cold_start;
    const json ann = meta.value("annotations", json::object());
    if (ann.contains(kColdStartAnnotation)) {
      double s = 0;
      if (absl::SimpleAtod(ann.value(kColdStartAnnotation, ""), &s) && s >= 0) {
        cold = absl::Seconds(s);
      } else {
        Log(absl::StrCat(ns, "/", name, ": annotation ", kColdStartAnnotation,
                         " is not a number of seconds; using the default"));
      }
    }
    const json containers = spec.value("containers", json::array());
    const json c = containers.empty() ? json::object() : containers[0];
    p.container = c.value("name", p.container);
    p.image = c.value("image", "");
    p.pilotlight = IsPilotlightImage(p.image);
    p.pod = pod;
    if (p.pilotlight && !ann.contains(kColdStartAnnotation)) {
      cold = absl::ZeroDuration();  // no model to load
    }
    p.start_after = now + cold;
    for (const json& a : c.value("args", json::array())) {
      p.args.push_back(a.get<std::string>());
    }
    const json ports = c.value("ports", json::array());
    if (!ports.empty()) {
      p.port = ports[0].value("containerPort", p.port);
    }
    // readinessProbe.httpGet, its port a number or a named container port.
    const json probe = c.value("readinessProbe", json::object());
    if (probe.contains("httpGet")) {
      const json get = probe["httpGet"];
      p.probe_path = get.value("path", "/");
      const json port = get.value("port", json());
      if (port.is_number_integer()) {
        p.probe_port = port.get<int>();
      }
      for (const json& cp : ports) {
        if (port.is_string() &&
            cp.value("name", "") == port.get<std::string>()) {
          p.probe_port = cp.value("containerPort", 0);
        }
      }
      p.probe_period = absl::Seconds(probe.value("periodSeconds", 10));
    }
    for (const json& cond : status.value("conditions", json::array())) {
      if (cond.value("type", "") == "PodScheduled") {
        p.scheduled = cond;
      }
    }
    Log(absl::StrCat("pod ", ns, "/", name, " on ", spec.value("nodeName", ""),
                     ": cold start ", absl::FormatDuration(cold)));
    it = local_.emplace(uid, std::move(p)).first;
  }
  LocalPod& p = it->second;
  if (p.pid > 0) {
    int wstatus = 0;
    if (::waitpid(p.pid, &wstatus, WNOHANG) == p.pid) {
      p.last_exit =
          WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
      Log(absl::StrCat(ns, "/", name, ": model server exited (", p.last_exit,
                       "); restarting"));
      p.pid = -1;
      p.last_exit_at = now;
      ++p.restarts;
      if (p.ready) {
        p.not_ready_since = now;
      }
      p.ready = false;
      p.start_after = now + kRestartDelay;
      p.dirty = true;
    }
  }
  if (p.pid < 0 && now >= p.start_after) {
    Start(p, now, client);
  }
  if (p.pid > 0 && !p.ready && Healthy(p)) {
    p.ready = true;
    p.ready_at = absl::Now();
    p.next_probe = p.ready_at + p.probe_period;
    p.dirty = true;
    Log(absl::StrCat(ns, "/", name, ": ready at ", p.ip, ":", p.port, " after ",
                     absl::FormatDuration(p.ready_at - p.seen)));
  } else if (p.pilotlight && p.ready && now >= p.next_probe) {
    // Readiness is probed for as long as it runs (an activator draining
    // after SIGTERM, or a controller whose informers lost sync, goes
    // unready).
    p.next_probe = now + p.probe_period;
    if (!Healthy(p)) {
      p.ready = false;
      p.not_ready_since = now;
      p.dirty = true;
      Log(absl::StrCat(ns, "/", name, ": readiness probe failed"));
    }
  }
  if (p.pilotlight && p.pid > 0 &&
      now - p.token_at > absl::Minutes(48)) {  // 80% of its hour
    if (absl::Status st = WriteServiceAccount(p, client); !st.ok()) {
      Log(absl::StrCat(ns, "/", name, ": token refresh: ", st.message()));
    }
  }
  if (p.dirty) {
    const json patch = {{"status", Status(p)}};
    absl::StatusOr<KubeClient::Response> r = client.Request(
        "PATCH",
        absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name, "/status"),
        patch.dump(), "application/merge-patch+json");
    if (r.ok()) {
      p.dirty = false;
    } else {
      Log(absl::StrCat("status of ", ns, "/", name, ": ",
                       r.status().message()));
    }
  }
}

void Kubelet::Start(LocalPod& p, absl::Time now, KubeClient& client) {
  if (p.ip.empty()) {
    p.ip = AllocateIp();
  }
  ProcessSpec process;
  if (p.pilotlight) {
    absl::StatusOr<ProcessSpec> spec = PilotlightProcess(p, client);
    if (!spec.ok()) {
      Log(absl::StrCat(p.ns, "/", p.name, ": ", spec.status().message()));
      p.start_after = now + kRestartDelay;
      return;
    }
    process = *std::move(spec);
  } else {
    process.argv = {options_.model_server};
    process.argv.insert(process.argv.end(), p.args.begin(), p.args.end());
    for (const std::string& a :
         {std::string("--address"), p.ip, std::string("--port"),
          std::to_string(p.port)}) {
      process.argv.push_back(a);
    }
  }
  const std::vector<std::string>& argv = process.argv;
  const std::string log_path =
      absl::StrCat(options_.log_dir, "/", p.ns, "_", p.name, ".log");
  absl::StatusOr<pid_t> pid = Spawn(process, log_path);
  if (!pid.ok()) {
    Log(absl::StrCat(p.ns, "/", p.name, ": ", pid.status().message()));
    p.start_after = now + kRestartDelay;
    return;
  }
  p.pid = *pid;
  p.started = now;
  p.dirty = true;
  Log(absl::StrCat(p.ns, "/", p.name, ": started ", absl::StrJoin(argv, " "),
                   " (pid ", p.pid, ", log ", log_path, ")"));
}

void Kubelet::Stop(LocalPod& p) {
  if (p.pid > 0) {
    Kill(p.pid);
    p.pid = -1;
  }
  if (p.pilotlight) {
    std::error_code ec;
    std::filesystem::remove_all(SecretsDir(p), ec);
  }
  if (!p.ip.empty()) {
    used_ips_.erase(p.ip);
  }
}

bool Kubelet::Healthy(const LocalPod& p) const {
  httplib::Client http(p.ip, p.probe_port > 0 ? p.probe_port : p.port);
  http.set_connection_timeout(0, 100000);
  http.set_read_timeout(0, 500000);
  httplib::Result r = http.Get(p.probe_path);
  return r && r->status >= 200 && r->status < 400;
}

// A deleted pod's process: SIGTERM first, SIGKILL once its grace period
// (deletionGracePeriodSeconds, at most a minute) is over; true once it has
// exited. Model servers drain in it (they exit once nothing has run for
// 500 ms, so an idle one goes at once): a 2 s cap here used to cut the
// streams of a replica being scaled down, which pilotlight-replay caught
// (one stream of 3,628, 0.9 s after its pod's SIGTERM).
bool Kubelet::Terminate(LocalPod& p, const json& meta, absl::Time now) {
  if (p.pid <= 0) {
    return true;
  }
  if (!p.terminating) {
    p.terminating = true;
    const int grace = meta.value("deletionGracePeriodSeconds", 30);
    p.kill_at = now + absl::Seconds(std::clamp(grace, 0, 60));
    ::kill(p.pid, SIGTERM);
    Log(absl::StrCat(p.ns, "/", p.name, ": SIGTERM, ",
                     absl::FormatDuration(p.kill_at - now), " to exit"));
  }
  if (::waitpid(p.pid, nullptr, WNOHANG) == p.pid) {
    p.pid = -1;
    return true;
  }
  if (now >= p.kill_at) {
    ::kill(p.pid, SIGKILL);
    ::waitpid(p.pid, nullptr, 0);
    p.pid = -1;
    return true;
  }
  return false;
}

// The service account's token (TokenRequest, bound to the pod, one hour),
// the cluster CA and the namespace, in the pod's own directory that Spawn
// mounts at the service-account path.
absl::Status Kubelet::WriteServiceAccount(LocalPod& p, KubeClient& client) {
  const json spec = p.pod.value("spec", json::object());
  const std::string sa = spec.value("serviceAccountName", "default");
  const json request = {{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec",
                         {{"expirationSeconds", 3600},
                          {"boundObjectRef",
                           {{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"name", p.name},
                            {"uid", p.uid}}}}}};
  absl::StatusOr<KubeClient::Response> r =
      client.Request("POST",
                     absl::StrCat("/api/v1/namespaces/", p.ns,
                                  "/serviceaccounts/", sa, "/token"),
                     request.dump());
  if (!r.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "TokenRequest for service account ", sa, ": ", r.status().message()));
  }
  const json answer = json::parse(r->body, nullptr, false);
  const std::string token =
      answer.is_object()
          ? answer.value("status", json::object()).value("token", "")
          : "";
  if (token.empty()) {
    return absl::UnavailableError("TokenRequest answered no token");
  }
  const std::string dir = SecretsDir(p);
  std::filesystem::create_directories(dir);
  // Written aside and renamed, so a reader never sees half a token.
  for (const auto& [file, text] :
       std::vector<std::pair<std::string, std::string>>{
           {"token", token},
           {"ca.crt", options_.kube.ca_pem},
           {"namespace", p.ns}}) {
    const std::string tmp = absl::StrCat(dir, "/.", file);
    std::ofstream(tmp) << text;
    ::chmod(tmp.c_str(), 0644);
    std::filesystem::rename(tmp, absl::StrCat(dir, "/", file));
  }
  p.token_at = absl::Now();
  return absl::OkStatus();
}

// What the kubelet does for a pilotlight container: the downward-API and
// literal env, $(VAR) in its args, KUBERNETES_SERVICE_HOST/PORT, the
// service account, and its security context (user, group, read-only root).
absl::StatusOr<ProcessSpec> Kubelet::PilotlightProcess(LocalPod& p,
                                                       KubeClient& client) {
  if (options_.pilotlight.empty()) {
    return absl::FailedPreconditionError(
        "a pilotlight image, but no --pilotlight binary to run it");
  }
  const json spec = p.pod.value("spec", json::object());
  const json meta = p.pod.value("metadata", json::object());
  const json containers = spec.value("containers", json::array());
  const json c = containers.empty() ? json::object() : containers[0];
  const std::map<std::string, std::string> fields = {
      {"metadata.name", p.name},
      {"metadata.namespace", p.ns},
      {"metadata.uid", p.uid},
      {"spec.nodeName", spec.value("nodeName", "")},
      {"spec.serviceAccountName", spec.value("serviceAccountName", "default")},
      {"status.podIP", p.ip},
      {"status.hostIP", "127.0.0.1"}};
  std::map<std::string, std::string> env;
  for (const json& e : c.value("env", json::array())) {
    const std::string name = e.value("name", "");
    if (e.contains("value")) {
      env[name] = ExpandVars(e.value("value", ""), env);
    } else if (e.contains("valueFrom") && e["valueFrom"].contains("fieldRef")) {
      const std::string path =
          e["valueFrom"]["fieldRef"].value("fieldPath", "");
      const auto it = fields.find(path);
      if (it == fields.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("env ", name, ": fieldRef ", path, " not supported"));
      }
      env[name] = it->second;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("env ", name, ": only value and fieldRef supported"));
    }
  }
  ProcessSpec process;
  process.argv = {options_.pilotlight};
  for (const std::string& a : p.args) {
    process.argv.push_back(ExpandVars(a, env));
  }
  env["KUBERNETES_SERVICE_HOST"] = options_.api_host;
  env["KUBERNETES_SERVICE_PORT"] = std::to_string(options_.api_port);
  env.emplace("PATH", "/usr/local/bin:/usr/bin:/bin");
  env.emplace("HOSTNAME", p.name);
  process.env.emplace();
  for (const auto& [k, v] : env) {
    process.env->push_back(absl::StrCat(k, "=", v));
  }
  if (spec.value("automountServiceAccountToken", true)) {
    if (absl::Status st = WriteServiceAccount(p, client); !st.ok()) {
      return st;
    }
    process.service_account_dir = SecretsDir(p);
  }
  // The container's security context over the pod's.
  // (Named: items() of a temporary would iterate a destroyed object.)
  json sc = spec.value("securityContext", json::object());
  const json container_sc = c.value("securityContext", json::object());
  for (const auto& [k, v] : container_sc.items()) {
    sc[k] = v;
  }
  process.uid = sc.value("runAsUser", -1);
  process.gid = sc.value("runAsGroup", -1);
  process.read_only_root = sc.value("readOnlyRootFilesystem", false);
  if (sc.value("runAsNonRoot", false) && process.uid <= 0) {
    return absl::FailedPreconditionError(
        "runAsNonRoot without a non-zero runAsUser: the image's user is "
        "not known here");
  }
  return process;
}

std::string Kubelet::SecretsDir(const LocalPod& p) const {
  return absl::StrCat(options_.state_dir, "/", p.ns, "_", p.name, "_", p.uid);
}

std::string Kubelet::AllocateIp() {
  // 127.<octet>.Y.Z with Z in 1..254: a /16 of loopback addresses, every
  // one of which Linux routes to lo without configuration.
  for (int tries = 0; tries < 256 * 254; ++tries) {
    const int n = next_ip_++ % (256 * 254);
    std::string ip = absl::StrCat("127.", options_.ip_second_octet, ".",
                                  n / 254, ".", n % 254 + 1);
    if (used_ips_.insert(ip).second) {
      return ip;
    }
  }
  return "127.0.0.1";  // 65,024 pods on one kubelet: not a test we run
}

json Kubelet::Status(const LocalPod& p) const {
  const bool running = p.pid > 0;
  json scheduled = p.scheduled.is_object()
                       ? p.scheduled
                       : Condition("PodScheduled", true, p.seen);
  json conditions = json::array({
      Condition("PodReadyToStartContainers", true, p.seen),
      Condition("Initialized", true, p.seen),
      p.ready
          ? Condition("Ready", true, p.ready_at)
          : Condition("Ready", false, p.not_ready_since, "ContainersNotReady"),
      p.ready ? Condition("ContainersReady", true, p.ready_at)
              : Condition("ContainersReady", false, p.not_ready_since,
                          "ContainersNotReady"),
      scheduled,
  });
  json state;
  if (running) {
    state = {{"running", {{"startedAt", Time(p.started)}}}};
  } else {
    state = {{"waiting",
              {{"reason",
                p.restarts > 0 ? "CrashLoopBackOff" : "ContainerCreating"}}}};
  }
  json container = {
      {"name", p.container}, {"image", p.image},   {"imageID", ""},
      {"ready", p.ready},    {"started", running}, {"restartCount", p.restarts},
      {"state", state},
  };
  if (running) {
    container["containerID"] = absl::StrCat("loopback://", p.pid);
  }
  if (p.restarts > 0) {
    container["lastState"] = {{"terminated",
                               {{"exitCode", p.last_exit},
                                {"reason", "Error"},
                                {"finishedAt", Time(p.last_exit_at)}}}};
  }
  json status = {
      {"phase", running || p.restarts > 0 ? "Running" : "Pending"},
      {"conditions", conditions},
      {"hostIP", "127.0.0.1"},
      {"hostIPs", json::array({{{"ip", "127.0.0.1"}}})},
      {"startTime", Time(p.seen)},
      {"containerStatuses", json::array({container})},
  };
  if (!p.ip.empty()) {
    status["podIP"] = p.ip;
    status["podIPs"] = json::array({{{"ip", p.ip}}});
  }
  return status;
}

// Finds the Nodes to serve, starts a pod watch for each, and keeps them
// Ready: a Lease renewed and the Ready condition posted every heartbeat.
void Kubelet::Heartbeat() {
  absl::StatusOr<std::unique_ptr<KubeClient>> client =
      KubeClient::Create(options_.kube);
  if (!client.ok()) {
    Log(absl::StrCat("heartbeat: ", client.status().message()));
    return;
  }
  KubeClient& c = **client;
  const absl::Time since = absl::Now();
  absl::Time next = since;
  while (!stop_.load()) {
    if (absl::Now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    next = absl::Now() + options_.heartbeat;
    absl::StatusOr<KubeClient::Response> list = c.Request(
        "GET",
        absl::StrCat("/api/v1/nodes?labelSelector=", options_.node_selector),
        "");
    if (!list.ok()) {
      Log(absl::StrCat("list nodes: ", list.status().message()));
      next = absl::Now() + absl::Seconds(1);
      continue;
    }
    const json nodes = json::parse(list->body, nullptr, false);
    if (!nodes.is_object()) {
      Log("list nodes: the answer is not JSON");
      continue;
    }
    for (const json& node : nodes.value("items", json::array())) {
      const std::string name = node["metadata"].value("name", "");
      const std::string uid = node["metadata"].value("uid", "");
      bool is_new = false;
      {
        const std::lock_guard<std::mutex> lock(mu_);
        is_new = nodes_.insert(name).second;
      }
      if (is_new) {
        Log(absl::StrCat("serving node ", name));
        watchers_.emplace_back([this, name] { WatchNode(name); });
      }
      const absl::Time now = absl::Now();
      const json lease = {
          {"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata",
           {{"name", name},
            {"namespace", "kube-node-lease"},
            {"ownerReferences", json::array({{{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"name", name},
                                              {"uid", uid}}})}}},
          {"spec",
           {{"holderIdentity", name},
            {"leaseDurationSeconds", 40},
            {"renewTime", MicroTime(now)}}}};
      const std::string lease_path = absl::StrCat(
          "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/",
          name);
      absl::StatusOr<KubeClient::Response> r =
          c.Request("PATCH", lease_path, json{{"spec", lease["spec"]}}.dump(),
                    "application/merge-patch+json");
      if (!r.ok() && r.status().code() == absl::StatusCode::kNotFound) {
        r = c.Request(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
            lease.dump());
      }
      if (!r.ok()) {
        Log(absl::StrCat("lease of ", name, ": ", r.status().message()));
      }
      const json& labels = node["metadata"].value("labels", json::object());
      const std::string gpus = labels.value("nvidia.com/gpu.count", "8");
      const json capacity = {{"cpu", "96"},
                             {"memory", "1Ti"},
                             {"pods", "110"},
                             {"nvidia.com/gpu", gpus}};
      json conditions = json::array();
      for (const char* pressure :
           {"MemoryPressure", "DiskPressure", "PIDPressure"}) {
        conditions.push_back(
            {{"type", pressure},
             {"status", "False"},
             {"reason", absl::StrCat("KubeletHasNo", pressure)},
             {"lastHeartbeatTime", Time(now)},
             {"lastTransitionTime", Time(since)}});
      }
      conditions.push_back(
          {{"type", "Ready"},
           {"status", "True"},
           {"reason", "KubeletReady"},
           {"message", "loopback kubelet is posting ready status"},
           {"lastHeartbeatTime", Time(now)},
           {"lastTransitionTime", Time(since)}});
      const json status = {
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"conditions", conditions},
            {"addresses",
             json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                          {{"type", "Hostname"}, {"address", name}}})},
            {"nodeInfo",
             {{"kubeletVersion", "pilotlight-loopback"},
              {"containerRuntimeVersion", "loopback://1"},
              {"operatingSystem", "linux"},
              {"architecture", "amd64"}}}}}};
      r = c.Request("PATCH", absl::StrCat("/api/v1/nodes/", name, "/status"),
                    status.dump(), "application/merge-patch+json");
      if (!r.ok()) {
        Log(absl::StrCat("status of node ", name, ": ", r.status().message()));
      }
    }
  }
}

// List+watch of the pods bound to `node` (fieldSelector spec.nodeName, as a
// real kubelet does); relists after 410 Gone or any error, so a dropped
// watch loses no change.
void Kubelet::WatchNode(const std::string& node) {
  absl::StatusOr<std::unique_ptr<KubeClient>> client =
      KubeClient::Create(options_.kube);
  if (!client.ok()) {
    Log(absl::StrCat("watch ", node, ": ", client.status().message()));
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mu_);
    watch_clients_.push_back(client->get());
  }
  const std::string base =
      absl::StrCat("/api/v1/pods?fieldSelector=spec.nodeName%3D", node);
  while (!stop_.load()) {
    absl::StatusOr<KubeClient::Response> list =
        (*client)->Request("GET", base, "");
    if (!list.ok()) {
      Log(absl::StrCat("list pods on ", node, ": ", list.status().message()));
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    const json body = json::parse(list->body, nullptr, false);
    if (!body.is_object()) {
      Log(absl::StrCat("list pods on ", node, ": the answer is not JSON"));
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    std::string rv =
        body.value("metadata", json::object()).value("resourceVersion", "");
    {
      const std::lock_guard<std::mutex> lock(mu_);
      for (auto it = pods_.begin(); it != pods_.end();) {
        it = it->second["spec"].value("nodeName", "") == node ? pods_.erase(it)
                                                              : std::next(it);
      }
      for (const json& pod : body.value("items", json::array())) {
        pods_[pod["metadata"].value("uid", "")] = pod;
      }
    }
    absl::Status st = absl::OkStatus();
    while (st.ok() && !stop_.load()) {
      st = (*client)->Watch(
          absl::StrCat(base, "&watch=true&allowWatchBookmarks=true",
                       "&timeoutSeconds=60&resourceVersion=", rv),
          [&](kube::WatchEvent e) {
            rv = e.object["metadata"].value("resourceVersion", rv);
            if (e.type == "BOOKMARK") {
              return !stop_.load();
            }
            const std::string uid = e.object["metadata"].value("uid", "");
            const std::lock_guard<std::mutex> lock(mu_);
            if (e.type == "DELETED") {
              pods_.erase(uid);
            } else {
              pods_[uid] = std::move(e.object);
            }
            return !stop_.load();
          });
    }
    if (!stop_.load()) {
      Log(absl::StrCat("watch pods on ", node, ": ", st.message(),
                       "; relisting"));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  const std::lock_guard<std::mutex> lock(mu_);
  watch_clients_.erase(
      std::find(watch_clients_.begin(), watch_clients_.end(), client->get()));
}

}  // namespace

absl::Status RunLoopbackKubelet(const LoopbackKubeletOptions& options,
                                const std::atomic<bool>& stop) {
  if (::access(options.model_server.c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model-server ", options.model_server, " is not an executable"));
  }
  if (options.log_dir.empty()) {
    return absl::InvalidArgumentError("--log-dir is required");
  }
  Kubelet k(options, stop);
  return k.Run();
}

}  // namespace pilotlight::tools
