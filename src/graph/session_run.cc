// The run loop: every plan node in order, shapes inferred, outputs placed (bound caller
// memory, a view of an input, or the node's arena buffer), then run; per-node timings
// when profiling.
#include <cstring>

#include "base/timer.h"
#include "graph/session_impl.h"

namespace nbits::graph::detail {

void SessionImpl::run() {
  for (int i : inputs_)
    NBITS_CHECK(values_[i].bound, "run: graph input '", values_[i].name, "' is not bound");
  const bool profile = shared_->options.profile;
  RunContext ctx{shared_->pool};
  for (PlanNode& p : plan_) {
    const int64_t t0 = profile ? now_ns() : 0;
    const OpArgs args{p.in_ptrs.data(),  p.in_ptrs.size(), p.out_ptrs.data(),
                      p.out_ptrs.size(), p.last_position,  positions_as_decode_};
    p.op->infer(args);
    const int alias = p.op->alias_input();
    bool copy_alias = false;
    for (size_t i = 0; i < p.out.size(); ++i) {
      if (p.out[i] < 0) continue;
      Value& v = values_[p.out[i]];
      if (v.bound) {
        NBITS_CHECK(v.binding.shape == v.t.shape, "run: output '", v.name, "' has shape ", v.t.shape.str(),
                    " but the bound buffer has shape ", v.binding.shape.str());
        v.t.data = v.binding.data;
        v.t.rows = v.binding.rows;
        copy_alias = copy_alias || (alias >= 0 && i == 0);
      } else if (alias >= 0 && i == 0 && p.in[alias] >= 0) {
        v.t.data = p.in_ptrs[alias]->data;
      } else if (const void* view = p.op->output_view(args, i)) {
        v.t.data = const_cast<void*>(view);
      } else {
        v.t.data = buffers_[values_[v.root].buffer]->ensure(std::max<size_t>(v.t.bytes(), 1));
      }
    }
    if (alias < 0) {
      p.op->run(args, ctx);
    } else if (copy_alias && p.out_ptrs[0]->data != p.in_ptrs[alias]->data) {
      std::memcpy(p.out_ptrs[0]->data, p.in_ptrs[alias]->data, p.out_ptrs[0]->bytes());
    }
    if (profile) {
      ++p.calls;
      p.ms += static_cast<double>(now_ns() - t0) * 1e-6;
      p.kernel = p.op->kernel_name(args);
    }
  }
}

}  // namespace nbits::graph::detail
