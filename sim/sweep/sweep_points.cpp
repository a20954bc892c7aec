// Per-point resolution of a sweep spec: the parameters a point runs with,
// the values filters and derived columns read, the `tpusim run` arguments
// of each point (its chip config resolved in-process) and sharding; see
// sweep_spec.h.
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "arch/common/dtype.h"
#include "arch/ici/topology.h"
#include "models/quantize.h"
#include "models/sharding.h"
#include "models/zoo.h"
#include "sim/config/config_writer.h"
#include "sim/config/schema.h"
#include "sim/engine/slice_setup.h"
#include "sim/results/results_writer.h"
#include "sim/run/model_fit.h"
#include "sim/sweep/serve_points.h"
#include "sim/sweep/source_keys.h"
#include "sim/sweep/sweep_spec.h"
#include "workloads/builtin.h"
#include "workloads/io/scalesim_csv.h"

namespace tpusim::sim::sweep {

namespace fs = std::filesystem;

namespace {

std::string resolve_path(const std::string& dir, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  std::error_code ec;
  const fs::path rel = fs::path(dir) / p;
  if (fs::exists(rel, ec)) return fs::absolute(rel, ec).lexically_normal().string();
  if (fs::exists(p, ec)) return fs::absolute(p, ec).lexically_normal().string();
  return p;
}

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ';';
  return s;
}

}  // namespace

const SweptValue* SweepPoint::find(const std::string& key) const {
  for (const auto& v : values)
    if (v.key == key) return &v;
  return nullptr;
}

std::map<std::string, std::string> point_params(const SweepSpec& spec, const SweepPoint& p) {
  std::map<std::string, std::string> m;
  bool point_has_source = false;
  for (const auto& v : p.values) point_has_source = point_has_source || is_source(v.key);
  for (const auto& [k, v] : spec.base)
    if (!(point_has_source && is_source(k))) m[k] = v.text;
  for (const auto& v : p.values) m[v.key] = v.text;
  return m;
}

std::optional<Value> lookup_point_value(const SweepSpec& spec, const SweepPoint& p, const std::string& name,
                                        const std::map<std::string, std::string>* metrics) {
  const auto params = point_params(spec, p);
  auto it = params.find(name);
  if (it != params.end()) {
    if (name.compare(0, 5, "arch.") == 0)
      if (const FieldSpec* f = find_field(name.substr(5)); f && f->type == FieldType::quantity) {
        try {
          return Value::num(parse_quantity(it->second, f->unit));
        } catch (const UnitError&) {
          // Not a quantity after all: compare it as text.
        }
      }
    return Value::from_text(it->second);
  }
  // `tpusim run`'s own defaults, so that a filter may read a parameter
  // that some points leave unset.
  static const std::map<std::string, std::string> defaults = {{"arch", "v5e"},
                                                              {"model.phase", "decode"},
                                                              {"model.batch", "1"},
                                                              {"model.seq", "2048"},
                                                              {"model.context", "2048"},
                                                              {"model.image", "0"},
                                                              {"workload.dtype", "bf16"},
                                                              {"workload.fusion", "true"},
                                                              {"workload.cmem", "true"},
                                                              {"model.remat", "none"},
                                                              {"model.fused_attention_backward", "false"},
                                                              {"model.attention_kernel", "flash"},
                                                              {"model.optimizer_dtype", "f32"}};
  if (name == "model.phase" && params.count("model.name")) {
    // run's unsaid phase is the model family's when it has no decode.
    try {
      const std::string& model = params.at("model.name");
      const auto family = models::load_model(looks_like_path(model) ? resolve_path(spec.dir, model) : model).family;
      return Value::from_text(models::phase_name(models::default_phase(family, models::Phase::decode)));
    } catch (const std::exception&) {
      // Not a loadable model: the point becomes an error row; read run's default.
    }
  }
  if (auto d = defaults.find(name); d != defaults.end()) return Value::from_text(d->second);
  if (metrics) {
    auto m = metrics->find(name);
    if (m != metrics->end()) {
      if (m->second.empty()) return Value::num(NAN);
      return Value::from_text(m->second);
    }
  }
  return std::nullopt;
}

std::vector<PreparedPoint> prepare_points(const SweepSpec& spec, const ConfigSearchPath& path) {
  std::vector<PreparedPoint> out;
  std::size_t config_errors = 0;
  std::string first_config_error;
  for (const auto& p : spec.points) {
    PreparedPoint pp;
    pp.point = &p;
    auto params = point_params(spec, p);
    std::string arch_name = params.count("arch") ? params["arch"] : "v5e";
    if (looks_like_path(arch_name)) arch_name = resolve_path(spec.dir, arch_name);
    std::vector<std::string> sets;
    for (const auto& [k, v] : params)
      if (k.compare(0, 5, "arch.") == 0) sets.push_back(k.substr(5) + "=" + v);
    arch::TpuConfig cfg;
    try {
      cfg = load_tpu_config(arch_name, sets, path);
      pp.config_hash = config_hash(write_config(cfg));
    } catch (const std::exception& e) {
      pp.error = "config: " + one_line(e.what());
      if (config_errors++ == 0) first_config_error = e.what();
      out.push_back(std::move(pp));
      continue;
    }
    const std::string dtype_text = params.count("workload.dtype") ? params["workload.dtype"] : "bf16";
    const auto dtype = arch::parse_dtype(dtype_text);
    std::vector<std::string>& a = pp.run_args;
    // --quiet: a child's stderr is kept for its error message only.
    a = {"run", "--quiet", "--arch", arch_name};
    if (spec.serve) {
      if (params.count("run.slice") || params.count("run.mesh")) {
        pp.error = "run.slice and run.mesh are a run sweep's; a serve sweep takes serve.slice and serve.mesh";
        out.push_back(std::move(pp));
        continue;
      }
      try {
        std::string model = params.count("model.name") ? params["model.name"] : "";
        if (looks_like_path(model)) model = resolve_path(spec.dir, model);
        std::string cache;
        if (params.count("serve.step_cache"))
          cache = fs::absolute(fs::path(spec.dir) / params["serve.step_cache"]).string();
        a = serve_point_args(params, arch_name, sets, dtype_text, model, cache);
      } catch (const std::exception& e) {
        pp.error = one_line(e.what());
      }
      out.push_back(std::move(pp));
      continue;
    }
    try {
      // The slice and mesh as `tpusim run` checks them, so that a point
      // that cannot run costs no process.
      workloads::MeshSpec mesh;
      if (params.count("run.mesh") && !params.count("run.slice"))
        throw std::runtime_error("run.mesh needs run.slice (a mesh lies over a multi-chip slice)");
      if (params.count("run.slice")) {
        const arch::ici::Slice slice(cfg.ici, params["run.slice"]);  // arch::ConfigError
        if (params.count("run.mesh")) {
          mesh = workloads::parse_mesh(
              params["run.mesh"], params.count("model.name") ? models::mesh_axis_names() : std::vector<std::string>{});
          (void)map_mesh(slice, mesh);  // std::invalid_argument
        }
      }
      if (params.count("model.name")) {
        const std::string model =
            looks_like_path(params["model.name"]) ? resolve_path(spec.dir, params["model.name"]) : params["model.name"];
        const models::ModelSpec ms = models::load_model(model);
        models::PhaseOptions po;
        if (params.count("model.phase"))
          models::parse_phase(params["model.phase"], &po.phase);
        else  // as `tpusim run` takes an unsaid --phase
          po.phase = models::default_phase(ms.family, models::Phase::decode);
        if (params.count("model.batch")) po.batch = std::stoll(params["model.batch"]);
        if (params.count("model.seq")) po.seq_len = std::stoll(params["model.seq"]);
        if (params.count("model.context")) po.context = std::stoll(params["model.context"]);
        po.image_size = params.count("model.image") ? std::stoll(params["model.image"]) : 0;
        po.mesh = mesh;
        if (params.count("model.remat")) models::parse_remat_spec(params["model.remat"], &po.remat, &po.remat_custom);
        po.weight_dtype = po.activation_dtype = po.kv_dtype = dtype ? *dtype : arch::DType::bf16;
        // Separate dtypes and quantization (checked values: sweep_spec.cpp).
        if (params.count("model.weight_dtype")) po.weight_dtype = *arch::parse_dtype(params["model.weight_dtype"]);
        if (params.count("model.act_dtype")) po.activation_dtype = *arch::parse_dtype(params["model.act_dtype"]);
        if (params.count("model.kv_dtype")) po.kv_dtype = *arch::parse_dtype(params["model.kv_dtype"]);
        if (params.count("model.weight_scales")) {
          workloads::QuantScales sc;
          models::parse_scales(params["model.weight_scales"], &sc);
          po.quant.weight_scales = sc;
        }
        po.quant.dynamic_activations = params.count("model.act_quant") && params["model.act_quant"] == "dynamic";
        if (params.count("model.training_quant"))
          models::parse_training_quant(params["model.training_quant"], &po.quant.training_quant);
        if (po.quant.training_quant && po.phase != models::Phase::train)
          throw std::runtime_error("model.training_quant: " + params["model.training_quant"] +
                                   " needs model.phase train");
        if (params.count("model.sparsity")) models::parse_sparsity(params["model.sparsity"], &po.quant.weight_sparsity);
        if (params.count("model.moe_capacity_factor"))
          po.moe_capacity_factor = Value::from_text(params["model.moe_capacity_factor"]).number;
        po.fused_attention_backward =
            params.count("model.fused_attention_backward") && params["model.fused_attention_backward"] == "true";
        if (po.fused_attention_backward && po.phase != models::Phase::train)
          throw std::runtime_error("model.fused_attention_backward: true needs model.phase train");
        if (params.count("model.attention_kernel"))
          models::parse_attention_impl(params["model.attention_kernel"], &po.attention_kernel);
        if (params.count("model.attention_blocks"))
          models::parse_splash_blocks(params["model.attention_blocks"], &po.attention_blocks);
        if (params.count("model.optimizer_dtype"))
          models::parse_optimizer_dtype(params["model.optimizer_dtype"], &po.optimizer_dtype);
        if (po.optimizer_dtype != arch::DType::f32 && po.phase != models::Phase::train)
          throw std::runtime_error("model.optimizer_dtype: " + params["model.optimizer_dtype"] +
                                   " needs model.phase train");
        models::check_quant_options(po);
        // The same fit check `tpusim run` makes, done here so that a point
        // that cannot fit costs no process.
        const models::FitReport fit = check_model_fit(ms, po, cfg).report;
        if (!fit.fits) throw std::runtime_error("run: " + fit.message);
        a.insert(a.end(), {"--model", model});
        for (const char* k : {"phase", "batch", "seq", "context", "image", "remat"})
          if (params.count(std::string("model.") + k))
            a.insert(a.end(), {std::string("--") + k, params["model." + std::string(k)]});
        for (const auto& [key, flag] :
             std::vector<std::pair<std::string, std::string>>{{"weight_dtype", "--weight-dtype"},
                                                              {"act_dtype", "--act-dtype"},
                                                              {"kv_dtype", "--kv-dtype"},
                                                              {"weight_scales", "--weight-scales"},
                                                              {"act_quant", "--act-quant"},
                                                              {"training_quant", "--training-quant"},
                                                              {"sparsity", "--sparsity"},
                                                              {"moe_capacity_factor", "--moe-capacity-factor"},
                                                              {"attention_kernel", "--attention-kernel"},
                                                              {"attention_blocks", "--attention-blocks"},
                                                              {"optimizer_dtype", "--optimizer-dtype"}})
          if (params.count("model." + key)) a.insert(a.end(), {flag, params["model." + key]});
        if (po.fused_attention_backward) a.push_back("--fused-attention-backward");
      } else if (params.count("workload.file")) {
        const std::string f = resolve_path(spec.dir, params["workload.file"]);
        if (!fs::exists(f)) throw std::runtime_error("workload file not found: " + f);
        if (params.count("workload.dtype") && !workloads::is_scalesim_path(f))
          throw std::runtime_error(
              "workload.dtype applies to models, built-in workloads and SCALE-Sim CSV "
              "topologies; the workload file " +
              f + " gives each tensor its dtype");
        a.insert(a.end(), {"--workload", f});
      } else if (params.count("workload.gemm")) {
        workloads::builtin::parse_gemm(params["workload.gemm"], dtype ? *dtype : arch::DType::bf16);
        a.insert(a.end(), {"--gemm", params["workload.gemm"]});
      } else if (params.count("workload.conv")) {
        workloads::builtin::parse_conv(params["workload.conv"], dtype ? *dtype : arch::DType::bf16);
        a.insert(a.end(), {"--conv", params["workload.conv"]});
      } else if (params.count("workload.attention")) {
        workloads::builtin::parse_attention(params["workload.attention"], dtype ? *dtype : arch::DType::bf16);
        a.insert(a.end(), {"--attention", params["workload.attention"]});
      } else {
        throw std::runtime_error("no workload: set base.model, base.workload, base.gemm, base.conv or base.attention");
      }
    } catch (const std::exception& e) {
      pp.error = one_line(e.what());
      out.push_back(std::move(pp));
      continue;
    }
    if (params.count("run.slice")) a.insert(a.end(), {"--slice", params["run.slice"]});
    if (params.count("run.mesh")) a.insert(a.end(), {"--mesh", params["run.mesh"]});
    // A workload file (YAML, JSON) gives each tensor its dtype: `run`
    // refuses --dtype for one (and a spec's workload.dtype is refused above).
    if (!params.count("workload.file") || workloads::is_scalesim_path(params["workload.file"]))
      a.insert(a.end(), {"--dtype", dtype_text});
    for (const auto& s : sets) a.insert(a.end(), {"--set", s});
    if (params.count("workload.fusion") && params["workload.fusion"] == "false") a.push_back("--no-fusion");
    if (params.count("workload.cmem") && params["workload.cmem"] == "false") a.push_back("--no-cmem");
    out.push_back(std::move(pp));
  }
  if (!spec.points.empty() && config_errors == spec.points.size()) {
    Diagnostic d;
    d.file = spec.file;
    d.key = "base";
    d.expected = "at least one point with a valid chip config";
    d.found = "every point fails; the first: " + one_line(first_config_error);
    throw ConfigError(d);
  }
  return out;
}

bool in_shard(const SweepPoint& p, int index, int count) {
  return count <= 1 || static_cast<int>(p.index % static_cast<std::size_t>(count)) == index;
}

}  // namespace tpusim::sim::sweep
