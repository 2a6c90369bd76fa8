# Writes OUTPUT, a C++ file defining pilotlight::model::DefaultCatalogYaml()
# that returns the text of INPUT. Run with cmake -P.
file(READ ${INPUT} PILOTLIGHT_TEXT)
set(DELIM "pl_embed")
string(FIND "${PILOTLIGHT_TEXT}" ")${DELIM}" CLASH)
if(NOT CLASH EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter")
endif()
file(WRITE ${OUTPUT}
"// Generated from ${INPUT} by cmake/embed_text.cmake. Do not edit.
#include \"controller/model/catalog.h\"

namespace pilotlight::model {

absl::string_view DefaultCatalogYaml() {
  static constexpr absl::string_view kText = R\"${DELIM}(${PILOTLIGHT_TEXT})${DELIM}\";
  return kText;
}

}  // namespace pilotlight::model
")
