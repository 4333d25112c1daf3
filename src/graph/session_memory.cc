// The session's arena: at load, plan_buffers() gives each runtime value a buffer, reusing
// one whose last reader has run (graph outputs get their own); at run, each buffer is sized
// by Buffer::ensure, which grows geometrically so context-growing tensors settle.
#include <algorithm>
#include <limits>
#include <new>

#include "graph/session_impl.h"

namespace nbits::graph::detail {

void Buffer::release() {
  if (p) ::operator delete(p, std::align_val_t(64));
  p = nullptr;
  cap = 0;
}

void* Buffer::ensure(size_t bytes) {
  if (bytes > cap) {
    const size_t want = cap == 0 ? bytes : std::max(bytes, cap + cap / 2);
    const size_t n = std::max<size_t>(64, (want + 63) / 64 * 64);
    release();
    p = ::operator new(n, std::align_val_t(64));
    cap = n;
  }
  return p;
}

size_t SessionImpl::arena_bytes() const {
  size_t n = 0;
  for (const auto& b : buffers_) n += b->cap;
  return n;
}

void SessionImpl::plan_buffers() {
  const int end = std::numeric_limits<int>::max();
  for (size_t pi = 0; pi < plan_.size(); ++pi) {
    PlanNode& p = plan_[pi];
    const int alias = p.op->alias_input();
    for (size_t i = 0; i < p.out.size(); ++i)
      if (p.out[i] >= 0 && alias >= 0 && i == 0 && p.in[alias] >= 0)
        values_[p.out[i]].root = values_[p.in[alias]].root;
    for (int i : p.in)
      if (i >= 0) {
        Value& r = values_[values_[i].root];
        r.last_use = std::max(r.last_use, static_cast<int>(pi));
      }
    for (int o : p.out)
      if (o >= 0) {
        Value& r = values_[values_[o].root];
        r.last_use = std::max(r.last_use, static_cast<int>(pi));
        if (values_[o].graph_output) r.last_use = end;
      }
  }
  std::vector<int> free_list;
  for (size_t pi = 0; pi < plan_.size(); ++pi) {
    PlanNode& p = plan_[pi];
    for (int o : p.out)
      if (o >= 0 && values_[o].root == o) {
        // Graph outputs live to the end and are often bound to caller memory (the KV
        // cache): they get a buffer of their own, so they never pin a large reusable one.
        if (free_list.empty() || values_[o].graph_output) {
          buffers_.push_back(std::make_unique<Buffer>());
          values_[o].buffer = static_cast<int>(buffers_.size()) - 1;
        } else {
          values_[o].buffer = free_list.back();
          free_list.pop_back();
        }
      }
    // Release the groups whose last reader is this node (after assigning outputs,
    // so a node never reads and writes the same buffer).
    auto release = [&](int id) {
      Value& r = values_[values_[id].root];
      if (r.kind == Kind::kRuntime && r.buffer >= 0 && r.last_use == static_cast<int>(pi)) {
        free_list.push_back(r.buffer);
        r.last_use = -2;  // released once
      }
    };
    for (int i : p.in)
      if (i >= 0) release(i);
    for (int o : p.out)
      if (o >= 0) release(o);
  }
}

}  // namespace nbits::graph::detail
