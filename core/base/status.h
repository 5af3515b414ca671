#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace fusionscope {

// Whose fault an error is, where the code that fails knows it and the caller cannot: the input (a module too big
// to inline, a loop over its work budget: exit 2) or the work on a sound input (out of memory reading a valid file:
// exit 1). Most errors leave it unstated and the caller decides from context, as it always has.
enum class ErrorKind : unsigned char { kUnstated, kBadInput, kFailedWork };

// Errors are values in the engine: a Status is either OK or carries a message (already formatted with
// file:line:column where there is a position). Marked [[nodiscard]] so a dropped error is a compile warning.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message), ErrorKind::kUnstated); }
  static Status badInput(std::string message) { return Status(std::move(message), ErrorKind::kBadInput); }
  static Status failedWork(std::string message) { return Status(std::move(message), ErrorKind::kFailedWork); }

  bool ok() const { return !m_message.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return m_message ? *m_message : kEmpty;
  }
  ErrorKind kind() const { return m_kind; }
  // The same error (same kind) told with another message, for callers that add context.
  Status withMessage(std::string message) const { return Status(std::move(message), m_kind); }

 private:
  Status(std::string message, ErrorKind kind) : m_message(std::move(message)), m_kind(kind) {}
  std::optional<std::string> m_message;
  ErrorKind m_kind = ErrorKind::kUnstated;
};

inline Status okStatus() {
  return Status();
}

// Evaluates `expr` (a Status) and returns it from the enclosing function when it is an error.
#define FS_RETURN_IF_ERROR(expr)                                       \
  do {                                                                 \
    if (::fusionscope::Status fs_status_ = (expr); !fs_status_.ok()) { \
      return fs_status_;                                               \
    }                                                                  \
  } while (false)

// Either a value or an error Status. Access value() only after checking ok().
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : m_data(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : m_data(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(m_data); }
  Status status() const { return ok() ? Status() : std::get<Status>(m_data); }
  const std::string& message() const { return std::get<Status>(m_data).message(); }

  T& value() & { return std::get<T>(m_data); }
  const T& value() const& { return std::get<T>(m_data); }
  T&& value() && { return std::get<T>(std::move(m_data)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> m_data;
};

}  // namespace fusionscope
