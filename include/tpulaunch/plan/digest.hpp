#pragma once
// The writer of a plan's digest, shared by every backend: a header line naming the form, then one
// line per value, "<key> <length>:<value>", so that no value can be read as another; the digest is
// the SHA-256 (lower-case hex) of that text. The TPU-VM plan's header is "tpulaunch-plan 1", the
// GKE plan's "tpulaunch-gke-plan 1"; a change of either's keys or order moves every plan id.
#include <string>
#include <string_view>

namespace tpulaunch {

class DigestWriter {
public:
  // `form`: the header line's text, without its newline.
  explicit DigestWriter(std::string_view form);
  void add(std::string_view key, std::string_view value);
  [[nodiscard]] std::string sha256() const;

private:
  std::string m_text;
};

} // namespace tpulaunch
