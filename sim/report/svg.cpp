// SVG builder, scales, axes, bar charts and the HTML wrapper; see svg.h.
#include "sim/report/svg.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <sstream>

#include "sim/results/format.h"

namespace tpusim::sim::report {

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += ch;
    }
  }
  return o;
}

std::string px(double v) { return format_fixed(v, 1); }

double Scale::operator()(double v) const {
  double t;
  if (log) {
    const double a = std::log10(lo), b = std::log10(hi);
    t = b > a && v > 0 ? (std::log10(v) - a) / (b - a) : 0;
  } else {
    t = hi > lo ? (v - lo) / (hi - lo) : 0;
  }
  return px0 + t * (px1 - px0);
}

std::vector<double> Scale::ticks() const {
  std::vector<double> t;
  if (log) {
    for (double d = std::floor(std::log10(lo)); d <= std::ceil(std::log10(hi)) + 1e-9; d += 1) {
      const double v = std::pow(10, d);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
    }
    return t;
  }
  const double span = hi - lo;
  if (!(span > 0)) return {lo};
  // Steps of 1, 2 or 5 x 10^k giving 4 to 10 ticks.
  const double raw = span / 6;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

Scale nice_scale(double lo, double hi, double px0, double px1, bool log) {
  Scale s;
  s.px0 = px0;
  s.px1 = px1;
  s.log = log;
  if (log) {
    if (!(lo > 0)) lo = hi > 0 ? hi / 10 : 1;
    if (!(hi > 0)) hi = 10;
    s.lo = std::pow(10, std::floor(std::log10(lo)));
    s.hi = std::pow(10, std::max(std::ceil(std::log10(hi)), std::log10(s.lo) + 1));
    return s;
  }
  s.lo = std::min(0.0, lo);
  if (!(hi > s.lo)) hi = s.lo + 1;
  const double mag = std::pow(10, std::floor(std::log10(hi - s.lo)));
  s.hi = s.lo + std::ceil((hi - s.lo) * 1.05 / (mag / 2)) * (mag / 2);
  return s;
}

Svg::Svg(double width, double height) : w_(width), h_(height) {
  std::ostringstream o;
  o << "<rect width=\"" << w_ << "\" height=\"" << h_ << "\" fill=\"white\"/>\n";
  body_ = o.str();
}

Svg& Svg::text(double x, double y, const std::string& s, const std::string& attrs) {
  body_ += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" +
           xml_escape(s) + "</text>\n";
  return *this;
}

Svg& Svg::line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  body_ += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" " + attrs +
           "/>\n";
  return *this;
}

Svg& Svg::rect(double x, double y, double w, double h, const std::string& attrs) {
  body_ += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
           px(std::max(h, 0.0)) + "\" " + attrs + "/>\n";
  return *this;
}

Svg& Svg::circle(double cx, double cy, double r, const std::string& attrs) {
  body_ += "<circle cx=\"" + px(cx) + "\" cy=\"" + px(cy) + "\" r=\"" + px(r) + "\" " + attrs + "/>\n";
  return *this;
}

Svg& Svg::polyline(const std::vector<std::pair<double, double>>& pts, const std::string& attrs) {
  std::string p;
  for (const auto& [x, y] : pts) p += (p.empty() ? "" : " ") + px(x) + "," + px(y);
  body_ += "<polyline fill=\"none\" points=\"" + p + "\" " + attrs + "/>\n";
  return *this;
}

Svg& Svg::raw(const std::string& s) {
  body_ += s;
  return *this;
}

std::string Svg::str() const {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w_ << "\" height=\"" << h_ << "\" viewBox=\"0 0 " << w_
    << " " << h_ << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << body_ << "</svg>\n";
  return o.str();
}

std::string tick_label(double v, bool log) {
  if (log) return "1e" + std::to_string(static_cast<int>(std::lround(std::log10(v))));
  return format_real(v, 4);
}

void draw_axes(Svg& s, const Scale& x, const Scale& y, const std::string& xlabel, const std::string& ylabel) {
  const double l = std::min(x.px0, x.px1), r = std::max(x.px0, x.px1);
  const double t = std::min(y.px0, y.px1), b = std::max(y.px0, y.px1);
  for (double v : x.ticks()) {
    s.line(x(v), t, x(v), b, "stroke=\"#ddd\"");
    s.text(x(v), b + 16, tick_label(v, x.log), "text-anchor=\"middle\"");
  }
  for (double v : y.ticks()) {
    s.line(l, y(v), r, y(v), "stroke=\"#ddd\"");
    s.text(l - 6, y(v) + 4, tick_label(v, y.log), "text-anchor=\"end\"");
  }
  s.rect(l, t, r - l, b - t, "fill=\"none\" stroke=\"#333\"");
  s.text((l + r) / 2, b + 36, xlabel, "text-anchor=\"middle\" font-size=\"13\"");
  s.text(16, (t + b) / 2, ylabel,
         "text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 16 " + px((t + b) / 2) + ")\"");
}

const char* palette(std::size_t i) {
  static const char* const kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kColors[i % (sizeof kColors / sizeof kColors[0])];
}

std::string bar_chart(const std::string& title, const std::vector<std::string>& categories,
                      const std::vector<BarSeries>& series, const std::string& unit, double width) {
  const double bar_h = 12, gap = 8, label_w = 230, top = 40;
  const double group_h = bar_h * static_cast<double>(std::max<std::size_t>(series.size(), 1)) + gap;
  const double height = top + group_h * static_cast<double>(categories.size()) + 50;
  double hi = 0;
  for (const auto& sr : series)
    for (double v : sr.values)
      if (std::isfinite(v)) hi = std::max(hi, v);
  const Scale x = nice_scale(0, hi > 0 ? hi : 1, label_w, width - 80, false);
  Svg s(width, height);
  s.text(width / 2, 20, title, "text-anchor=\"middle\" font-size=\"14\"");
  const double bottom = top + group_h * static_cast<double>(categories.size());
  for (double v : x.ticks()) {
    s.line(x(v), top, x(v), bottom, "stroke=\"#ddd\"");
    s.text(x(v), bottom + 14, tick_label(v, false), "text-anchor=\"middle\"");
  }
  s.text((label_w + width - 80) / 2, bottom + 32, unit, "text-anchor=\"middle\" font-size=\"12\"");
  for (std::size_t c = 0; c < categories.size(); ++c) {
    const double gy = top + group_h * static_cast<double>(c);
    s.text(label_w - 6, gy + group_h / 2, categories[c], "text-anchor=\"end\"");
    for (std::size_t k = 0; k < series.size(); ++k) {
      const double v = c < series[k].values.size() ? series[k].values[c] : NAN;
      if (!std::isfinite(v)) continue;
      const double y = gy + bar_h * static_cast<double>(k);
      s.raw("<g><title>" + xml_escape(categories[c] + " " + series[k].name + ": " + format_real(v, 6) + " " + unit) +
            "</title>");
      s.rect(label_w, y, x(v) - label_w, bar_h - 2,
             "fill=\"" + series[k].color + "\" data-series=\"" + xml_escape(series[k].name) + "\" data-category=\"" +
                 xml_escape(categories[c]) + "\" data-value=\"" + format_real(v, 6) + "\"");
      s.text(x(v) + 4, y + bar_h - 3, format_real(v, 4), "font-size=\"9\"");
      s.raw("</g>\n");
    }
  }
  // Legend, top right.
  double lx = width - 80 - 120 * static_cast<double>(series.size());
  for (const auto& sr : series) {
    s.rect(lx, 28, 10, 10, "fill=\"" + sr.color + "\"");
    s.text(lx + 14, 37, sr.name);
    lx += 120;
  }
  s.line(label_w, top, label_w, bottom, "stroke=\"#333\"");
  return s.str();
}

std::string html_page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + xml_escape(title) +
         "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}td.n{text-align:right}"
         "h2{margin-top:1.5em}</style>\n</head><body>\n<h1>" +
         xml_escape(title) + "</h1>\n" + body + "</body></html>\n";
}

namespace {
bool numeric(const std::string& c) {
  if (c.empty()) return false;
  char* end = nullptr;
  std::strtod(c.c_str(), &end);
  return end && (*end == 0 || *end == '%' || *end == 'x');
}
}  // namespace

std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string o = "<table>\n<tr>";
  for (const auto& h : header) o += "<th>" + xml_escape(h) + "</th>";
  o += "</tr>\n";
  for (const auto& r : rows) {
    o += "<tr>";
    for (const auto& c : r) o += (numeric(c) ? "<td class=\"n\">" : "<td>") + xml_escape(c) + "</td>";
    o += "</tr>\n";
  }
  return o + "</table>\n";
}

}  // namespace tpusim::sim::report
