# Writes a C++ source that defines `std::string_view NAMESPACE::FUNCTION()` returning the bytes of
# INPUT, as a raw string literal. Run as: cmake -DINPUT=... -DOUTPUT=... -DFUNCTION=... -P embed_file.cmake
# The delimiter cannot occur in JSON text outside a string, and we check it does not occur at all.
file(READ "${INPUT}" content)
set(delimiter "tpl_embed")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_file.cmake. Do not edit.\n"
  "#include <string_view>\n"
  "namespace tpulaunch {\n"
  "std::string_view ${FUNCTION}() {\n"
  "  static constexpr std::string_view k_text = R\"${delimiter}(${content})${delimiter}\";\n"
  "  return k_text;\n"
  "}\n"
  "} // namespace tpulaunch\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
