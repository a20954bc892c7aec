// Training tail of a generated workload: loss gradient, reverse-mode
// backward of the recorded forward ops, per-layer recomputation by the
// remat policy, and an Adam update with f32 master weights.
// Remat (PhaseOptions::remat, docs/remat.md): before a layer's backward
// the policy re-emits (layers.<i>.recompute.*) the forward ops of the
// layer whose outputs it did not keep and that the backward reads,
// directly or through other re-emitted ops (dead ones, e.g. the last
// residual add, are left out): `full` keeps nothing but the layer inputs
// (its weight gathers are re-emitted too), `minimal` keeps matmul and
// collective outputs, `selective` the same but the FFN input projections'
// (gate_proj, up_proj, fc1).
// The offloaded policies (qkv_proj_offloaded, minimal_offloaded) keep their
// matmul outputs in host memory, those the backward reads (directly or
// through recomputation; not a dense FFN's down projection, as JAX saves
// only the residuals the backward needs): a `copy` to host is inserted in forward
// right after each such matmul (<matmul>.offload, result <tensor>.host;
// after the all_reduce or reduce_scatter that reduces a row-parallel
// matmul's partial sums, taking the reduced tensor),
// and before the backward of layer i the copies back to HBM of layer i and
// of layer i-1 are emitted (layers.<i>.reload.*: one layer of prefetch, so
// that the host link reads the next layer's tensors while this one's
// backward computes); the backward and the recomputation read the copies.
// `custom` (MaxText's remat_policy=custom) keeps or offloads the outputs
// of the ops MaxText names (named_activation: q/k/v/o projections, the
// attention, the FFN projections) as RematCustom places them, and with
// decoder_layer_input=offload also each layer's input, copied to host
// after the op outside the layer that makes it and read back with the
// layer's other offloaded tensors (layers.<i>.reload.input.<tensor>).
// Models: per forward matmul an activation-gradient and a weight-gradient
// matmul (the transposed einsums, so 2x the forward matmul FLOPs);
// attention backward as two fused attention ops over the forward q/k/v
// (2x the forward attention FLOPs: one for dQ/dK, one for dV; GQA key/value
// gradients summed over each head group); elementwise, norm and softmax
// gradients as elementwise/norm/reduce ops over the same shapes; layout
// gradients as the inverse layout op; gradients of gathers and slices as a
// gather with an inverse-index input (the IR has no scatter-add: the cost is
// the dense gradient write, as frameworks with dense embedding gradients
// do). Adam: m, v and the master weight in f32, unfused elementwise ops
// (PhaseOptions::optimizer_dtype bf16: m and v bf16, no master).
// Sharded programs: all_gather's gradient is a reduce_scatter (FSDP weight
// gradients land on the shard), reduce_scatter's an all_gather, all_reduce's
// the identity (Megatron's "g"), all_to_all's the reverse all_to_all; FSDP
// weights are gathered again for the activation-gradient matmuls (ZeRO-3
// frees them after forward; with recompute the re-emitted forward gathers
// them); TrainingCollectives adds Megatron's "f" all_reduces and the
// data-parallel weight-gradient all_reduce, emitted as soon as a weight's
// gradient is complete so that it can overlap the rest of backward;
// activations sequence parallelism gathered are gathered again for the
// weight-gradient matmuls; vocab-split logits get the vocab-parallel
// cross-entropy (max, sum of exponentials and target logit all_reduced).
// LoRA (PhaseOptions::lora): only adapter weights start the set of
// tensors needing gradients, so base weights get no weight-gradient
// matmul and no Adam state.
// Leaves out: the -onehot(label) term of the loss gradient (one element per
// row), FlashAttention's extra score recomputation in backward, the dK/dV
// op's read of the output gradient (the dQ op reads it in q's place),
// gradient clipping, weight decay, conv2d backward.
#include <algorithm>
#include <map>
#include <set>

#include "models/generators.h"
#include "models/lora.h"

namespace tpusim::models::detail {

using namespace workloads;

namespace {

class Backward {
 public:
  Backward(WorkloadBuilder& b, const PhaseOptions& o, const TrainingCollectives& tc) : b_(b), o_(o), tc_(tc) {}

  void run(const TensorRef& logits) {
    for (const auto& t : b_.peek().tensors)
      // LoRA fine-tuning: the base weights are frozen, only the adapters
      // get gradients and optimizer state (activation gradients still
      // flow through every op downstream of an adapter).
      if (t.kind == TensorKind::weight && (!o_.lora.enabled() || is_lora_weight(t.name))) {
        rg_.insert(t.name);
        weights_.push_back(t.name);
      }
    fwd_ = b_.peek().ops;  // copy: the builder grows while we read
    mark_requires_grad();
    if (o_.remat_offloads()) {
      insert_offloads();  // decides from the forward as it was
      fwd_ = b_.peek().ops;
      mark_requires_grad();
    }
    for (std::size_t i = 0; i < fwd_.size(); ++i) {
      for (const auto& out : fwd_[i].outputs) producer_[out] = i;
      for (const auto& in : fwd_[i].inputs)
        if (!first_use_.count(in)) first_use_[in] = i;
    }
    contrib_[logits.name].push_back(tc_.vocab_split_axes.empty() ? b_.softmax("loss.grad", logits)
                                                                 : vocab_parallel_loss(logits));
    int current_layer = -1;
    for (std::size_t r = fwd_.size(); r-- > 0;) {
      const Op& op = fwd_[r];
      int layer = layer_of(op.name);
      if (o_.recompute_any() && layer >= 0 && layer != current_layer) recompute(layer);
      current_layer = layer;
      if (contrib_.count(op.outputs[0])) backward_op(op, grad(op.outputs[0]));
      for (const auto& in : op.inputs) {
        auto it = tc_.weight_grad_all_reduce.find(in);
        if (it == tc_.weight_grad_all_reduce.end() || first_use_.at(in) != r || !contrib_.count(in)) continue;
        contrib_[in] = {b_.all_reduce(in + ".grad_all_reduce", grad(in), it->second)};
      }
    }
    optimizer();
  }

 private:
  WorkloadBuilder& b_;
  const PhaseOptions& o_;
  const TrainingCollectives& tc_;
  std::map<std::string, std::size_t> producer_, first_use_;  // forward op index per tensor
  std::set<std::string> synced_;                             // activations whose gradient was all_reduced
  std::map<std::string, TensorRef> regathered_;              // FSDP weight -> gathered again for backward
  std::vector<Op> fwd_;
  std::set<std::string> rg_;
  std::vector<std::string> weights_;
  std::map<std::string, std::vector<TensorRef>> contrib_;
  std::map<std::string, std::string> rename_;            // forward tensor -> recomputed copy
  std::set<int> reloaded_;                               // layers whose offloaded tensors were read back
  std::map<int, std::set<std::string>> layer_inputs_;    // offloaded layer inputs per layer
  std::map<std::string, std::string> offloaded_tensor_;  // offloaded op -> the tensor put on host

  static bool differentiable(const Op& op, std::size_t i) { return !(op.kind == OpKind::gather && i == 1); }

  static int layer_of(const std::string& n) {
    if (n.rfind("layers.", 0) != 0) return -1;
    std::size_t dot = n.find('.', 7);
    return std::stoi(n.substr(7, dot - 7));
  }

  // Adds to rg_ the forward tensors computed from one that needs a
  // gradient through a differentiable input.
  void mark_requires_grad() {
    for (const auto& op : fwd_) {
      bool any = false;
      for (std::size_t i = 0; i < op.inputs.size(); ++i)
        any = any || (differentiable(op, i) && rg_.count(op.inputs[i]));
      if (any)
        for (const auto& out : op.outputs) rg_.insert(out);
    }
  }

  TensorRef fwd(const std::string& name) const {
    auto it = rename_.find(name);
    return b_.ref(it == rename_.end() ? name : it->second);
  }

  // Forward tensors whose values (not only shapes) the backward rule of
  // `op` reads (see backward_op).
  std::vector<std::string> backward_reads(const Op& op) const {
    std::vector<std::string> r;
    switch (op.kind) {
      case OpKind::matmul:
        if (wants(op, 1)) r.push_back(op.inputs[0]);
        if (wants(op, 0)) r.push_back(op.inputs[1]);
        break;
      case OpKind::attention: r = {op.inputs[0], op.inputs[1], op.inputs[2]}; break;
      case OpKind::elementwise: {
        const EwKind k = op.as<ElementwiseAttrs>().kind;
        if (k == EwKind::cast || k == EwKind::add || k == EwKind::sub) break;
        r = op.inputs;
        break;
      }
      case OpKind::rms_norm:
      case OpKind::layer_norm:
        r = {op.inputs[0], op.outputs[0]};
        if (op.inputs.size() > 1) r.push_back(op.inputs[1]);
        break;
      case OpKind::softmax: r = {op.outputs[0]}; break;
      case OpKind::conv2d:
      case OpKind::reduce:
      case OpKind::gather:
      case OpKind::transpose:
      case OpKind::reshape:
      case OpKind::concat:
      case OpKind::slice:
      case OpKind::all_gather:
      case OpKind::reduce_scatter:
      case OpKind::all_reduce:
      case OpKind::all_to_all:
      case OpKind::collective_permute:
      case OpKind::broadcast:
      case OpKind::copy: break;
    }
    return r;
  }

  // MaxText's "mlpwi": the FFN's input projections (dense or expert).
  static bool ffn_input_projection(const std::string& n) {
    for (const char* s : {".gate_proj", ".up_proj", ".fc1"}) {
      const std::size_t l = std::char_traits<char>::length(s);
      if (n.size() >= l && n.compare(n.size() - l, l, s) == 0) return true;
    }
    return false;
  }

  // MaxText's query_proj, key_proj, value_proj (and a fused qkv_proj).
  static bool qkv_projection(const std::string& n) {
    for (const char* s : {".q_proj", ".k_proj", ".v_proj", ".qkv_proj"}) {
      const std::size_t l = std::char_traits<char>::length(s);
      if (n.size() >= l && n.compare(n.size() - l, l, s) == 0) return true;
    }
    return false;
  }

  // MaxText's name (RematTensor) for the activation this forward op
  // produces; RematTensor::count for one it does not name.
  static RematTensor named_activation(const Op& op) {
    if (op.kind == OpKind::attention) return RematTensor::context;
    if (op.kind != OpKind::matmul) return RematTensor::count;
    static const std::pair<const char*, RematTensor> names[] = {
        {".q_proj", RematTensor::query_proj}, {".qkv_proj", RematTensor::query_proj},
        {".k_proj", RematTensor::key_proj},   {".v_proj", RematTensor::value_proj},
        {".o_proj", RematTensor::out_proj},   {".gate_proj", RematTensor::mlpwi_0},
        {".fc1", RematTensor::mlpwi_0},       {".up_proj", RematTensor::mlpwi_1},
        {".down_proj", RematTensor::mlpwo},   {".fc2", RematTensor::mlpwo},
        {".attn.core", RematTensor::context}};  // dense attention's PV matmul
    const std::string& n = op.name;
    for (const auto& [s, t] : names) {
      const std::size_t l = std::char_traits<char>::length(s);
      if (n.size() >= l && n.compare(n.size() - l, l, s) == 0) return t;
    }
    return RematTensor::count;
  }

  // True if the policy keeps this forward op's output for backward.
  bool kept(const Op& op) const {
    if (is_collective(op.kind) || op.kind == OpKind::copy) return true;
    if (o_.remat == RematPolicy::custom) {
      const RematTensor t = named_activation(op);
      return t != RematTensor::count && o_.remat_custom.at(t) != RematPlace::remat;
    }
    if (op.kind != OpKind::matmul) return false;
    switch (o_.remat) {
      case RematPolicy::minimal:
      case RematPolicy::minimal_offloaded: return true;
      case RematPolicy::qkv_proj_offloaded: return qkv_projection(op.name);
      case RematPolicy::none:
      case RematPolicy::full:
      case RematPolicy::selective:
      case RematPolicy::custom: break;
    }
    return !ffn_input_projection(op.name);
  }
  // True if the policy keeps this forward op's output in host memory.
  bool offloaded(const Op& op) const {
    if (layer_of(op.name) < 0) return false;
    if (o_.remat == RematPolicy::custom) {
      const RematTensor t = named_activation(op);
      return t != RematTensor::count && o_.remat_custom.at(t) == RematPlace::offload;
    }
    return o_.remat_offloads() && op.kind == OpKind::matmul && kept(op);
  }
  // True if the policy offloads the layer inputs (custom's
  // decoder_layer_input=offload).
  bool inputs_offloaded() const {
    return o_.remat == RematPolicy::custom &&
           o_.remat_custom.at(RematTensor::decoder_layer_input) == RematPlace::offload;
  }

  // Inserts, after each op whose output the policy offloads, its copy to
  // host: the matmul (or attention) outputs it names, and with the layer
  // inputs offloaded each tensor a layer reads from an op outside it (the
  // previous layer's output, or the embedding's for layer 0). A matmul
  // whose only reader is a reduction collective (a row-parallel projection
  // under tensor parallelism: its partial sums, all_reduced or, with
  // sequence parallelism, reduce-scattered) has that collective's result
  // offloaded instead, right after it: XLA partitions the einsum with the
  // reduction inside, so the activation the policy names is the reduced
  // (and scattered) tensor, never the partial sums (offloaded_tensor).
  // Only tensors the backward reads go to host, directly or through the
  // ops the policy re-emits (JAX saves the residuals the backward needs
  // and no others): a dense FFN's down projection output, which only the
  // layer's last residual add reads, stays put.
  void insert_offloads() {
    const std::vector<Op>& ops = fwd_;
    std::set<std::string> needed;
    std::set<int> layers;
    for (const auto& op : ops)
      if (layer_of(op.name) >= 0) layers.insert(layer_of(op.name));
    for (int l : layers) {
      std::set<std::string> of_layer;
      (void)to_recompute(l, &of_layer);
      needed.insert(of_layer.begin(), of_layer.end());
    }
    std::map<std::string, int> made_by;
    std::map<std::string, std::vector<std::size_t>> readers;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      for (const auto& out : ops[i].outputs) made_by[out] = layer_of(ops[i].name);
      for (const auto& in : ops[i].inputs) readers[in].push_back(i);
    }
    std::set<std::string> inputs;
    if (inputs_offloaded())
      for (const auto& op : ops) {
        const int l = layer_of(op.name);
        if (l < 0) continue;
        for (const auto& in : op.inputs) {
          auto it = made_by.find(in);
          if (it != made_by.end() && it->second != l) {
            inputs.insert(in);
            layer_inputs_[l].insert(in);
          }
        }
      }
    // (position after which to insert, the copy); stable by position.
    std::vector<std::pair<std::size_t, Op>> copies;
    std::set<std::string> copied;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const bool input = !ops[i].outputs.empty() && inputs.count(ops[i].outputs[0]);
      if (!input && !offloaded(ops[i])) continue;
      std::size_t at = i;
      if (!input && ops[i].kind == OpKind::matmul) {
        auto r = readers.find(ops[i].outputs[0]);
        if (r != readers.end() && r->second.size() == 1) {
          const Op& reader = ops[r->second[0]];
          if (reader.kind == OpKind::reduce_scatter || reader.kind == OpKind::all_reduce) at = r->second[0];
        }
      }
      if (!input && !needed.count(ops[at].outputs[0])) continue;
      if (!input) offloaded_tensor_[ops[i].name] = ops[at].outputs[0];
      if (!copied.insert(ops[at].outputs[0]).second) continue;
      Op c;
      c.name = ops[at].name + ".offload";
      c.kind = OpKind::copy;
      c.inputs = {ops[at].outputs[0]};
      c.outputs = {ops[at].outputs[0] + ".host"};
      c.attrs = CopyAttrs{MemSpace::host};
      copies.emplace_back(at, std::move(c));
    }
    std::stable_sort(copies.begin(), copies.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::size_t added = 0;
    for (auto& [at, c] : copies) b_.insert_op(at + 1 + added++, std::move(c));
  }

  // Emits the copies back to HBM of layer `layer`'s offloaded tensors (once)
  // and makes backward and recomputation read them.
  void reload(int layer) {
    if (layer < 0 || !reloaded_.insert(layer).second) return;
    const std::string pre = "layers." + std::to_string(layer) + ".";
    auto copy_back = [&](const std::string& out, const std::string& name) {
      Op c;
      c.name = name;
      c.kind = OpKind::copy;
      c.inputs = {out + ".host"};
      c.attrs = CopyAttrs{MemSpace::hbm};
      rename_[out] = b_.add_op(c).name;
    };
    auto in = layer_inputs_.find(layer);
    if (in != layer_inputs_.end())
      for (const auto& x : in->second) copy_back(x, pre + "reload.input." + x);
    for (const Op& op : fwd_) {
      auto put = offloaded_tensor_.find(op.name);
      if (layer_of(op.name) != layer || put == offloaded_tensor_.end()) continue;
      const std::string& out = put->second;
      copy_back(out, pre + "reload." + out.substr(pre.size()));  // offloaded tensors are the layer's
    }
  }

  // Ops of the layer the policy re-emits: the ops whose outputs are not
  // kept (full: none is, not even the weight gathers) and that the
  // backward reads from, walked back through their inputs until a kept
  // tensor or the layer's input. Ops nobody reads again (the layer's last
  // residual add) are not re-emitted, as XLA drops dead code.
  // `needed` (when given) collects the forward tensors the layer's
  // backward reads, directly or through the re-emitted ops.
  std::vector<bool> to_recompute(int layer, std::set<std::string>* needed_out = nullptr) const {
    std::vector<bool> emit(fwd_.size(), false);
    const bool full = o_.remat == RematPolicy::full;
    std::set<std::string> local;
    std::set<std::string>& needed = needed_out ? *needed_out : local;
    for (const Op& op : fwd_)
      if (layer_of(op.name) == layer && rg_.count(op.outputs[0]))
        for (auto& t : backward_reads(op)) needed.insert(t);
    for (std::size_t i = fwd_.size(); i-- > 0;) {
      const Op& op = fwd_[i];
      if (layer_of(op.name) != layer || (!full && kept(op))) continue;
      bool used = false;
      for (const auto& out : op.outputs) used = used || needed.count(out);
      if (!used) continue;
      emit[i] = true;
      for (const auto& in : op.inputs) needed.insert(in);
    }
    return emit;
  }

  // Re-emits the forward ops of layer `layer` the remat policy recomputes,
  // so that its backward reads fresh activations instead of ones kept from
  // the forward pass.
  void recompute(int layer) {
    reload(layer);
    reload(layer - 1);  // prefetch: read while this layer's backward computes
    const std::string pre = "layers." + std::to_string(layer) + ".";
    auto rn = [&](const std::string& n) { return pre + "recompute." + n.substr(pre.size()); };
    const std::vector<bool> emit = to_recompute(layer);
    for (std::size_t i = 0; i < fwd_.size(); ++i) {
      const Op& op = fwd_[i];
      if (!emit[i]) continue;
      Op c = op;
      c.name = rn(op.name);
      for (auto& in : c.inputs) {
        auto it = rename_.find(in);
        if (it != rename_.end()) {
          in = it->second;
          continue;
        }
        // A kept all_gather output that FSDP or sequence parallelism
        // gathers again for backward rather than keeping it alive.
        TensorRef r = regather(in);
        if (r.name == in) r = regather_activation(in);
        in = r.name;
      }
      for (auto& out : c.outputs) {
        std::string n = rn(out);
        rename_[out] = n;
        out = n;
      }
      b_.add_op(c);
    }
  }

  // Reduces or broadcasts g to `shape` (numpy broadcasting in reverse).
  TensorRef fit(const std::string& n, TensorRef g, const Shape& shape) {
    if (g.shape == shape) return g;
    const std::size_t lead = g.shape.size() > shape.size() ? g.shape.size() - shape.size() : 0;
    std::vector<std::int64_t> axes;
    for (std::size_t i = 0; i < g.shape.size(); ++i)
      if (i < lead || (shape[i - lead] == 1 && g.shape[i] != 1)) axes.push_back(static_cast<std::int64_t>(i));
    if (!axes.empty()) g = b_.reduce(n + ".reduce", g, ReduceKind::sum, axes, true);
    if (g.shape.size() != shape.size()) {
      Shape s(shape.size(), 1);
      for (std::size_t i = 0; i < shape.size(); ++i) s[i] = g.shape[lead + i];
      g = b_.reshape(n + ".rank", g, s);
    }
    if (g.shape != shape) {  // size-1 dims of g that shape has wider
      Shape z(shape.size(), 1);
      for (std::size_t i = 0; i < shape.size(); ++i)
        if (g.shape[i] == 1) z[i] = shape[i];
      g = b_.add(n + ".expand", g, b_.input(n + ".zeros", z, g.dtype));
    }
    return g;
  }

  TensorRef grad(const std::string& name) {
    auto& cs = contrib_.at(name);
    const Shape& shape = b_.ref(name).shape;
    TensorRef g = fit(name + ".grad_fit0", cs[0], shape);
    for (std::size_t i = 1; i < cs.size(); ++i)
      g = b_.add(name + ".grad_sum" + std::to_string(i), g, fit(name + ".grad_fit" + std::to_string(i), cs[i], shape));
    auto sync = tc_.activation_grad_all_reduce.find(name);
    if (sync != tc_.activation_grad_all_reduce.end() && synced_.insert(name).second)
      g = b_.all_reduce(name + ".grad_all_reduce", g, sync->second);
    contrib_.at(name) = {g};
    return g;
  }

  void give(const Op& op, std::size_t i, const TensorRef& g) {
    if (differentiable(op, i) && rg_.count(op.inputs[i])) contrib_[op.inputs[i]].push_back(g);
  }
  bool wants(const Op& op, std::size_t i) const { return differentiable(op, i) && rg_.count(op.inputs[i]); }

  void backward_op(const Op& op, const TensorRef& dy) {
    const std::string& n = op.name;
    const DType ad = o_.activation_dtype;
    auto in = [&](std::size_t i) { return fwd(op.inputs[i]); };
    switch (op.kind) {
      case OpKind::matmul: {
        const std::string& eq = op.as<MatmulAttrs>().equation;
        // The gradients' einsums use the same labels, so a causal mask's
        // (query, key) labels carry over (MatmulAttrs::causal).
        const std::string& causal = op.as<MatmulAttrs>().causal;
        const std::int64_t window = op.as<MatmulAttrs>().window;
        std::size_t comma = eq.find(','), arrow = eq.find("->");
        std::string l = eq.substr(0, comma), r = eq.substr(comma + 1, arrow - comma - 1), out = eq.substr(arrow + 2);
        if (wants(op, 0))
          give(op, 0,
               b_.matmul(n + ".grad_lhs", dy, regather(op.inputs[1]), out + "," + r + "->" + l, ad, causal, window));
        if (wants(op, 1))
          give(op, 1,
               b_.matmul(n + ".grad_rhs", regather_activation(op.inputs[0]), dy, l + "," + out + "->" + r, ad, causal,
                         window));
        return;
      }
      case OpKind::attention: {
        const bool causal = op.as<AttentionAttrs>().causal;
        const std::int64_t window = op.as<AttentionAttrs>().window;  // the backward kernels skip what the forward did
        TensorRef q = in(0), k = in(1), v = in(2);
        // Flash attention's two backward kernels (AttentionPass): the dQ
        // kernel reads the output gradient (dP = dO V^T): it takes q's
        // place (same shape), so that the op waits for dO and dO's buffer
        // is freed once read; the dK/dV op reads q. The fused kernel
        // (PhaseOptions::fused_attention_backward) is one op reading dO,
        // K and V whose output stands for dQ, dK and dV alike.
        // MLA's dO is narrower than q (value width 128 against 192 for
        // DeepSeek-V3): zero-padded to q's width so that it can stand in
        // q's place too (a small copy, 1.5x dO's bytes), rather than be
        // left unread and kept to the end of the step.
        TensorRef q_place = q;
        if (dy.shape == q.shape && dy.dtype == q.dtype) {
          q_place = dy;
        } else if (dy.rank() == 4 && q.rank() == 4 && dy.dtype == q.dtype && dy.dim(0) == q.dim(0) &&
                   dy.dim(1) == q.dim(1) && dy.dim(2) == q.dim(2) && dy.dim(3) < q.dim(3)) {
          TensorRef zeros =
              b_.input(n + ".grad_do_zeros", {dy.dim(0), dy.dim(1), dy.dim(2), q.dim(3) - dy.dim(3)}, dy.dtype);
          q_place = b_.concat(n + ".grad_do_pad", {dy, zeros}, 3);
        }
        TensorRef dq, dv;
        // Fixed blocks (PhaseOptions::attention_blocks): the dQ kernel's
        // and the dK/dV kernel's, which the fused kernel takes too.
        const auto& blocks = o_.attention_blocks;
        if (o_.fused_attention_backward) {
          dq = dv = b_.attention(n + ".grad_qkv", q_place, k, v, causal, std::nullopt, AttentionPass::grad_qkv, window,
                                 blocks.dkv);
          // The fused op's output has the value width; MLA's dQ and dK are
          // wider (192 against 128 for DeepSeek-V3): zero-padded to q's
          // width (a small copy) so that it stands for them too.
          if (dq.rank() == 4 && q.rank() == 4 && dq.dim(3) < q.dim(3)) {
            TensorRef zeros =
                b_.input(n + ".grad_qk_zeros", {dq.dim(0), dq.dim(1), dq.dim(2), q.dim(3) - dq.dim(3)}, dq.dtype);
            dq = b_.concat(n + ".grad_qk_pad", {dq, zeros}, 3);
          }
        } else {
          dq = b_.attention(n + ".grad_q", q_place, k, k, causal, std::nullopt, AttentionPass::grad_q, window,
                            blocks.dq);
          dv = b_.attention(n + ".grad_kv", q, k, v, causal, std::nullopt, AttentionPass::grad_kv, window, blocks.dkv);
        }
        const std::int64_t H = q.dim(2), KV = k.dim(2);
        auto group_sum = [&](const std::string& nn, const TensorRef& x) {
          if (H == KV) return x;
          TensorRef r = b_.reshape(nn + ".groups", x, {x.dim(0), x.dim(1), KV, H / KV, x.dim(3)});
          return b_.reduce(nn, r, ReduceKind::sum, {3});
        };
        // Keys longer than queries (context parallelism: local queries
        // over the gathered sequence): each chip writes a partial dK/dV
        // for every key. The attention op's output has the queries'
        // length, so the key-length gradient is its broadcast (an
        // elementwise write of the key-length tensor, the kernel's dK/dV
        // store); the FLOPs stay those of the two attention ops.
        auto to_keys = [&](const std::string& nn, const TensorRef& g) {
          const std::int64_t Sq = g.dim(1), Sk = k.dim(1);
          if (Sq == Sk) return g;
          if (Sk % Sq != 0)
            throw ModelInternalError("training: attention '" + n + "' has " + std::to_string(Sk) +
                                     " keys, not a multiple of its " + std::to_string(Sq) + " queries");
          TensorRef r = b_.reshape(nn + ".rows", g, {g.dim(0), 1, Sq, g.dim(2), g.dim(3)});
          r = b_.add(nn + ".expand", r, b_.input(nn + ".zeros", {g.dim(0), Sk / Sq, Sq, g.dim(2), g.dim(3)}, g.dtype));
          return b_.reshape(nn + ".keys", r, {g.dim(0), Sk, g.dim(2), g.dim(3)});
        };
        give(op, 0, dq);
        if (wants(op, 1)) give(op, 1, to_keys(n + ".grad_k_keys", group_sum(n + ".grad_k", dq)));
        if (wants(op, 2)) give(op, 2, to_keys(n + ".grad_v_keys", group_sum(n + ".grad_v", dv)));
        return;
      }
      case OpKind::elementwise: {
        const auto& a = op.as<ElementwiseAttrs>();
        const std::size_t arity = op.inputs.size();
        for (std::size_t i = 0; i < arity; ++i) {
          if (!wants(op, i)) continue;
          const std::string gn = n + ".grad_" + std::to_string(i);
          TensorRef g;
          if (a.kind == EwKind::cast)
            g = b_.cast(gn, dy, in(i).dtype);
          else if (a.kind == EwKind::add)
            g = dy;
          else if (a.kind == EwKind::sub)
            g = i == 0 ? dy : b_.elementwise(gn, EwKind::neg, {dy});
          else if (arity == 1)  // f'(x) recomputed as f(x): same transcendental count
            g = b_.mul(gn, dy, b_.elementwise(gn + "_deriv", a.kind, {in(0)}));
          else {
            TensorRef other = in(arity == 2 ? 1 - i : (i + 1) % arity);
            g = other.dtype == dy.dtype ? b_.mul(gn, dy, other) : dy;
          }
          give(op, i, fit(gn + "_fit", g, in(i).shape));
        }
        return;
      }
      case OpKind::rms_norm:
      case OpKind::layer_norm: {
        TensorRef x = in(0);
        std::optional<TensorRef> scale;
        if (op.inputs.size() > 1) scale = in(1);
        TensorRef xn = op.kind == OpKind::rms_norm ? b_.rms_norm(n + ".grad_norm", dy, scale)
                                                   : b_.layer_norm(n + ".grad_norm", dy, scale);
        if (wants(op, 0)) give(op, 0, b_.mul(n + ".grad_x", xn, x));
        std::vector<std::int64_t> rows;
        for (int i = 0; i + 1 < dy.rank(); ++i) rows.push_back(i);
        if (op.inputs.size() > 1 && wants(op, 1))
          give(op, 1,
               b_.reduce(n + ".grad_scale", b_.mul(n + ".grad_scale_prod", dy, fwd(op.outputs[0])), ReduceKind::sum,
                         rows));
        if (op.inputs.size() > 2 && wants(op, 2)) give(op, 2, b_.reduce(n + ".grad_bias", dy, ReduceKind::sum, rows));
        return;
      }
      case OpKind::softmax: {
        TensorRef y = fwd(op.outputs[0]);
        TensorRef p = b_.mul(n + ".grad_prod", dy, y);
        TensorRef s = b_.reduce(n + ".grad_rowsum", p, ReduceKind::sum, {op.as<SoftmaxAttrs>().axis}, true);
        give(op, 0, b_.mul(n + ".grad_x", y, b_.elementwise(n + ".grad_centered", EwKind::sub, {dy, s})));
        return;
      }
      case OpKind::reduce: {
        const auto& a = op.as<ReduceAttrs>();
        Shape ks = in(0).shape;
        for (auto ax : a.axes)
          ks[static_cast<std::size_t>(ax < 0 ? ax + static_cast<std::int64_t>(ks.size()) : ax)] = 1;
        give(op, 0, a.keep_dims ? dy : b_.reshape(n + ".grad_keepdims", dy, ks));
        return;
      }
      case OpKind::gather:
      case OpKind::slice: {
        // dy flattened to the looked-up rows, gathered back by an
        // inverse-index input with one entry per row of the source.
        TensorRef x = in(0);
        Shape rows = op.kind == OpKind::gather ? Shape{x.dim(0)} : x.shape;
        Shape flat;
        if (op.kind == OpKind::gather) {
          flat = {workloads::num_elements(b_.ref(op.inputs[1]).shape)};
          flat.insert(flat.end(), x.shape.begin() + 1, x.shape.end());
        } else {
          flat = {workloads::num_elements(dy.shape)};
        }
        TensorRef df = b_.reshape(n + ".grad_flat", dy, flat);
        TensorRef idx = b_.input(n + ".grad_index", rows, DType::f32);
        give(op, 0, b_.gather(n + ".grad_x", df, idx));
        return;
      }
      case OpKind::reshape: give(op, 0, b_.reshape(n + ".grad_x", dy, in(0).shape)); return;
      case OpKind::transpose: {
        const auto& p = op.as<TransposeAttrs>().perm;
        std::vector<std::int64_t> inv(p.size());
        for (std::size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<std::int64_t>(i);
        give(op, 0, b_.transpose(n + ".grad_x", dy, inv));
        return;
      }
      case OpKind::concat: {
        std::int64_t ax = op.as<ConcatAttrs>().axis;
        if (ax < 0) ax += dy.rank();
        std::int64_t off = 0;
        for (std::size_t i = 0; i < op.inputs.size(); ++i) {
          TensorRef x = in(i);
          std::vector<std::int64_t> s(dy.rank(), 0), l(dy.shape.begin(), dy.shape.end());
          s[ax] = off;
          l[ax] = off + x.dim(static_cast<int>(ax));
          off = l[ax];
          if (wants(op, i)) give(op, i, b_.slice(n + ".grad_" + std::to_string(i), dy, s, l));
        }
        return;
      }
      case OpKind::all_gather: {
        const auto& a = op.as<CollectiveAttrs>();
        give(op, 0, b_.reduce_scatter(n + ".grad_x", dy, a.mesh_axes, a.dim));
        return;
      }
      case OpKind::reduce_scatter: {
        const auto& a = op.as<CollectiveAttrs>();
        give(op, 0, b_.all_gather(n + ".grad_x", dy, a.mesh_axes, a.dim));
        return;
      }
      case OpKind::all_reduce: give(op, 0, dy); return;
      case OpKind::copy: give(op, 0, dy); return;
      case OpKind::all_to_all: {
        const auto& a = op.as<CollectiveAttrs>();
        give(op, 0, b_.all_to_all(n + ".grad_x", dy, a.mesh_axes, a.concat_dim, a.split_dim));
        return;
      }
      // No forward program of the zoo has these.
      case OpKind::conv2d:
      case OpKind::collective_permute:
      case OpKind::broadcast: break;
    }
    throw ModelInternalError("training: no backward rule for op '" + n + "' of kind " +
                             std::string(op_kind_name(op.kind)));
  }

  // The rhs of an activation-gradient matmul: an FSDP weight gathered
  // again (once per weight) unless recompute already re-gathered it.
  TensorRef regather(const std::string& name) {
    auto p = producer_.find(name);
    if (o_.remat == RematPolicy::full || p == producer_.end()) return fwd(name);
    const Op& g = fwd_[p->second];
    if (g.kind != OpKind::all_gather || b_.ref(g.inputs[0]).shape.empty() ||
        b_.peek().find_tensor(g.inputs[0])->kind != TensorKind::weight)
      return fwd(name);
    auto it = regathered_.find(name);
    if (it != regathered_.end()) return it->second;
    const auto& a = g.as<CollectiveAttrs>();
    TensorRef w = b_.all_gather(g.name + "_bwd", b_.ref(g.inputs[0]), a.mesh_axes, a.dim);
    regathered_[name] = w;
    return w;
  }

  // An activation forward all_gathered that backward gathers again
  // (TrainingCollectives::regather_in_backward), once per tensor. What is
  // gathered is the shard as backward has it: recomputed when the policy
  // re-emits the op that made it (a sequence-parallel norm's output, which
  // the policy does not keep, is rebuilt and gathered again, so the
  // forward's shard is freed once the forward gather has read it).
  TensorRef regather_activation(const std::string& name) {
    if (o_.remat == RematPolicy::full || !tc_.regather_in_backward.count(name)) return fwd(name);
    auto it = regathered_.find(name);
    if (it != regathered_.end()) return it->second;
    const Op& g = fwd_[producer_.at(name)];
    if (g.kind != OpKind::all_gather)
      throw ModelInternalError("training: '" + name + "' is to be gathered again but no all_gather made it");
    const auto& a = g.as<CollectiveAttrs>();
    TensorRef x = b_.all_gather(g.name + "_bwd", fwd(g.inputs[0]), a.mesh_axes, a.dim);
    regathered_[name] = x;
    return x;
  }

  // Vocab-parallel cross-entropy (Megatron-LM's vocab_parallel_cross_entropy,
  // Shoeybi et al. 2019 section 3): each rank holds a slice of the
  // vocabulary, so the per-token max, sum of exponentials and target logit
  // are all_reduced, [batch, seq, 1] in f32 each. Full-size tensors stay in
  // the logits' dtype (as a fused loss kernel reads them); only the
  // per-token statistics are cast. The loss gradient softmax - onehot is
  // this rank's exponentials over the global sum (the onehot term left
  // out, as in the unsharded loss).
  TensorRef vocab_parallel_loss(const TensorRef& logits) {
    const auto& ax = tc_.vocab_split_axes;
    const DType f32 = DType::f32, ld = logits.dtype;
    const std::int64_t last = logits.rank() - 1;
    auto cast = [&](const std::string& n, const TensorRef& x, DType to) {
      return x.dtype == to ? x : b_.cast(n, x, to);
    };
    TensorRef mx = cast("loss.max_f32", b_.reduce("loss.max_local", logits, ReduceKind::max, {last}, true), f32);
    mx = b_.all_reduce("loss.max.all_reduce", mx, ax, ReduceKind::max);
    TensorRef sh = b_.elementwise("loss.shifted", EwKind::sub, {logits, cast("loss.max_global", mx, ld)});
    TensorRef e = b_.elementwise("loss.exp", EwKind::exp, {sh});
    TensorRef se = cast("loss.sum_exp_f32", b_.reduce("loss.sum_exp_local", e, ReduceKind::sum, {last}, true), f32);
    se = b_.all_reduce("loss.sum_exp.all_reduce", se, ax);
    // Target logit: the rank whose slice holds the label picks it, the
    // others contribute 0 (the labels input indexes the flattened logits).
    Shape rows(mx.shape.begin(), mx.shape.end() - 1);
    TensorRef flat = b_.reshape("loss.shifted_rows", sh, {workloads::num_elements(sh.shape), 1});
    TensorRef tgt = b_.gather("loss.target_local", flat, b_.input("loss.labels", rows, f32));
    tgt = b_.all_reduce("loss.target.all_reduce", cast("loss.target_f32", tgt, f32), ax);
    TensorRef per_token =
        b_.elementwise("loss.per_token", EwKind::sub, {b_.elementwise("loss.log_sum_exp", EwKind::log, {se}), tgt});
    std::vector<std::int64_t> all;
    for (std::int64_t i = 0; i < per_token.rank(); ++i) all.push_back(i);
    b_.reduce("loss", per_token, ReduceKind::mean, all);
    return b_.elementwise("loss.grad", EwKind::div, {e, cast("loss.sum_exp_global", se, ld)});
  }

  void optimizer() {
    const DType f32 = DType::f32;
    TensorRef b1 = b_.input("optimizer.beta1", {}, f32), b1c = b_.input("optimizer.one_minus_beta1", {}, f32);
    TensorRef b2 = b_.input("optimizer.beta2", {}, f32), b2c = b_.input("optimizer.one_minus_beta2", {}, f32);
    TensorRef eps = b_.input("optimizer.epsilon", {}, f32), lr = b_.input("optimizer.learning_rate", {}, f32);
    for (const auto& w : weights_) {
      if (!contrib_.count(w)) continue;
      TensorRef g = grad(w), wt = b_.ref(w);
      const std::string p = "optimizer." + w;
      // bf16 state (PhaseOptions::optimizer_dtype): m and v stored bf16,
      // the weight itself is the master; the arithmetic stays f32.
      const DType sd = o_.optimizer_dtype;
      auto to32 = [&](const std::string& n, const TensorRef& x) { return x.dtype == f32 ? x : b_.cast(n, x, f32); };
      TensorRef master = sd == f32 ? b_.weight(p + ".master", wt.shape, f32) : to32(p + ".w32", wt);
      TensorRef m = to32(p + ".m32", b_.weight(p + ".m", wt.shape, sd));
      TensorRef v = to32(p + ".v32", b_.weight(p + ".v", wt.shape, sd));
      TensorRef g32 = to32(p + ".g32", g);
      TensorRef m_new = b_.add(p + ".m_new", b_.mul(p + ".m_decay", m, b1), b_.mul(p + ".m_grad", g32, b1c));
      TensorRef g2 = b_.elementwise(p + ".g_sq", EwKind::square, {g32});
      TensorRef v_new = b_.add(p + ".v_new", b_.mul(p + ".v_decay", v, b2), b_.mul(p + ".v_grad", g2, b2c));
      TensorRef den = b_.add(p + ".denom", b_.elementwise(p + ".v_sqrt", EwKind::sqrt, {v_new}), eps);
      TensorRef step = b_.mul(p + ".step", b_.elementwise(p + ".update", EwKind::div, {m_new, den}), lr);
      TensorRef w_new = b_.elementwise(p + ".master_new", EwKind::sub, {master, step});
      auto store = [&](const std::string& n, const TensorRef& x, DType d) {
        TensorRef y = x.dtype == d ? x : b_.cast(n, x, d);
        b_.mark_output(y);
        return y;
      };
      store(p + ".m_store", m_new, sd);
      store(p + ".v_store", v_new, sd);
      if (sd == f32) {
        b_.mark_output(w_new);
        if (wt.dtype != f32) b_.cast(p + ".weight_new", w_new, wt.dtype);
      } else {
        store(p + ".weight_new", w_new, wt.dtype);
      }
    }
  }
};

}  // namespace

void append_training(WorkloadBuilder& b, const TensorRef& logits, const PhaseOptions& o,
                     const TrainingCollectives& tc) {
  Backward(b, o, tc).run(logits);
}

}  // namespace tpusim::models::detail
