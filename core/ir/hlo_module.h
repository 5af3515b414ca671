#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/ir/hlo_computation.h"
#include "core/ir/stack_frames.h"

namespace fusionscope::core {

// A parsed or built HLO program: computations in text order (callees usually first, as XLA prints them),
// one of which is the ENTRY, plus the header attributes of the `HloModule` line kept verbatim
// (`entry_computation_layout`, `input_output_alias`, ...) and the tables printed between that line and the first
// computation (XLA's stack-frame index), also verbatim.
class HloModule {
 public:
  explicit HloModule(std::string name);
  HloModule(const HloModule&) = delete;
  HloModule& operator=(const HloModule&) = delete;

  const std::string& name() const { return m_name; }
  void setName(std::string name) { m_name = std::move(name); }

  // The file (or "<text>") the module was parsed from, which verifier messages name; empty when built in code.
  const std::string& sourceName() const { return m_sourceName; }
  void setSourceName(std::string name) { m_sourceName = std::move(name); }

  // Header attributes in source order, values verbatim.
  const std::vector<std::pair<std::string, std::string>>& headerAttributes() const { return m_header; }
  std::vector<std::pair<std::string, std::string>>& mutableHeaderAttributes() { return m_header; }
  const std::string* findHeaderAttribute(std::string_view key) const;

  // Blocks between the header line and the first computation, in source order (see HeaderTable).
  const std::vector<HeaderTable>& headerTables() const { return m_tables; }
  void setHeaderTables(std::vector<HeaderTable> tables);
  const StackFrameIndex& stackFrames() const { return m_stackFrames; }
  // Where an instruction with this metadata came from: its stack frame when the module has XLA's tables,
  // else `source_file`/`source_line`; nullopt when neither says.
  std::optional<SourceLocation> sourceLocation(const OpMetadata& metadata) const;

  HloComputation* addComputation(std::unique_ptr<HloComputation> computation);
  // Computations in text order. Do not hold the reference across removeComputation().
  const std::vector<std::unique_ptr<HloComputation>>& computations() const;
  HloComputation* findComputation(std::string_view name) const;
  // `base` if no computation uses it, else `base.N` for the smallest free N.
  std::string uniqueComputationName(std::string_view base) const;
  // Removes a computation no instruction calls any more (not the entry). O(1): the slot is reclaimed the
  // next time computations() is read.
  Status removeComputation(HloComputation* computation);
  // Removes every computation not reachable from the entry through called computations; returns how many.
  int64_t removeUnreachableComputations();

  HloComputation* entry() const { return m_entry; }
  void setEntry(HloComputation* entry) { m_entry = entry; }

  int64_t instructionCount() const;

  // Callees before callers (every computation after the ones it calls); unreachable ones keep text order.
  std::vector<HloComputation*> computationsPostOrder() const;
  // Reorders computations() into computationsPostOrder(), so printed text defines every computation before
  // its first use (XLA's parser needs that).
  void sortComputationsInPostOrder();

  // Marks the computations called by fusion instructions (HloComputation::isFusionComputation).
  void updateFusionComputationFlags();

  // Total fusion instructions in non-fusion computations.
  int64_t fusionCount() const;

 private:
  std::string m_name;
  std::string m_sourceName;
  std::vector<std::pair<std::string, std::string>> m_header;
  std::vector<HeaderTable> m_tables;
  StackFrameIndex m_stackFrames;
  // Removed computations leave a null slot until the next computations(); `mutable` for that compaction.
  mutable std::vector<std::unique_ptr<HloComputation>> m_computations;
  mutable int64_t m_removed = 0;
  mutable std::unordered_map<std::string, int64_t> m_nextSuffix;  // see HloComputation::m_nextSuffix
  std::unordered_map<std::string_view, HloComputation*> m_byName;
  HloComputation* m_entry = nullptr;
};

// Adds `add(lhs, rhs)` over scalars of `type` to `module` (named scalar_add_computation, as XLA names its own): the
// reducer of a sum a pass builds.
HloComputation* addScalarAddComputation(HloModule& module, PrimitiveType type);

}  // namespace fusionscope::core
