#include "tpulaunch/catalog/figure.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

namespace tpulaunch {
namespace {

struct Metric {
  std::string_view id;
  std::string_view label;
  std::string_view color;
  int (*value)(const Slice&);
};

const std::array<Metric, 3> k_metrics{{
    {"hosts", "hosts (TPU VMs)", "#4c78a8", [](const Slice& s) { return s.hosts; }},
    {"chips_per_host", "chips per host", "#f58518", [](const Slice& s) { return s.chips_per_host; }},
    {"global_chips", "global chips", "#54a24b", [](const Slice& s) { return s.global_chips(); }},
}};

// Escapes text for XML content and attributes.
std::string xml(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    default: out += c;
    }
  }
  return out;
}

// A "nice" axis step (1, 2 or 5 times a power of ten) giving about five ticks up to `max`.
int tick_step(int max) {
  const double raw = std::max(1.0, max / 5.0);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) {
      return std::max(1, static_cast<int>(m * power));
    }
  }
  return static_cast<int>(10 * power);
}

} // namespace

std::string render_topology_svg(const std::vector<const Slice*>& slices) {
  constexpr int k_bar = 22;
  constexpr int k_gap = 26;
  constexpr int k_left = 70;
  constexpr int k_top = 40;
  constexpr int k_plot_height = 260;
  const int group_width = static_cast<int>(k_metrics.size()) * k_bar + k_gap;
  const int plot_width = std::max(1, static_cast<int>(slices.size())) * group_width + k_gap;
  const int width = k_left + plot_width + 190;
  const int height = k_top + k_plot_height + 56;

  int max_value = 1;
  for (const Slice* s : slices) {
    for (const auto& metric : k_metrics) {
      max_value = std::max(max_value, metric.value(*s));
    }
  }
  const int step = tick_step(max_value);
  const int axis_max = ((max_value + step - 1) / step) * step;
  auto y_of = [&](int value) { return k_top + k_plot_height - static_cast<double>(value) * k_plot_height / axis_max; };

  std::string out;
  out += fmt::format(R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="12">)svg",
                     width, height, width, height);
  out += "\n<title>TPU slice topology: hosts, chips per host and global chips</title>\n";
  const std::string heading = "TPU slices: hosts, chips per host, global chips";
  out += fmt::format(R"svg(<rect x="0" y="0" width="{}" height="{}" fill="white"/>)svg", width, height);
  out += "\n";
  out += fmt::format(R"svg(<text class="heading" x="{}" y="22" font-size="14" font-weight="bold">{}</text>)svg", k_left, heading);
  out += "\n";
  // Axes, ticks and grid.
  out += fmt::format(R"svg(<g class="axis y"><line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="black"/>)svg", k_left, k_top,
                     k_top + k_plot_height);
  for (int tick = 0; tick <= axis_max; tick += step) {
    const double y = y_of(tick);
    out += fmt::format(R"svg(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/><text x="{}" y="{:.1f}" text-anchor="end" dominant-baseline="middle">{}</text>)svg",
                       k_left, y, k_left + plot_width, y, k_left - 6, y, tick);
  }
  out += fmt::format(R"svg(<text class="axis-label" transform="translate(18 {}) rotate(-90)" text-anchor="middle">count</text></g>)svg",
                     k_top + k_plot_height / 2);
  out += "\n";
  out += fmt::format(R"svg(<g class="axis x"><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="black"/>)svg", k_left,
                     k_top + k_plot_height, k_left + plot_width, k_top + k_plot_height);
  out += fmt::format(R"svg(<text class="axis-label" x="{}" y="{}" text-anchor="middle">accelerator type (slice)</text></g>)svg",
                     k_left + plot_width / 2, height - 10);
  out += "\n";
  // Bars.
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = *slices[i];
    const int group_x = k_left + k_gap + static_cast<int>(i) * group_width;
    out += fmt::format(R"svg(<g class="slice" data-slice="{}">)svg", xml(s.name));
    for (std::size_t m = 0; m < k_metrics.size(); ++m) {
      const Metric& metric = k_metrics[m];
      const int value = metric.value(s);
      const int x = group_x + static_cast<int>(m) * k_bar;
      const double y = y_of(value);
      out += fmt::format(R"svg(<rect class="bar" data-slice="{}" data-metric="{}" data-value="{}" x="{}" y="{:.1f}" width="{}" height="{:.1f}" fill="{}"><title>{}: {} = {}</title></rect>)svg",
                         xml(s.name), metric.id, value, x, y, k_bar - 2, k_top + k_plot_height - y, metric.color,
                         xml(s.name), metric.label, value);
      out += fmt::format(R"svg(<text class="value" x="{}" y="{:.1f}" text-anchor="middle">{}</text>)svg", x + (k_bar - 2) / 2,
                         y - 4, value);
    }
    out += fmt::format(R"svg(<text class="tick-label" x="{}" y="{}" text-anchor="middle">{}</text></g>)svg",
                       group_x + static_cast<int>(k_metrics.size()) * k_bar / 2, k_top + k_plot_height + 18, xml(s.name));
    out += "\n";
  }
  // Legend.
  const int legend_x = k_left + plot_width + 20;
  out += R"svg(<g class="legend">)svg";
  for (std::size_t m = 0; m < k_metrics.size(); ++m) {
    const int y = k_top + 10 + static_cast<int>(m) * 22;
    out += fmt::format(R"svg(<rect x="{}" y="{}" width="14" height="14" fill="{}"/><text x="{}" y="{}">{}</text>)svg", legend_x,
                       y, k_metrics[m].color, legend_x + 20, y + 11, k_metrics[m].label);
  }
  out += "</g>\n</svg>\n";
  return out;
}

} // namespace tpulaunch
