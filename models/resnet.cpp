// ResNet generator (inference): bottleneck residual network in NHWC.
// Models: 7x7/2 stem convolution, batch norm folded to a per-channel scale
// and shift (inference form; gamma and beta are the parameters, running
// statistics are buffers and not counted), ReLU, bottleneck blocks
// (1x1, 3x3 with the stage stride as in torchvision's ResNet v1.5, 1x1
// with expansion), projection shortcuts on the first block of a stage,
// global average pooling (reduce mean) and the classifier.
// Leaves out: the stem's 3x3/2 max pool is modelled as a 2x2/2 max over
// non-overlapping windows (reshape + reduce max; the IR has no pooling op),
// which has the same output shape but 4 instead of 9 compares per output.
#include "models/generators.h"

namespace tpusim::models::detail {

using namespace workloads;

namespace {

class ResNetGen {
 public:
  ResNetGen(WorkloadBuilder& b, const ModelSpec& m, const PhaseOptions& o) : b_(b), r_(m.resnet), o_(o) {}

  Workload run() {
    const std::int64_t img = o_.image_size > 0 ? o_.image_size : r_.image_size;
    TensorRef x = b_.input("image", {o_.batch, img, img, r_.channels}, o_.activation_dtype);
    x = conv_bn("stem", x, 7, r_.stem_width, 2, true);
    // Stand-in max pool (see file comment); odd sizes are cropped first.
    std::int64_t hh = x.dim(1) / 2, ww = x.dim(2) / 2, c = x.dim(3);
    if (x.dim(1) % 2 || x.dim(2) % 2) x = b_.slice("stem.pool_crop", x, {0, 0, 0, 0}, {x.dim(0), hh * 2, ww * 2, c});
    x = b_.reshape("stem.pool_windows", x, {x.dim(0), hh, 2, ww, 2, c});
    x = b_.reduce("stem.pool", x, ReduceKind::max, {2, 4});
    for (std::size_t s = 0; s < r_.blocks.size(); ++s)
      for (std::int64_t k = 0; k < r_.blocks[s]; ++k)
        x = bottleneck("stages." + std::to_string(s) + ".blocks." + std::to_string(k), x, r_.widths[s],
                       k == 0 && s > 0 ? 2 : 1, k == 0);
    TensorRef pooled = b_.reduce("avgpool", x, ReduceKind::mean, {1, 2});
    TensorRef w = b_.weight("fc.weight", {pooled.dim(1), r_.classes}, o_.weight_dtype);
    TensorRef y = b_.matmul("fc", pooled, w, "", o_.activation_dtype);
    b_.add("fc.bias_add", y, b_.weight("fc.bias", {r_.classes}, o_.activation_dtype));
    return b_.build();
  }

 private:
  WorkloadBuilder& b_;
  const ResNetSpec& r_;
  const PhaseOptions& o_;

  TensorRef conv_bn(const std::string& n, const TensorRef& x, std::int64_t k, std::int64_t out, std::int64_t stride,
                    bool relu) {
    Conv2dAttrs a;
    a.stride_h = a.stride_w = stride;
    a.padding = k == 1 ? PaddingMode::valid : PaddingMode::same;
    a.out_dtype = o_.activation_dtype;
    TensorRef w = b_.weight(n + ".conv.weight", {k, k, x.dim(3), out}, o_.weight_dtype);
    TensorRef y = b_.conv2d(n + ".conv", x, w, a);
    y = b_.mul(n + ".bn_scale", y, b_.weight(n + ".bn.scale", {out}, o_.activation_dtype));
    y = b_.add(n + ".bn_shift", y, b_.weight(n + ".bn.shift", {out}, o_.activation_dtype));
    return relu ? b_.elementwise(n + ".relu", EwKind::relu, {y}) : y;
  }

  TensorRef bottleneck(const std::string& n, const TensorRef& x, std::int64_t width, std::int64_t stride,
                       bool project) {
    const std::int64_t out = width * r_.expansion;
    TensorRef y = conv_bn(n + ".1", x, 1, width, 1, true);
    y = conv_bn(n + ".2", y, 3, width, stride, true);
    y = conv_bn(n + ".3", y, 1, out, 1, false);
    TensorRef sc = project ? conv_bn(n + ".shortcut", x, 1, out, stride, false) : x;
    return b_.elementwise(n + ".relu", EwKind::relu, {b_.add(n + ".residual", y, sc)});
  }
};

}  // namespace

Workload generate_resnet(const ModelSpec& m, const PhaseOptions& o) {
  WorkloadBuilder b(m.name + "." + phase_name(o.phase));
  return ResNetGen(b, m, o).run();
}

}  // namespace tpusim::models::detail
