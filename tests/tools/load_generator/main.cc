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
  absl::StatusOr<pilotlight::cmd::ParsedFlags> f = pilotlight::cmd::ParseFlags(
      std::vector<std::string>(argv + 1, argv + argc), specs);
  if (!f.ok() || f->Bool("help")) {
    (f.ok() ? std::cout : std::cerr)
        << (f.ok() ? "" : std::string(f.status().message()) + "\n")
        << "usage: pilotlight-load [flags]\n"
        << pilotlight::cmd::FlagsHelp(specs);
    return f.ok() ? 0 : 2;
  }
  const char* env = std::getenv("KUBECONFIG");
  auto kube = pilotlight::kube::KubeConfigFromFile(
      f->String("kubeconfig").value_or(env != nullptr ? env : ""));
  if (!kube.ok()) {
    std::cerr << "pilotlight-load: " << kube.status().message() << "\n";
    return 2;
  }
  pilotlight::tools::LoadOptions o;
  o.kube = *kube;
  o.ns = f->String("namespace").value_or("demo");
  o.selector = f->String("selector").value_or("app=chat");
  absl::Duration duration = absl::Seconds(60);
  for (const absl::Status& st :
       {pilotlight::cmd::Set(f->Int("concurrency"), o.concurrency),
        pilotlight::cmd::Set(f->Int("max-tokens"), o.max_tokens),
        pilotlight::cmd::Set(f->Duration("duration"), duration)}) {
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
