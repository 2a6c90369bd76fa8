#include "controller/runtime/gpu_class_cache.h"

#include "absl/strings/str_cat.h"

namespace pilotlight::runtime {

std::shared_ptr<const GpuClassSet> GpuClassCache::Get() {
  const int64_t gen = generation_.load();
  const std::lock_guard<std::mutex> lock(mu_);
  if (!set_ || set_->generation != gen) {
    auto set = std::make_shared<GpuClassSet>();
    set->generation = gen;
    objects_.ForEach([&](const nlohmann::json& c) {
      absl::StatusOr<api::GpuClassResource> r = api::ParseGpuClass(c);
      if (r.ok()) {
        set->classes.emplace(r->gpu.name, *r);
      } else {
        absl::StrAppend(&set->errors, "GPUClass ", kube::ObjectKey(c), ": ",
                        r.status().message(), "; ");
      }
    });
    set_ = std::move(set);
  }
  return set_;
}

}  // namespace pilotlight::runtime
