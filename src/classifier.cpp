// classify_source: the scanner's evidence, then the suggestion policy.
#include "tpulaunch/classifier.hpp"

#include "class_suggestion.hpp"
#include "scanner.hpp"

namespace tpulaunch {

Classification classify_source(std::string_view source) {
  scan::Scanner scanner(source);
  Classification out = scanner.run();
  suggest(out);
  return out;
}

} // namespace tpulaunch
