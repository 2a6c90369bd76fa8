// Catalog: the GPU classes an endpoint may run on. The default catalog ships
// inside the binary (data/gpu_catalog.yaml); users bring their own file of the
// same shape. Parsing is pure: callers read files and pass the text.
//
// Example:
//   absl::StatusOr<Catalog> catalog = Catalog::Default();
//   absl::StatusOr<const GpuClass*> h100 = catalog->Get("h100-80gb-sxm");
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/model/gpu_class.h"

namespace pilotlight::model {

class Catalog {
 public:
  // Parses and validates a catalog document (see data/gpu_catalog.yaml for
  // the shape). `origin` names the text in errors (a path, "<default>").
  // Every error names the entry, the field, the value and the allowed range.
  static absl::StatusOr<Catalog> FromYaml(absl::string_view yaml,
                                          absl::string_view origin);

  // The catalog compiled into the binary.
  static absl::StatusOr<Catalog> Default();

  // A catalog of explicit classes (validated like a parsed one).
  static absl::StatusOr<Catalog> FromClasses(std::vector<GpuClass> classes);

  const std::vector<GpuClass>& classes() const { return classes_; }

  // This catalog with `extra`'s classes added, each replacing a class of
  // the same name (a measurement set's consumer cards over the built-in
  // catalog, say).
  Catalog WithClasses(const Catalog& extra) const;

  // nullptr when absent.
  const GpuClass* Find(absl::string_view name) const;

  // NotFound listing the known names when absent.
  absl::StatusOr<const GpuClass*> Get(absl::string_view name) const;

  // "a100-40gb, a100-80gb, ..." in catalog order.
  std::string Names() const;

 private:
  explicit Catalog(std::vector<GpuClass> classes)
      : classes_(std::move(classes)) {}

  std::vector<GpuClass> classes_;
};

// The embedded default catalog text (generated from data/gpu_catalog.yaml).
absl::string_view DefaultCatalogYaml();

// Checks one class's figures; the error names `where`, the field and range.
absl::Status ValidateGpuClass(const GpuClass& c, absl::string_view where);

}  // namespace pilotlight::model
