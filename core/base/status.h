#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace fusionscope {

// Errors are values in the engine: a Status is either OK or carries a message (already formatted with
// file:line:column where there is a position). Marked [[nodiscard]] so a dropped error is a compile warning.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !m_message.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return m_message ? *m_message : kEmpty;
  }

 private:
  explicit Status(std::string message) : m_message(std::move(message)) {}
  std::optional<std::string> m_message;
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
