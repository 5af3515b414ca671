#include "core/text/attribute_text.h"

#include <functional>

#include <fmt/format.h>

#include "core/text/text_cursor.h"

namespace fusionscope::core {
namespace {

AttributeError errorAt(const char* at, std::string message) {
  return AttributeError{at, std::move(message)};
}

// Parses `AxBxC` into out (each element via `element`), used by window sizes and padding.
AttributeResult parseXList(TextCursor& s, const std::function<AttributeResult(TextCursor&, size_t)>& element) {
  size_t i = 0;
  do {
    if (auto err = element(s, i++)) return err;
  } while (s.consume('x'));
  return std::nullopt;
}

}  // namespace

AttributeResult parseInt(std::string_view text, int64_t& out) {
  TextCursor s(text, {});
  if (!s.readInt(out)) return errorAt(s.pos(), "expected an integer");
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after integer");
  return std::nullopt;
}

AttributeResult parseIntList(std::string_view text, std::vector<int64_t>& out) {
  TextCursor s(text, {});
  out.clear();
  if (!s.consume('{')) return errorAt(s.pos(), "expected '{' to start a list of integers");
  if (!s.consume('}')) {
    do {
      int64_t v = 0;
      if (!s.readInt(v)) return errorAt(s.pos(), "expected an integer");
      out.push_back(v);
    } while (s.consume(','));
    if (!s.consume('}')) return errorAt(s.pos(), "expected ',' or '}' in list of integers");
  }
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after list");
  return std::nullopt;
}

AttributeResult parseSlice(std::string_view text, std::vector<SliceDim>& out) {
  TextCursor s(text, {});
  out.clear();
  if (!s.consume('{')) return errorAt(s.pos(), "expected '{' to start slice");
  if (!s.consume('}')) {
    do {
      SliceDim dim;
      if (!s.consume('[')) return errorAt(s.pos(), "expected '[start:limit:stride]' in slice");
      if (!s.readInt(dim.start)) return errorAt(s.pos(), "expected slice start");
      if (!s.consume(':')) return errorAt(s.pos(), "expected ':' after slice start");
      if (!s.readInt(dim.limit)) return errorAt(s.pos(), "expected slice limit");
      if (s.consume(':') && !s.readInt(dim.stride)) return errorAt(s.pos(), "expected slice stride");
      if (!s.consume(']')) return errorAt(s.pos(), "expected ']' to close slice dimension");
      out.push_back(dim);
    } while (s.consume(','));
    if (!s.consume('}')) return errorAt(s.pos(), "expected ',' or '}' in slice");
  }
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after slice");
  return std::nullopt;
}

AttributeResult parsePadding(std::string_view text, std::vector<PaddingDim>& out) {
  TextCursor s(text, {});
  out.clear();
  auto result = parseXList(s, [&](TextCursor& sc, size_t) -> AttributeResult {
    PaddingDim dim;
    if (!sc.readInt(dim.low)) return errorAt(sc.pos(), "expected padding 'low_high[_interior]'");
    if (!sc.consume('_') || !sc.readInt(dim.high)) return errorAt(sc.pos(), "expected '_high' in padding");
    if (sc.consume('_') && !sc.readInt(dim.interior)) return errorAt(sc.pos(), "expected interior padding");
    out.push_back(dim);
    return std::nullopt;
  });
  if (result) return result;
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after padding");
  return std::nullopt;
}

AttributeResult parseWindow(std::string_view text, Window& out) {
  TextCursor s(text, {});
  out.dims.clear();
  if (!s.consume('{')) return errorAt(s.pos(), "expected '{' to start window");
  while (!s.consume('}')) {
    if (s.atEnd()) return errorAt(s.pos(), "expected '}' to close window");
    const char* keyAt = s.pos();
    std::string_view key = s.readWord();
    if (key.empty() || !s.consume('=')) return errorAt(keyAt, "expected 'key=value' in window");
    auto dimAt = [&](size_t i) -> WindowDim& {
      if (out.dims.size() <= i) out.dims.resize(i + 1);
      return out.dims[i];
    };
    AttributeResult err;
    if (key == "pad") {
      err = parseXList(s, [&](TextCursor& sc, size_t i) -> AttributeResult {
        WindowDim& d = dimAt(i);
        if (!sc.readInt(d.padLow) || !sc.consume('_') || !sc.readInt(d.padHigh)) {
          return errorAt(sc.pos(), "expected 'low_high' in window pad");
        }
        return std::nullopt;
      });
    } else {
      int64_t WindowDim::*field = nullptr;
      if (key == "size")
        field = &WindowDim::size;
      else if (key == "stride")
        field = &WindowDim::stride;
      else if (key == "lhs_dilate")
        field = &WindowDim::baseDilation;
      else if (key == "rhs_dilate")
        field = &WindowDim::windowDilation;
      else if (key != "rhs_reversal")
        return errorAt(keyAt, fmt::format("unknown window field '{}'", key));
      err = parseXList(s, [&](TextCursor& sc, size_t i) -> AttributeResult {
        int64_t v = 0;
        if (!sc.readInt(v)) return errorAt(sc.pos(), fmt::format("expected an integer in window {}", key));
        if (field)
          dimAt(i).*field = v;
        else
          dimAt(i).reversal = v != 0;
        return std::nullopt;
      });
    }
    if (err) return err;
  }
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after window");
  return std::nullopt;
}

AttributeResult parseMetadata(std::string_view text, OpMetadata& out) {
  TextCursor s(text, {});
  out = OpMetadata();
  if (!s.consume('{')) return errorAt(s.pos(), "expected '{' to start metadata");
  while (!s.consume('}')) {
    if (s.atEnd()) return errorAt(s.pos(), "expected '}' to close metadata");
    const char* keyAt = s.pos();
    std::string_view key = s.readWord();
    if (key.empty() || !s.consume('=')) return errorAt(keyAt, "expected 'key=value' in metadata");
    const char* valueAt = s.pos();
    if (s.peek() == '"') {
      std::string value;
      if (!s.readQuoted(value)) return errorAt(valueAt, "unterminated string in metadata");
      if (key == "op_type")
        out.opType = std::move(value);
      else if (key == "op_name")
        out.opName = std::move(value);
      else if (key == "source_file")
        out.sourceFile = std::move(value);
      else {
        if (!out.extra.empty()) out.extra += ' ';
        out.extra += fmt::format("{}={}", key, quoted(value));
      }
    } else if (key == "source_line") {
      int64_t line = 0;
      if (!s.readInt(line)) return errorAt(valueAt, "expected an integer source_line");
      out.sourceLine = line;
    } else {
      // Unnamed non-string fields (stack_frame_id=3, profile_type={...}) are kept as their text.
      std::string_view value = s.readName();
      if (value.empty()) {
        int depth = 0;
        const char* start = s.pos();
        const char* p = start;
        const char* end = text.data() + text.size();
        while (p < end && (depth > 0 || (*p != ' ' && *p != '}'))) {
          if (*p == '{') ++depth;
          if (*p == '}') --depth;
          ++p;
        }
        if (p == start) return errorAt(valueAt, fmt::format("expected a value for metadata field '{}'", key));
        value = std::string_view(start, static_cast<size_t>(p - start));
        s.setPos(p);
      }
      if (!out.extra.empty()) out.extra += ' ';
      out.extra += fmt::format("{}={}", key, value);
    }
  }
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after metadata");
  return std::nullopt;
}

AttributeResult parseQuoted(std::string_view text, std::string& out) {
  TextCursor s(text, {});
  if (!s.readQuoted(out)) return errorAt(s.pos(), "expected a quoted string");
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after string");
  return std::nullopt;
}

AttributeResult parseNameList(std::string_view text, std::vector<std::string_view>& out, bool& braced) {
  TextCursor s(text, {});
  out.clear();
  braced = s.consume('{');
  if (!(braced && s.consume('}'))) {
    do {
      s.consume('%');
      const char* at = s.pos();
      std::string_view name = s.readName();
      if (name.empty()) return errorAt(at, "expected a computation or instruction name");
      out.push_back(name);
    } while (braced && s.consume(','));
    if (braced && !s.consume('}')) return errorAt(s.pos(), "expected ',' or '}' in name list");
  }
  if (!s.atEnd()) return errorAt(s.pos(), "unexpected text after name");
  return std::nullopt;
}

std::string intListText(const std::vector<int64_t>& values) {
  return fmt::format("{{{}}}", fmt::join(values, ","));
}

std::string sliceText(const std::vector<SliceDim>& dims) {
  std::string out = "{";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    fmt::format_to(std::back_inserter(out), "[{}:{}", dims[i].start, dims[i].limit);
    if (dims[i].stride != 1) fmt::format_to(std::back_inserter(out), ":{}", dims[i].stride);
    out += ']';
  }
  return out + "}";
}

std::string paddingText(const std::vector<PaddingDim>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += 'x';
    fmt::format_to(std::back_inserter(out), "{}_{}", dims[i].low, dims[i].high);
    if (dims[i].interior != 0) fmt::format_to(std::back_inserter(out), "_{}", dims[i].interior);
  }
  return out;
}

std::string windowText(const Window& window) {
  // Only fields that differ from their defaults are printed, as XLA does.
  auto field = [&](std::string_view name, auto get, bool always) -> std::string {
    bool any = always;
    for (const WindowDim& d : window.dims) any = any || get(d) != get(WindowDim());
    if (!any || window.dims.empty()) return "";
    std::string out = fmt::format(" {}=", name);
    for (size_t i = 0; i < window.dims.size(); ++i) {
      if (i > 0) out += 'x';
      out += get(window.dims[i]);
    }
    return out;
  };
  std::string body;
  body += field(
      "size", [](const WindowDim& d) { return std::to_string(d.size); }, true);
  body += field(
      "stride", [](const WindowDim& d) { return std::to_string(d.stride); }, false);
  body += field(
      "pad", [](const WindowDim& d) { return fmt::format("{}_{}", d.padLow, d.padHigh); }, false);
  body += field(
      "lhs_dilate", [](const WindowDim& d) { return std::to_string(d.baseDilation); }, false);
  body += field(
      "rhs_dilate", [](const WindowDim& d) { return std::to_string(d.windowDilation); }, false);
  body += field(
      "rhs_reversal", [](const WindowDim& d) { return std::string(d.reversal ? "1" : "0"); }, false);
  if (!body.empty()) body.erase(0, 1);
  return "{" + body + "}";
}

std::string metadataText(const OpMetadata& metadata) {
  std::string out = "{";
  auto add = [&](std::string piece) {
    if (out.size() > 1) out += ' ';
    out += piece;
  };
  if (!metadata.opType.empty()) add(fmt::format("op_type={}", quoted(metadata.opType)));
  if (!metadata.opName.empty()) add(fmt::format("op_name={}", quoted(metadata.opName)));
  if (!metadata.sourceFile.empty()) add(fmt::format("source_file={}", quoted(metadata.sourceFile)));
  if (metadata.sourceLine) add(fmt::format("source_line={}", *metadata.sourceLine));
  if (!metadata.extra.empty()) add(metadata.extra);
  return out + "}";
}

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace fusionscope::core
