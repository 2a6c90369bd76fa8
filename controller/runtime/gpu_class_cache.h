// GpuClassCache: the GPUClasses parsed once per change of any of them
// (a GPUClass event calls Changed()), shared by every reconcile until the
// next change. A GPUClass that does not parse is left out and named in
// `errors`, so an endpoint that names it says why it is missing.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "controller/api/resources.h"
#include "controller/kube/informer.h"

namespace pilotlight::runtime {

struct GpuClassSet {
  int64_t generation = 0;
  std::map<std::string, api::GpuClassResource> classes;
  std::string errors;  // of the GPUClasses that do not parse
};

class GpuClassCache {
 public:
  explicit GpuClassCache(const kube::ObjectCache& objects)
      : objects_(objects) {}
  void Changed() { ++generation_; }
  std::shared_ptr<const GpuClassSet> Get();

 private:
  const kube::ObjectCache& objects_;
  std::atomic<int64_t> generation_{1};
  std::mutex mu_;
  std::shared_ptr<const GpuClassSet> set_;
};

}  // namespace pilotlight::runtime
