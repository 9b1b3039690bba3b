#include "tpulaunch/plan/digest.hpp"

#include <fmt/format.h>

#include "tpulaunch/util/sha256.hpp"

namespace tpulaunch {

DigestWriter::DigestWriter(std::string_view form) : m_text(std::string(form) + "\n") {}

void DigestWriter::add(std::string_view key, std::string_view value) {
  m_text += fmt::format("{} {}:{}\n", key, value.size(), value);
}

std::string DigestWriter::sha256() const { return sha256_hex(m_text); }

} // namespace tpulaunch
