// pilotlight-load: closed-loop load against an endpoint's model-server pods
// on the local test cluster (load_generator.h); prints one line a second.
#include <cstdlib>
#include <iostream>
#include <thread>

#include "absl/time/clock.h"
#include "controller/cmd/flags.h"
#include "tests/tools/load_generator/load_generator.h"

int main(int argc, char** argv) {
  using pilotlight::cmd::FlagSpec;
  const std::vector<FlagSpec> specs = {
      {"kubeconfig", false, "FILE", "kubeconfig (default $KUBECONFIG)"},
      {"namespace", false, "NS", "the pods' namespace (default demo)"},
      {"selector", false, "LABELS", "the pods' labels (default app=chat)"},
      {"concurrency", false, "N", "requests in flight (default 4)"},
      {"duration", false, "DURATION", "how long (default 60s)"},
      {"max-tokens", false, "N", "tokens per request (default 64)"},
      {"help", true, "", "show this help"},
  };
  pilotlight::cmd::ParsedFlags flags;
  if (std::optional<int> exit = pilotlight::cmd::ParseFlagsOrExit(
          std::vector<std::string>(argv + 1, argv + argc), specs,
          "usage: pilotlight-load [flags]\n", std::cout, std::cerr, flags)) {
    return *exit;
  }
  const char* env = std::getenv("KUBECONFIG");
  auto kube = pilotlight::kube::KubeConfigFromFile(
      flags.String("kubeconfig").value_or(env != nullptr ? env : ""));
  if (!kube.ok()) {
    std::cerr << "pilotlight-load: " << kube.status().message() << "\n";
    return 2;
  }
  pilotlight::tools::LoadOptions o;
  o.kube = *kube;
  o.ns = flags.String("namespace").value_or("demo");
  o.selector = flags.String("selector").value_or("app=chat");
  absl::Duration duration = absl::Seconds(60);
  for (const absl::Status& st :
       {pilotlight::cmd::Set(flags.Int("concurrency"), o.concurrency),
        pilotlight::cmd::Set(flags.Int("max-tokens"), o.max_tokens),
        pilotlight::cmd::Set(flags.Duration("duration"), duration)}) {
    if (!st.ok()) {
      std::cerr << st.message() << "\n";
      return 2;
    }
  }
  pilotlight::tools::LoadGenerator load(o);
  load.Start();
  const absl::Time end = absl::Now() + duration;
  for (int s = 1; absl::Now() < end; ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::cout << "load t=" << s << "s pods=" << load.pods()
              << " in-flight=" << load.in_flight()
              << " waiting=" << load.waiting() << " done=" << load.done()
              << " errors=" << load.errors() << std::endl;
  }
  load.Stop();
  return 0;
}
