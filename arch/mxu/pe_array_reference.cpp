// PE-by-PE systolic array simulation; the microarchitecture is described in
// pe_array_reference.h. Registers are updated in place in an order that
// gives register semantics: PEs are visited bottom-right to top-left, so a
// PE reads its left and upper neighbours before they are overwritten, and
// the weight loader runs after the PEs so a commit reads S before the shift
// replaces it in the same cycle.
#include "arch/mxu/pe_array_reference.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "arch/mxu/bf16.h"

namespace tpusim::arch {

namespace {

constexpr int kLanes = PeArrayReference::kMaxLanes;

struct Tile {
  std::size_t op = 0;
  std::int64_t kt = 0, nt = 0;
  std::int64_t beats = 0, p = 1, q = 1;
  MxuCycles ready = 0;
  bool loaded = false, streamed = false;
  MxuCycles load_start = 0, stream_start = 0;
};

// Metadata each weight register carries for the hazard checks.
struct WeightTag {
  int tile = -1;           // whose weights (any row, possibly passing through)
  bool complete = false;   // the tile's final value for this PE
  bool committed = false;  // shadow only: copied into W
  std::int64_t uses = 0;   // active only: beats that used it
};

struct LhsReg {
  bool valid = false;
  bool first = false;  // first beat of a tile: commits S into W on its way
  int tile = -1;
  std::int64_t beat = 0;
  std::array<float, kLanes> v{};
};

struct PsumReg {
  bool valid = false;
  int tile = -1;
  std::int64_t beat = 0;
  std::array<float, kLanes> f{};
  std::array<std::int64_t, kLanes> i{};
};

struct Issued {
  bool valid = false;
  bool first = false;
  int tile = -1;
  std::int64_t beat = 0;
};

struct DeskewRow {
  int tile = -1;
  std::int64_t beat = -1;
  std::int64_t count = 0;
};

std::string pe_name(std::int64_t i, std::int64_t j) {
  return "PE(" + std::to_string(i) + "," + std::to_string(j) + ")";
}

}  // namespace

PeArrayReference::PeArrayReference(const MxuConfig& cfg) : g_(cfg) {
  for (DType t : kAllDTypes) {
    const MxuRate& r = g_.rate[static_cast<std::size_t>(t)];
    if (r.supported && r.rows_per_beat > kLanes)
      throw ConfigError("PE reference supports at most " + std::to_string(kLanes) + " rows per beat; mxu.throughput." +
                        std::string(dtype_name(t)) + " asks " + std::to_string(r.rows_per_beat));
  }
  if (g_.load_cycles < g_.rows)
    throw ConfigError("PE reference shifts one weight row per cycle: weight_load_cycles " +
                      std::to_string(g_.load_cycles) + " < rows " + std::to_string(g_.rows));
}

std::vector<RefMatmulResult> PeArrayReference::run(const std::vector<RefMatmul>& ops, const RefForcedSchedule& forced) {
  const std::int64_t R = g_.rows, C = g_.cols;
  const MxuCycles L = static_cast<MxuCycles>(g_.load_cycles);
  const bool db = g_.double_buffer;

  // Operands as the array sees them: bf16-rounded floats or int8 values.
  std::vector<std::vector<float>> A(ops.size()), B(ops.size());
  std::vector<bool> is_int(ops.size());
  std::vector<Tile> tiles;
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const RefMatmul& op = ops[o];
    if (op.dtype != DType::bf16 && op.dtype != DType::int8)
      throw ConfigError("PE reference takes int8 or bf16 inputs, not " + std::string(dtype_name(op.dtype)));
    const MxuRate& r = g_.rate_of(op.dtype);
    if (op.m < 1 || op.k < 1 || op.n < 1)
      throw ConfigError("PE reference op " + std::to_string(o) + ": m, k, n must be >= 1");
    if (op.a.size() != static_cast<std::size_t>(op.m * op.k) || op.b.size() != static_cast<std::size_t>(op.k * op.n))
      throw ConfigError("PE reference op " + std::to_string(o) + ": operand sizes do not match m*k and k*n");
    is_int[o] = op.dtype == DType::int8;
    const auto convert = [&](const std::vector<float>& in, std::vector<float>& out) {
      out.resize(in.size());
      for (std::size_t e = 0; e < in.size(); ++e) {
        if (is_int[o]) {
          if (in[e] != std::trunc(in[e]) || in[e] < -128 || in[e] > 127)
            throw ConfigError("PE reference op " + std::to_string(o) + ": int8 operand " + std::to_string(in[e]) +
                              " is not an integer in [-128, 127]");
          out[e] = in[e];
        } else {
          out[e] = round_to_bf16(in[e]);
        }
      }
    };
    convert(op.a, A[o]);
    convert(op.b, B[o]);
    const std::int64_t KT = (op.k + R - 1) / R, NT = (op.n + C - 1) / C;
    for (std::int64_t nt = 0; nt < NT; ++nt)
      for (std::int64_t kt = 0; kt < KT; ++kt) {
        Tile t;
        t.op = o;
        t.kt = kt;
        t.nt = nt;
        t.p = r.rows_per_beat;
        t.q = r.cycles_per_beat;
        t.beats = (op.m + t.p - 1) / t.p;
        t.ready = op.ready;
        tiles.push_back(t);
      }
  }
  const int ntiles = static_cast<int>(tiles.size());

  std::vector<float> W(static_cast<std::size_t>(R * C), 0.f), S(W.size(), 0.f);
  std::vector<WeightTag> wt(W.size()), st(W.size());
  std::vector<LhsReg> lhs(W.size());
  std::vector<PsumReg> psum(W.size());
  std::vector<Issued> issued(static_cast<std::size_t>(R));
  std::vector<DeskewRow> deskew(static_cast<std::size_t>(C));
  std::vector<float> deskew_f(static_cast<std::size_t>(C * C * kLanes));
  std::vector<std::int64_t> deskew_i(deskew_f.size());

  std::vector<std::vector<float>> acc_f(ops.size());
  std::vector<std::vector<std::int64_t>> acc_i(ops.size());
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const std::size_t n = static_cast<std::size_t>(ops[o].m * ops[o].n);
    if (is_int[o])
      acc_i[o].assign(n, 0);
    else
      acc_f[o].assign(n, 0.f);
  }
  std::vector<RefMatmulResult> res(ops.size());

  struct ActiveLoad {
    int tile;
    MxuCycles start;
  };
  std::vector<ActiveLoad> loads;
  std::vector<MxuCycles> column_step_cycle(static_cast<std::size_t>(C), std::numeric_limits<MxuCycles>::max());
  int next_load = 0, next_stream = 0, cur = -1;
  std::int64_t next_beat = 0;
  MxuCycles next_beat_at = 0, stream_free = 0, path_free = 0;
  bool any_issued = false;
  MxuCycles last_issue = 0;

  const auto hazard = [](MxuCycles t, const std::string& what) {
    throw PeHazardError("cycle " + std::to_string(t) + ": " + what);
  };
  const auto forced_at = [](const std::map<std::size_t, MxuCycles>& m, int tile) -> const MxuCycles* {
    auto it = m.find(static_cast<std::size_t>(tile));
    return it == m.end() ? nullptr : &it->second;
  };

  MxuCycles t = 0;
  for (;; ++t) {
    const bool in_flight = any_issued && t <= last_issue + static_cast<MxuCycles>(R + C - 2);
    if (next_stream >= ntiles && cur < 0 && !in_flight && loads.empty()) break;
    if (t > (MxuCycles{1} << 40)) throw InternalError("PE reference: no progress");

    // --- Feeder: start a tile and/or issue one beat at the array's left edge.
    if (next_stream < ntiles) {
      const int X = next_stream;
      const Tile& tx = tiles[static_cast<std::size_t>(X)];
      bool go;
      if (const MxuCycles* f = forced_at(forced.stream_start, X)) {
        if (*f < t) throw InternalError("forced stream start of tile " + std::to_string(X) + " is out of order");
        go = *f == t;
      } else {
        go = cur < 0 && tx.loaded && t >= tx.load_start + L &&
             t >= tx.ready + static_cast<MxuCycles>(g_.input_latency) && t >= stream_free;
      }
      if (go) {
        if (cur >= 0)
          hazard(t, "tile " + std::to_string(X) + " starts while tile " + std::to_string(cur) + " still streams");
        Tile& tm = tiles[static_cast<std::size_t>(X)];
        tm.streamed = true;
        tm.stream_start = t;
        cur = X;
        next_beat = 0;
        next_beat_at = t;
        stream_free = t + static_cast<MxuCycles>(tm.beats * tm.q);
        ++next_stream;
      }
    }
    Issued& slot = issued[static_cast<std::size_t>(t % static_cast<MxuCycles>(R))];
    slot = Issued{};
    if (cur >= 0 && t == next_beat_at) {
      const Tile& tc = tiles[static_cast<std::size_t>(cur)];
      slot = Issued{true, next_beat == 0, cur, next_beat};
      any_issued = true;
      last_issue = t;
      ++next_beat;
      next_beat_at += static_cast<MxuCycles>(tc.q);
      if (next_beat == tc.beats) cur = -1;
    }

    // --- PE grid: MACs, LHS moving right, partial sums moving down.
    if (any_issued && t <= last_issue + static_cast<MxuCycles>(R + C - 2)) {
      for (std::int64_t i = R - 1; i >= 0; --i) {
        for (std::int64_t j = C - 1; j >= 0; --j) {
          const std::size_t pe = static_cast<std::size_t>(i * C + j);
          LhsReg in;
          if (j == 0) {
            if (t >= static_cast<MxuCycles>(i)) {
              const Issued& e =
                  issued[static_cast<std::size_t>((t - static_cast<MxuCycles>(i)) % static_cast<MxuCycles>(R))];
              if (e.valid) {
                const Tile& te = tiles[static_cast<std::size_t>(e.tile)];
                const RefMatmul& op = ops[te.op];
                in.valid = true;
                in.first = e.first;
                in.tile = e.tile;
                in.beat = e.beat;
                const std::int64_t k = te.kt * R + i;
                for (std::int64_t u = 0; u < te.p; ++u) {
                  const std::int64_t m = e.beat * te.p + u;
                  in.v[static_cast<std::size_t>(u)] =
                      (m < op.m && k < op.k) ? A[te.op][static_cast<std::size_t>(m * op.k + k)] : 0.f;
                }
              }
            }
          } else {
            in = lhs[pe - 1];
          }
          lhs[pe] = in;
          if (!in.valid) {
            psum[pe].valid = false;
            continue;
          }
          const int X = in.tile;
          const Tile& tx = tiles[static_cast<std::size_t>(X)];
          WeightTag& w = wt[pe];
          if (db && in.first) {
            // The switch rides on the tile's first beat: S becomes W here.
            if (st[pe].tile != X || !st[pe].complete)
              hazard(t, pe_name(i, j) + " commits shadow weights of tile " + std::to_string(st[pe].tile) +
                            (st[pe].complete ? "" : " (incomplete)") + " for tile " + std::to_string(X));
            if (w.tile >= 0 && w.uses != tiles[static_cast<std::size_t>(w.tile)].beats)
              hazard(t,
                     pe_name(i, j) + " replaces weights of tile " + std::to_string(w.tile) + " before their last use");
            W[pe] = S[pe];
            w = WeightTag{X, true, false, 0};
            st[pe].committed = true;
          }
          if (w.tile != X || !w.complete)
            hazard(t, pe_name(i, j) + " multiplies tile " + std::to_string(X) + " with weights of tile " +
                          std::to_string(w.tile) + (w.complete ? "" : " (incomplete)"));
          ++w.uses;

          PsumReg out;
          out.valid = true;
          out.tile = X;
          out.beat = in.beat;
          if (i > 0) {
            const PsumReg& up = psum[pe - static_cast<std::size_t>(C)];
            if (!up.valid || up.tile != X || up.beat != in.beat)
              throw InternalError("PE reference: partial sum misaligned at " + pe_name(i, j));
            out.f = up.f;
            out.i = up.i;
          }
          const bool integer = is_int[tx.op];
          for (std::int64_t u = 0; u < tx.p; ++u) {
            const std::size_t uu = static_cast<std::size_t>(u);
            if (integer)
              out.i[uu] += static_cast<std::int64_t>(in.v[uu]) * static_cast<std::int64_t>(W[pe]);
            else
              out.f[uu] = out.f[uu] + in.v[uu] * W[pe];  // product exact in f32
          }

          if (i < R - 1) {
            psum[pe] = out;
            continue;
          }
          // Bottom row: collect the skewed outputs of one beat into a row.
          psum[pe].valid = false;
          const MxuCycles x = t - static_cast<MxuCycles>(R - 1 + j);  // the beat's issue cycle
          const std::size_t ds = static_cast<std::size_t>(x % static_cast<MxuCycles>(C));
          DeskewRow& row = deskew[ds];
          if (j == 0) row = DeskewRow{X, in.beat, 0};
          if (row.tile != X || row.beat != in.beat || row.count != j)
            throw InternalError("PE reference: de-skew row out of order at column " + std::to_string(j));
          ++row.count;
          for (std::int64_t u = 0; u < tx.p; ++u) {
            const std::size_t at =
                (ds * static_cast<std::size_t>(C) + static_cast<std::size_t>(j)) * kLanes + static_cast<std::size_t>(u);
            deskew_f[at] = out.f[static_cast<std::size_t>(u)];
            deskew_i[at] = out.i[static_cast<std::size_t>(u)];
          }
          if (j != C - 1) continue;
          // The whole row has left the array: add it into the result buffer.
          const RefMatmul& op = ops[tx.op];
          for (std::int64_t u = 0; u < tx.p; ++u) {
            const std::int64_t m = in.beat * tx.p + u;
            if (m >= op.m) continue;
            for (std::int64_t jj = 0; jj < C; ++jj) {
              const std::int64_t n = tx.nt * C + jj;
              if (n >= op.n) continue;
              const std::size_t at = (ds * static_cast<std::size_t>(C) + static_cast<std::size_t>(jj)) * kLanes +
                                     static_cast<std::size_t>(u);
              const std::size_t dst = static_cast<std::size_t>(m * op.n + n);
              if (integer) {
                std::int64_t& a = acc_i[tx.op][dst];
                a += deskew_i[at];
                if (a > std::numeric_limits<std::int32_t>::max() || a < std::numeric_limits<std::int32_t>::min() ||
                    deskew_i[at] > std::numeric_limits<std::int32_t>::max() ||
                    deskew_i[at] < std::numeric_limits<std::int32_t>::min())
                  throw ConfigError("PE reference: int32 accumulator overflow (wrap-around is not modelled)");
              } else {
                acc_f[tx.op][dst] += deskew_f[at];
              }
            }
          }
          RefMatmulResult& rr = res[tx.op];
          rr.finish = std::max(rr.finish, t + 1 + static_cast<MxuCycles>(g_.output_latency));
        }
      }
    }

    // --- Weight loader: start the next tile's load, then shift every column.
    if (next_load < ntiles) {
      const int X = next_load;
      bool go;
      if (const MxuCycles* f = forced_at(forced.load_start, X)) {
        if (*f < t) throw InternalError("forced load start of tile " + std::to_string(X) + " is out of order");
        go = *f == t;
      } else {
        bool reg_free = true;
        if (X > 0) {
          const Tile& prev = tiles[static_cast<std::size_t>(X - 1)];
          const MxuCycles free_at = prev.stream_start + (db ? 0 : static_cast<MxuCycles>((prev.beats - 1) * prev.q));
          reg_free = prev.streamed && t >= free_at;
        }
        go = reg_free && t >= tiles[static_cast<std::size_t>(X)].ready && t >= path_free;
      }
      if (go) {
        Tile& tx = tiles[static_cast<std::size_t>(X)];
        tx.loaded = true;
        tx.load_start = t;
        path_free = t + L;
        loads.push_back({X, t});
        ++next_load;
      }
    }
    std::vector<float>& reg = db ? S : W;
    std::vector<WeightTag>& tag = db ? st : wt;
    for (const ActiveLoad& ld : loads) {
      const Tile& tx = tiles[static_cast<std::size_t>(ld.tile)];
      const RefMatmul& op = ops[tx.op];
      for (std::int64_t j = 0; j < C; ++j) {
        if (t < ld.start + static_cast<MxuCycles>(j)) break;
        const std::int64_t k = static_cast<std::int64_t>(t - ld.start) - j;  // shift step
        if (k >= R) continue;
        MxuCycles& busy = column_step_cycle[static_cast<std::size_t>(j)];
        if (busy == t) hazard(t, "two weight loads shift column " + std::to_string(j) + " at once");
        busy = t;
        const std::size_t first = static_cast<std::size_t>(k * C + j);
        WeightTag& ft = tag[first];
        if (ft.tile >= 0) {
          const bool free = db ? ft.committed : ft.uses == tiles[static_cast<std::size_t>(ft.tile)].beats;
          if (!free)
            hazard(t, "load of tile " + std::to_string(ld.tile) + " overwrites " + pe_name(k, j) +
                          (db ? " shadow weights of tile " : " weights of tile ") + std::to_string(ft.tile) +
                          (db ? " before they were committed" : " before their last use"));
        }
        ft = WeightTag{ld.tile, false, false, 0};
        for (std::int64_t i = k; i >= 1; --i)
          reg[static_cast<std::size_t>(i * C + j)] = reg[static_cast<std::size_t>((i - 1) * C + j)];
        // Rows enter bottom row first so that after R steps row i holds B row i.
        const std::int64_t krow = tx.kt * R + (R - 1 - k), ncol = tx.nt * C + j;
        reg[static_cast<std::size_t>(j)] =
            (krow < op.k && ncol < op.n) ? B[tx.op][static_cast<std::size_t>(krow * op.n + ncol)] : 0.f;
        if (k == R - 1)
          for (std::int64_t i = 0; i < R; ++i) tag[static_cast<std::size_t>(i * C + j)].complete = true;
      }
    }
    loads.erase(
        std::remove_if(loads.begin(), loads.end(),
                       [&](const ActiveLoad& ld) { return t >= ld.start + static_cast<MxuCycles>(C - 1 + R - 1); }),
        loads.end());
  }
  cycles_ += t;

  for (std::size_t o = 0; o < ops.size(); ++o) {
    if (is_int[o]) {
      res[o].out_i32.assign(acc_i[o].begin(), acc_i[o].end());
    } else {
      res[o].out_f32 = std::move(acc_f[o]);
    }
  }
  for (const Tile& tx : tiles) {
    RefMatmulResult& rr = res[tx.op];
    if (tx.kt == 0 && tx.nt == 0) {
      rr.start = tx.load_start;
      rr.stream_start = tx.stream_start;
    }
  }
  return res;
}

}  // namespace tpusim::arch
