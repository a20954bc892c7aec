// DLRM generator (inference): dense features through the bottom MLP,
// sparse features as multi-hot embedding lookups pooled by sum, feature
// interaction (DCNv2 low-rank cross layers as in the MLPerf DLRM-v2
// benchmark, or the original pairwise dot products), top MLP and sigmoid.
// Leaves out: the dot interaction keeps the full [F, F] product matrix
// (the original keeps its strict lower triangle, F(F-1)/2 values), so its
// first top-MLP layer is wider than the original's; hashing of raw ids.
#include "models/generators.h"

namespace tpusim::models::detail {

using namespace workloads;

Workload generate_dlrm(const ModelSpec& m, const PhaseOptions& o) {
  WorkloadBuilder b(m.name + "." + phase_name(o.phase));
  const DlrmSpec& d = m.dlrm;
  const DType wd = o.weight_dtype, ad = o.activation_dtype;
  const std::int64_t B = o.batch, D = d.embedding_dim;
  auto mlp = [&](const std::string& n, TensorRef x, const std::vector<std::int64_t>& sizes, bool relu_last) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::string p = n + "." + std::to_string(i);
      x = b.matmul(p, x, b.weight(p + ".weight", {x.dim(-1), sizes[i]}, wd), "", ad);
      x = b.add(p + ".bias_add", x, b.weight(p + ".bias", {sizes[i]}, ad));
      if (i + 1 < sizes.size() || relu_last) x = b.elementwise(p + ".relu", EwKind::relu, {x});
    }
    return x;
  };
  TensorRef dense = b.input("dense_features", {B, d.dense_features}, ad);
  std::vector<TensorRef> feats{mlp("bottom_mlp", dense, d.bottom_mlp, true)};
  for (std::size_t t = 0; t < d.tables.size(); ++t) {
    const std::string p = "embeddings." + std::to_string(t);
    TensorRef idx = b.input(p + ".indices", {B, d.tables[t].multi_hot}, DType::f32);
    TensorRef e = b.gather(p, b.weight(p + ".weight", {d.tables[t].rows, D}, wd), idx);
    if (e.dtype != ad) e = b.cast(p + ".dequant", e, ad);
    feats.push_back(b.reduce(p + ".pool", e, ReduceKind::sum, {1}));
  }
  const std::int64_t F = static_cast<std::int64_t>(feats.size());
  TensorRef x;
  if (d.interaction == InteractionKind::dcn) {
    TensorRef x0 = b.concat("interaction.concat", feats, 1);  // [B, F*D]
    x = x0;
    for (std::int64_t l = 0; l < d.cross_layers; ++l) {
      const std::string p = "interaction.cross." + std::to_string(l);
      TensorRef lo = b.matmul(p + ".down", x, b.weight(p + ".down.weight", {F * D, d.low_rank}, wd), "", ad);
      TensorRef up = b.matmul(p + ".up", lo, b.weight(p + ".up.weight", {d.low_rank, F * D}, wd), "", ad);
      up = b.add(p + ".bias_add", up, b.weight(p + ".bias", {F * D}, ad));
      x = b.add(p + ".residual", b.mul(p + ".gate", x0, up), x);
    }
  } else {
    std::vector<TensorRef> rows;
    for (std::size_t i = 0; i < feats.size(); ++i)
      rows.push_back(b.reshape("interaction.row" + std::to_string(i), feats[i], {B, 1, D}));
    TensorRef st = b.concat("interaction.stack", rows, 1);  // [B, F, D]
    TensorRef z = b.matmul("interaction.dot", st, st, "bfd,bgd->bfg", ad);
    z = b.reshape("interaction.flat", z, {B, F * F});
    x = b.concat("interaction.concat", {feats[0], z}, 1);
  }
  TensorRef y = mlp("top_mlp", x, d.top_mlp, false);
  b.elementwise("predict", EwKind::sigmoid, {y});
  return b.build();
}

}  // namespace tpusim::models::detail
