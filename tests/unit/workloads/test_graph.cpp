// Dependencies derived from tensors, topological order, and the graph-level
// validation errors of Workload::validate().
#include <gtest/gtest.h>

#include <functional>

#include "workloads/ir/builder.h"

using namespace tpusim::workloads;
using tpusim::arch::DType;

namespace {
Tensor T(const std::string& n, Shape s, TensorKind k = TensorKind::activation) {
  return Tensor{n, std::move(s), DType::f32, MemSpace::hbm, k, {}};
}
Op ew(const std::string& n, EwKind k, std::vector<std::string> in, std::string out) {
  Op op;
  op.name = n;
  op.kind = OpKind::elementwise;
  op.inputs = std::move(in);
  op.outputs = {std::move(out)};
  op.attrs = ElementwiseAttrs{k, std::nullopt};
  return op;
}
std::string validate_msg(const Workload& w) {
  try {
    w.validate();
  } catch (const WorkloadError& e) {
    return e.what();
  }
  return "";
}
// A diamond listed out of order: d = c(a(x), b(x)) with ops [d, b, a, c... ].
Workload diamond() {
  Workload w;
  w.name = "diamond";
  w.tensors = {T("x", {4}, TensorKind::input), T("a", {4}), T("b", {4}), T("d", {4}, TensorKind::output)};
  w.ops = {ew("opd", EwKind::add, {"a", "b"}, "d"), ew("opb", EwKind::exp, {"x"}, "b"),
           ew("opa", EwKind::neg, {"x"}, "a")};
  return w;
}
}  // namespace

TEST(Graph, DependenciesFromTensors) {
  Workload w = diamond();
  auto deps = w.dependencies();
  ASSERT_EQ(deps.size(), 3u);
  EXPECT_EQ(deps[0], (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(deps[1].empty());
  EXPECT_TRUE(deps[2].empty());
  auto cons = w.consumers();
  EXPECT_EQ(cons["x"], (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(w.producers().at("d"), 0u);
}

TEST(Graph, TopoOrderPutsProducersFirstAndKeepsIndexOrderOtherwise) {
  Workload w = diamond();
  EXPECT_EQ(w.topo_order(), (std::vector<std::size_t>{1, 2, 0}));
  EXPECT_NO_THROW(w.validate());
}

TEST(Graph, BuilderOrderIsTopological) {
  WorkloadBuilder b("mlp");
  auto x = b.input("x", {8, 16}, DType::bf16);
  auto w1 = b.weight("w1", {16, 32}, DType::bf16);
  auto w2 = b.weight("w2", {32, 16}, DType::bf16);
  auto h = b.elementwise("act", "silu", {b.matmul("up", x, w1)});
  b.matmul("down", h, w2);
  Workload wl = b.build();
  EXPECT_EQ(wl.topo_order(), (std::vector<std::size_t>{0, 1, 2}));
  // Unconsumed results become outputs; intermediates stay activations.
  EXPECT_EQ(wl.find_tensor("down")->kind, TensorKind::output);
  EXPECT_EQ(wl.find_tensor("up")->kind, TensorKind::activation);
}

TEST(Graph, CycleIsReportedWithTheOpsOnIt) {
  Workload w;
  w.name = "cyc";
  w.tensors = {T("x", {4}, TensorKind::input), T("a", {4}), T("b", {4})};
  w.ops = {ew("p", EwKind::add, {"x", "b"}, "a"), ew("q", EwKind::exp, {"a"}, "b")};
  EXPECT_THROW(w.topo_order(), WorkloadError);
  std::string msg = validate_msg(w);
  EXPECT_NE(msg.find("dependency cycle"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'p'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'q'"), std::string::npos) << msg;
}

TEST(Graph, ValidationErrors) {
  struct Case {
    const char* what;
    std::function<void(Workload&)> mutate;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases = {
      {"unknown tensor",
       [](Workload& w) { w.ops[0].inputs[1] = "zz"; },
       {"op 'opd' (elementwise)", "unknown tensor 'zz' referenced as input 1"}},
      {"produced twice",
       [](Workload& w) { w.ops[1].outputs = {"a"}; },
       {"op 'opa'", "tensor 'a' produced twice", "op 'opb'"}},
      {"operand count",
       [](Workload& w) { w.ops[1].inputs.push_back("x"); },
       {"op 'opb'", "wrong operand count: expected 1 inputs, found 2"}},
      {"declared shape",
       [](Workload& w) { w.tensors[3].shape = {5}; },
       {"op 'opd'", "shape mismatch on output 'd'", "inferred [4]", "declared [5]"}},
      {"never produced",
       [](Workload& w) { w.tensors.push_back(T("orphan", {2})); },
       {"tensor 'orphan'", "produced by no op"}},
      {"duplicate op", [](Workload& w) { w.ops[2].name = "opb"; }, {"op 'opb'", "op name used twice"}},
      {"writes a weight",
       [](Workload& w) { w.tensors[1].kind = TensorKind::weight; },
       {"op 'opa'", "writes tensor 'a' of kind weight"}},
      {"attrs mismatch",
       [](Workload& w) { w.ops[1].attrs = SoftmaxAttrs{}; },
       {"op 'opb'", "attributes do not belong"}},
      {"bad dim", [](Workload& w) { w.tensors[0].shape = {0}; }, {"tensor 'x'", "expected dims >= 1"}},
  };
  for (const auto& c : cases) {
    Workload w = diamond();
    c.mutate(w);
    std::string msg = validate_msg(w);
    for (const auto& p : c.parts) EXPECT_NE(msg.find(p), std::string::npos) << c.what << ": " << msg;
  }
}

TEST(Graph, AllErrorsAreCollected) {
  Workload w = diamond();
  w.ops[0].inputs[0] = "nope1";
  w.ops[1].inputs[0] = "nope2";
  try {
    w.validate();
    FAIL() << "expected WorkloadError";
  } catch (const WorkloadError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u);
  }
}

TEST(Graph, BuilderRejectsDuplicatesAndUnknowns) {
  WorkloadBuilder b("t");
  auto x = b.input("x", {4}, DType::f32);
  EXPECT_THROW(b.input("x", {4}, DType::f32), WorkloadError);
  b.elementwise("e", "exp", {x});
  EXPECT_THROW(b.elementwise("e", "exp", {x}), WorkloadError);
  EXPECT_THROW(b.elementwise("f", "exp", {TensorRef{"ghost", {4}, DType::f32}}), WorkloadError);
  EXPECT_THROW(b.input("zero", {0, 3}, DType::f32), WorkloadError);
  EXPECT_THROW(b.mark_output(x), WorkloadError);
  EXPECT_EQ(b.ref("e").shape, (Shape{4}));
}
