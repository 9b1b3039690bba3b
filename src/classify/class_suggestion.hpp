#pragma once
// The suggestion policy of the classifier (internal): fills `suggested`, `why` and
// `contradictions` of a Classification from its evidence and lex error.
#include "tpulaunch/classify/classifier.hpp"

namespace tpulaunch {

// Suggests a class for `classification` (or none, with the reason in `why`).
void suggest(Classification& classification);

} // namespace tpulaunch
