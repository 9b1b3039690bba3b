// classify_source: the scanner's evidence, then the suggestion policy.
#include "tpulaunch/classifier.hpp"

#include <spdlog/spdlog.h>

#include "class_suggestion.hpp"
#include "scanner.hpp"
#include "tpulaunch/source_encoding.hpp"

namespace tpulaunch {

Classification classify_source(std::string_view source) {
  // A script that declares Latin-1 or cp1252 (PEP 263) is read as the text Python reads.
  const std::optional<std::string> decoded = decode_python_source(source);
  scan::Scanner scanner(decoded ? std::string_view(*decoded) : source);
  Classification out = scanner.run();
  suggest(out);
  return out;
}

void log_classification(std::string_view path, const Classification& classification) {
  const std::size_t n = classification.evidence.size();
  spdlog::debug("classified {}: {} evidence row{}, suggests {}", path, n, n == 1 ? "" : "s",
                classification.suggested ? to_string(*classification.suggested) : std::string_view("no class"));
}

} // namespace tpulaunch
