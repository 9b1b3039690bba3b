# Embeds the bytes of INPUT in a generated C++ file, as a raw string literal. Run as
#   cmake -DINPUT=... -DOUTPUT=... -DFUNCTION=name -P embed_file.cmake
#     a source that defines `std::string_view tpulaunch::name()` (the catalog: parsed at run time);
#   cmake -DINPUT=... -DOUTPUT=... -DVARIABLE=name -P embed_file.cmake
#     a header that defines `inline constexpr char tpulaunch::embedded::name[]`, a compile-time
#     constant, so a program for the remote side can be shell code (`Code`, shell.hpp).
#   -DINPUT="a;b;c" (a list) embeds the files one after another, as one program (the run guard is
#     five parts), and -DJOINED=FILE also writes that text to FILE, for the tools that check it.
# The delimiter cannot occur in JSON, bash or Python text outside a string, and we check it does
# not occur at all.
set(content "")
foreach(part IN LISTS INPUT)
  file(READ "${part}" part_content)
  string(APPEND content "${part_content}")
endforeach()
if(DEFINED JOINED)
  file(WRITE "${JOINED}.tmp" "${content}")
  file(RENAME "${JOINED}.tmp" "${JOINED}")
endif()
set(delimiter "tpl_embed")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delimiter}\"")
endif()
if(DEFINED VARIABLE)
  file(WRITE "${OUTPUT}.tmp"
    "// Generated from ${INPUT} by cmake/embed_file.cmake. Do not edit.\n"
    "#pragma once\n"
    "namespace tpulaunch::embedded {\n"
    "inline constexpr char ${VARIABLE}[] = R\"${delimiter}(${content})${delimiter}\";\n"
    "} // namespace tpulaunch::embedded\n")
else()
  file(WRITE "${OUTPUT}.tmp"
    "// Generated from ${INPUT} by cmake/embed_file.cmake. Do not edit.\n"
    "#include <string_view>\n"
    "namespace tpulaunch {\n"
    "std::string_view ${FUNCTION}() {\n"
    "  static constexpr std::string_view k_text = R\"${delimiter}(${content})${delimiter}\";\n"
    "  return k_text;\n"
    "}\n"
    "} // namespace tpulaunch\n")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
