// Zoo directory access and the generate() dispatcher (see zoo.h).
#include "models/zoo.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "models/generators.h"
#include "models/quantize.h"
#include "models/sharding.h"

namespace tpusim::models {

namespace fs = std::filesystem;

std::string default_zoo_dir() { return std::string(TPUSIM_SOURCE_DIR) + "/models/zoo"; }

std::vector<std::string> list_models(const std::string& zoo_dir) {
  std::error_code ec;
  std::vector<std::string> names;
  fs::directory_iterator it(zoo_dir, ec);
  if (ec) throw ModelError(Diagnostic{zoo_dir, 0, 0, "", "a readable model directory", ec.message(), ""});
  for (const auto& e : it)
    if (e.is_regular_file() && e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool is_model_path(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".yaml") == 0);
}

ModelSpec load_model(const std::string& name_or_path, const std::string& zoo_dir) {
  if (is_model_path(name_or_path)) return read_model_file(name_or_path);
  const std::string path = zoo_dir + "/" + name_or_path + ".yaml";
  if (!fs::exists(path)) {
    std::vector<std::string> names;
    try {
      names = list_models(zoo_dir);
    } catch (const ModelError&) {}
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw ModelError(Diagnostic{zoo_dir, 0, 0, "model", "a model of the zoo (" + list + ")", "'" + name_or_path + "'",
                                nearest_word(name_or_path, names)});
  }
  return read_model_file(path);
}

workloads::Workload generate(const ModelSpec& m, const PhaseOptions& o) {
  workloads::Workload w = generate_unquantized(m, o);
  apply_quantization(w, o);
  return w;
}

namespace {

workloads::Workload generate_family(const ModelSpec& m, const PhaseOptions& o) {
  switch (m.family) {
    case Family::decoder:
    case Family::encoder:
    case Family::vit: return detail::generate_transformer(m, o);
    case Family::resnet:
    case Family::dlrm:
    case Family::unet: {
      // Data parallel inference only (check_mesh): the per-chip batch, no
      // collectives (nothing is reduced across replicas when serving).
      PhaseOptions local = o;
      local.batch = local_batch(o);
      local.mesh = {};
      workloads::Workload w = detail::generate_graph_family(m, local);
      w.mesh = o.mesh;
      return w;
    }
  }
  throw ModelInternalError("generate: unknown family");
}

}  // namespace

workloads::Workload generate_unquantized(const ModelSpec& m, const PhaseOptions& o) {
  check_options(m, o);
  check_mesh(m, o);
  check_quant_options(o);
  workloads::Workload w = generate_family(m, o);
  // The batched kernel (AttentionImpl::batched): every attention operator
  // may take several sequences a grid step.
  if (o.attention_kernel == AttentionImpl::batched)
    for (auto& op : w.ops)
      if (op.kind == workloads::OpKind::attention) op.as<workloads::AttentionAttrs>().max_step_seqs = kBatchedStepSeqs;
  return w;
}

namespace detail {

workloads::Workload generate_graph_family(const ModelSpec& m, const PhaseOptions& o) {
  switch (m.family) {
    case Family::resnet: return generate_resnet(m, o);
    case Family::dlrm: return generate_dlrm(m, o);
    case Family::unet: return generate_unet(m, o);
    case Family::decoder:
    case Family::encoder:
    case Family::vit: break;
  }
  throw ModelInternalError("generate_graph_family: " + std::string(family_name(m.family)) + " is a transformer");
}

}  // namespace detail

}  // namespace tpusim::models
