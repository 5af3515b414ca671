#include "core/pipeline/pass_pipeline.h"

#include <chrono>

#include <fmt/format.h>

namespace fusionscope::core {

PassPipeline& PassPipeline::addPass(std::unique_ptr<HloPass> pass) {
  if (auto* nested = dynamic_cast<PassPipeline*>(pass.get())) {
    nested->setDisabledPasses(m_disabled);
    nested->setObserver(m_observer);
  }
  m_passes.push_back(std::move(pass));
  return *this;
}

void PassPipeline::setDisabledPasses(std::set<std::string, std::less<>> names) {
  for (const auto& pass : m_passes) {
    if (auto* nested = dynamic_cast<PassPipeline*>(pass.get())) nested->setDisabledPasses(names);
  }
  m_disabled = std::move(names);
}

void PassPipeline::setObserver(PipelineObserver* observer) {
  m_observer = observer;
  for (const auto& pass : m_passes) {
    if (auto* nested = dynamic_cast<PassPipeline*>(pass.get())) nested->setObserver(observer);
  }
}

std::vector<std::string> PassPipeline::leafPassNames() const {
  std::vector<std::string> names;
  for (const auto& pass : m_passes) {
    if (const auto* nested = dynamic_cast<const PassPipeline*>(pass.get())) {
      std::vector<std::string> inner = nested->leafPassNames();
      names.insert(names.end(), inner.begin(), inner.end());
    } else {
      names.emplace_back(pass->name());
    }
  }
  return names;
}

StatusOr<bool> PassPipeline::run(HloModule& module, PassContext& context) {
  bool changedAny = false;
  for (int iteration = 0; iteration < m_maxIterations; ++iteration) {
    bool changedRound = false;
    for (const auto& pass : m_passes) {
      bool leaf = dynamic_cast<PassPipeline*>(pass.get()) == nullptr;
      if (leaf && m_disabled.count(pass->name())) continue;
      if (leaf && m_observer) m_observer->beforePass(*pass, m_name, module);
      auto start = std::chrono::steady_clock::now();
      StatusOr<bool> changed = pass->run(module, context);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!changed.ok()) {
        return leaf ? changed.status().withMessage(fmt::format("pass {} failed: {}", pass->name(), changed.message()))
                    : changed.status();
      }
      if (leaf && m_observer) {
        FS_RETURN_IF_ERROR(m_observer->afterPass(*pass, m_name, *changed, ms, module, context));
      }
      changedRound = changedRound || *changed;
    }
    changedAny = changedAny || changedRound;
    if (!changedRound) break;
  }
  return changedAny;
}

}  // namespace fusionscope::core
