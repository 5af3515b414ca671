// The malformed-input suite's GUI variant (issue 8): every broken HLO file and every broken trace of
// tests/common/malformed_files.h is opened in the window, offscreen. Each must fail with a message naming the file,
// and leave the open module, its stage, the drawn graph and the open timeline exactly as they were.
#include "tests/common/malformed_files.h"

#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/common/source_paths.h"
#include "tests/viewer/window_fixture.h"
#include "viewer/document.h"
#include "viewer/graph_scene.h"
#include "viewer/inspector.h"
#include "viewer/main_window.h"
#include "viewer/timeline_panel.h"
#include "viewer/timeline_view.h"

namespace fusionscope::viewer {
namespace {

using fusionscope::testing::Kind;
using fusionscope::testing::MalformedFile;

const std::string kMnistSample = std::string(FS_SOURCE_DIR) + "/samples/mnist_softmax/mnist_softmax.hlo";

class MalformedFilesWindowTest : public testing::MainWindowTest {
 protected:
  bool idle() { return testing::waitIdle(*window); }

  // Writes `file` under dir (a directory for directory entries, nothing for "missing") and returns its path.
  QString materialize(const QTemporaryDir& dir, const MalformedFile& file) {
    return QString::fromStdString(fusionscope::testing::materializeMalformed(dir.path().toStdString(), file).string());
  }

  // Runs `open` and waits for its failure; false when it loaded instead or nothing happened.
  bool fails(const std::function<void()>& open) {
    QSignalSpy failed(window.get(), &MainWindow::loadFailed);
    QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
    QSignalSpy traceLoaded(window.get(), &MainWindow::traceLoaded);
    open();
    bool done = testing::waitFor([&] { return failed.count() + loaded.count() + traceLoaded.count() > 0; });
    return done && failed.count() == 1 && loaded.count() == 0 && traceLoaded.count() == 0 && idle();
  }
};

TEST_F(MalformedFilesWindowTest, EveryBrokenModuleKeepsTheOpenOne) {
  QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
  window->openPath(QString::fromStdString(kMnistSample));
  ASSERT_TRUE(testing::waitFor([&] { return loaded.count() > 0; }) && idle());
  window->setCurrentStage(1);
  ASSERT_TRUE(idle());
  const auto document = window->document();
  const int nodes = window->graphScene()->nodeItemCount();
  QTemporaryDir dir;
  int checked = 0;
  for (const MalformedFile& file : fusionscope::testing::malformedFiles()) {
    if (file.kind != Kind::kHlo) continue;
    SCOPED_TRACE(file.name);
    const QString path = materialize(dir, file);
    ASSERT_TRUE(fails([&] { window->openPath(path); }));
    EXPECT_TRUE(window->lastError().contains(QString::fromStdString(file.name))) << window->lastError().toStdString();
    EXPECT_EQ(window->document(), document);
    EXPECT_EQ(window->currentStage(), 1);
    EXPECT_EQ(window->graphScene()->nodeItemCount(), nodes);
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

TEST_F(MalformedFilesWindowTest, EveryBrokenTraceKeepsTheOpenOne) {
  QTemporaryDir dir;
  const QString good = dir.filePath(QStringLiteral("good.json"));
  std::ofstream(good.toStdString()) << fusionscope::testing::kGoodTrace;
  QSignalSpy traceLoaded(window.get(), &MainWindow::traceLoaded);
  window->openTrace(good);
  ASSERT_TRUE(testing::waitFor([&] { return traceLoaded.count() > 0; }) && idle());
  ASSERT_EQ(window->timeline()->view()->groups().size(), 1u);
  const auto shown = window->timeline()->view()->groups()[0].model;
  int checked = 0;
  for (const MalformedFile& file : fusionscope::testing::malformedFiles()) {
    if (file.kind != Kind::kTrace) continue;
    SCOPED_TRACE(file.name);
    const QString path = materialize(dir, file);
    ASSERT_TRUE(fails([&] { window->openTrace(path); }));
    EXPECT_TRUE(window->lastError().contains(QString::fromStdString(file.name))) << window->lastError().toStdString();
    ASSERT_EQ(window->timeline()->view()->groups().size(), 1u);
    EXPECT_EQ(window->timeline()->view()->groups()[0].model, shown);
    ++checked;
  }
  EXPECT_GE(checked, 15);
}

// 60 computations that each call the next twice (2.6 KB of text, 2^60 instructions once inlined): the viewer ran the
// pipeline into 8 GB and aborted. Inlining refuses it up front; the window says why and keeps the open module.
TEST_F(MalformedFilesWindowTest, ACallTreeThatWouldInlineTo2To60IsRefused) {
  QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
  window->openPath(QString::fromStdString(kMnistSample));
  ASSERT_TRUE(testing::waitFor([&] { return loaded.count() > 0; }) && idle());
  const auto document = window->document();
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("amp.hlo"));
  {
    std::ofstream out(path.toStdString());
    out << "HloModule amp\n\nc0 {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
    for (int i = 1; i <= 60; ++i) {
      out << "c" << i << " {\n  p = f32[4] parameter(0)\n  a = f32[4] call(p), to_apply=c" << i - 1
          << "\n  b = f32[4] call(a), to_apply=c" << i - 1 << "\n  ROOT r = f32[4] add(a, b)\n}\n";
    }
    out << "ENTRY main {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] call(p), to_apply=c60\n}\n";
  }
  ASSERT_TRUE(fails([&] { window->openPath(path); }));
  EXPECT_TRUE(window->lastError().contains(QStringLiteral("amp.hlo"))) << window->lastError().toStdString();
  EXPECT_TRUE(window->lastError().contains(QStringLiteral("once its calls are inlined")))
      << window->lastError().toStdString();
  EXPECT_EQ(window->document(), document);
}

// A module too big for Graphviz (a chain of 25,001 instructions, over kMaxLayoutNodes) loads and opens grouped (its
// flat names give stretches of the chain); drawn whole it is not laid out: the window says why and stays usable.
TEST_F(MalformedFilesWindowTest, GraphTooLargeToLayOutIsRefusedWithAMessage) {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("chain.hlo"));
  {
    std::ofstream out(path.toStdString());
    out << "HloModule chain\nENTRY e {\n  p0 = f32[4] parameter(0)\n";
    for (int i = 1; i <= 25000; ++i) out << "  p" << i << " = f32[4] negate(p" << i - 1 << ")\n";
    out << "  ROOT r = f32[4] negate(p25000)\n}\n";
  }
  QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
  QSignalSpy layoutFailed(window.get(), &MainWindow::layoutFailed);
  window->openPath(path);
  ASSERT_TRUE(testing::waitFor([&] { return loaded.count() > 0; }));
  ASSERT_TRUE(idle());
  EXPECT_TRUE(window->groupScopes());
  EXPECT_EQ(layoutFailed.count(), 0);
  EXPECT_GT(window->graphScene()->nodeItemCount(), 0);
  EXPECT_LE(window->graphScene()->nodeItemCount(), kFirstViewNodes);
  window->setGroupScopes(false);
  ASSERT_TRUE(testing::waitFor([&] { return layoutFailed.count() > 0; }));
  EXPECT_EQ(loaded.count(), 1);
  const QString message = layoutFailed.front().front().toString();
  EXPECT_TRUE(message.contains(QStringLiteral("more than the 20000 Graphviz can lay out"))) << message.toStdString();
  EXPECT_TRUE(idle());
  EXPECT_EQ(window->graphScene()->nodeItemCount(), 0);
}

// A dump directory with one truncated stage file opens: that stage is marked and says why (file:line:col) when
// shown, with no graph and no dialog; the stages around it are drawn as before.
TEST_F(MalformedFilesWindowTest, ATruncatedFileOfADumpDirectoryMarksItsStageAndTheOthersOpen) {
  const std::filesystem::path source = std::filesystem::path(FS_SOURCE_DIR) / "tests" / "data" / "xla" / "mnist_step" / "fused";
  QTemporaryDir dir;
  std::filesystem::path broken;
  for (const auto& entry : std::filesystem::directory_iterator(source)) {
    std::filesystem::copy_file(entry.path(), std::filesystem::path(dir.path().toStdString()) / entry.path().filename());
    if (entry.path().filename().string().find(".0010.") != std::string::npos) broken = entry.path().filename();
  }
  ASSERT_FALSE(broken.empty()) << "the dump has a stage 0010";
  {
    // Cut the file in the middle of a line, as a dump interrupted by a full disk leaves it.
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / broken;
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::ofstream(path, std::ios::trunc) << text.substr(0, text.size() / 2);
  }
  QSignalSpy loaded(window.get(), &MainWindow::documentLoaded);
  QSignalSpy failed(window.get(), &MainWindow::loadFailed);
  window->openPath(dir.path());
  ASSERT_TRUE(testing::waitFor([&] { return loaded.count() + failed.count() > 0; }));
  ASSERT_EQ(failed.count(), 0) << failed.front().front().toString().toStdString();
  ASSERT_TRUE(idle());
  int bad = -1;
  for (int i = 0; i < window->stageCount(); ++i) {
    if (!window->document()->stages[static_cast<size_t>(i)].loadError.empty()) {
      EXPECT_EQ(bad, -1) << "one bad file, one bad stage";
      bad = i;
    }
  }
  ASSERT_GT(bad, 0);
  const std::string& error = window->document()->stages[static_cast<size_t>(bad)].loadError;
  EXPECT_NE(error.find(broken.string() + ":"), std::string::npos) << error;
  QSignalSpy layoutFailed(window.get(), &MainWindow::layoutFailed);
  window->setCurrentStage(bad);
  ASSERT_TRUE(testing::waitFor([&] { return layoutFailed.count() > 0; }));
  EXPECT_TRUE(idle());
  EXPECT_EQ(window->graphScene()->nodeItemCount(), 0) << "no other stage's graph under this stage's name";
  EXPECT_TRUE(window->inspector()->detailsText().contains(QStringLiteral("could not be read")));
  window->nextStage();
  ASSERT_TRUE(idle());
  EXPECT_EQ(window->currentStage(), bad + 1);
  EXPECT_GT(window->graphScene()->nodeItemCount(), 0);
}

}  // namespace
}  // namespace fusionscope::viewer
