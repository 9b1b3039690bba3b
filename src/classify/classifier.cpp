// classify_source: the scanner's evidence, then the suggestion policy.
#include "tpulaunch/classify/classifier.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "classify/class_suggestion.hpp"
#include "classify/scanner.hpp"
#include "tpulaunch/classify/source_encoding.hpp"

namespace tpulaunch {

Classification scan_source(std::string_view source, const ConstantLookup& lookup) {
  // A script that declares Latin-1 or cp1252 (PEP 263) is read as the text Python reads.
  const std::optional<std::string> decoded = decode_python_source(source);
  scan::Scanner scanner(decoded ? std::string_view(*decoded) : source, lookup ? &lookup : nullptr);
  return scanner.run();
}

Classification classify_source(std::string_view source) {
  Classification out = scan_source(source);
  suggest(out);
  return out;
}

void suggest_class(Classification& classification) {
  classification.suggested.reset();
  classification.why.clear();
  classification.contradictions.clear();
  suggest(classification);
}

std::string evidence_place(const Evidence& evidence) {
  return evidence.file.empty() ? fmt::format("line {}", evidence.line)
                               : fmt::format("{} line {}", evidence.file, evidence.line);
}

void log_classification(std::string_view path, const Classification& classification) {
  const std::size_t n = classification.evidence.size();
  spdlog::debug("classified {}: {} evidence row{}, suggests {}", path, n, n == 1 ? "" : "s",
                classification.suggested ? to_string(*classification.suggested) : std::string_view("no class"));
}

} // namespace tpulaunch
