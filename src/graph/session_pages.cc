// Weight pages at load: once every reader of an initializer is built and none reads it at
// run time (they packed or folded it), its file pages (or owned / folded storage) are let
// go, so the load's peak is the packed weights, not packed + original; initializers read
// straight from the mapping at run are read ahead and marked random-access.
#include <algorithm>

#include "base/memory_stats.h"
#include "graph/session_impl.h"

namespace nbits::graph::detail {

const MappedFile* SessionImpl::mapping_of(const void* p, size_t n) const {
  const onnx::Model& model = shared_->model;
  if (model.file && model.file->contains(p, n)) return model.file.get();
  for (const auto& [location, f] : model.external_files)
    if (f && f->contains(p, n)) return f.get();
  return nullptr;
}

// One node input referring to initializer `value` has been built. Once every
// reader is built and none reads it at run time (they packed or folded it), the
// file pages behind it are dropped, so peak memory is the packed weights, not
// packed + original. When the readers at run only copy from the file (a Gather's
// pread of embedding rows), the pages a packing reader touched (the tied lm_head
// packed from the same table) are dropped too: the value stays in use, not resident.
void SessionImpl::consumed_at_load(int value, bool read_at_run, bool maps_at_run) {
  if (value < 0 || values_[value].kind != Kind::kConstant) return;
  if (read_at_run_.size() <= static_cast<size_t>(value)) {
    read_at_run_.resize(value + 1, false);
    mapped_at_run_.resize(value + 1, false);
  }
  if (read_at_run) read_at_run_[value] = true;
  if (read_at_run && maps_at_run) mapped_at_run_[value] = true;
  auto it = loads_left_.find(values_[value].name);
  if (it == loads_left_.end() || --it->second > 0) return;
  if (read_at_run_[value]) {
    if (!mapped_at_run_[value])
      if (const MappedFile* f = mapping_of(values_[value].t))
        f->release(values_[value].t.data, values_[value].t.bytes());
    return;
  }
  if (shared_->model.graph.initializer(values_[value].name) == nullptr) return release_folded(value);
  const Tensor& t = values_[value].t;
  if (const MappedFile* f = mapping_of(t)) {
    f->release(t.data, t.bytes());
    released_bytes_ += t.bytes();
    released_ranges_.push_back({f, static_cast<const uint8_t*>(t.data), t.bytes()});
  } else if (release_owned(t.data, t.bytes())) {
    released_bytes_ += t.bytes();
    // The freed buffer's pages stay resident in glibc's heap (above its mmap threshold a large block
    // is a heap chunk, and a hole in the middle of a heap is not given back): hand them back every
    // 32 MiB, or the packed weights allocate beside them and the load's peak is original + packed.
    if ((trimmed_owned_bytes_ += t.bytes()) >= (size_t{32} << 20)) {
      trimmed_owned_bytes_ = 0;
      release_free_heap();
    }
  }
}

// A value folded at load (e.g. the Transpose of a tied embedding) whose readers are all built
// and none reads it at run (they packed it): its storage is freed unless another constant
// still alive views it.
void SessionImpl::release_folded(int value) {
  const Tensor& t = values_[value].t;
  if (t.data == nullptr || t.bytes() < (size_t{1} << 16)) return;  // small ones are not worth the scan
  for (std::vector<uint8_t>& buf : shared_->storage) {
    if (buf.data() != t.data) continue;
    const uint8_t* lo = buf.data();
    const uint8_t* hi = lo + buf.size();
    for (size_t j = 0; j < values_.size(); ++j) {
      const Value& o = values_[j];
      const auto* d = static_cast<const uint8_t*>(o.t.data);
      if (static_cast<int>(j) == value || o.kind != Kind::kConstant || d < lo || d >= hi) continue;
      const auto left = loads_left_.find(o.name);
      const bool live =
          left == loads_left_.end() || left->second > 0 || (j < read_at_run_.size() && read_at_run_[j]);
      if (live) return;
    }
    released_bytes_ += buf.size();
    std::vector<uint8_t>().swap(buf);
    return;
  }
}

// Frees a buffer of Model::owned (weights a GGUF file's repacking made, decoded typed
// fields) that holds exactly this initializer's bytes and no other initializer's: once
// packed it is not read again, and keeping it would double the peak memory.
bool SessionImpl::release_owned(const void* p, size_t n) {
  if (p == nullptr || n < (size_t{1} << 16)) return false;  // small ones are not worth the scan
  onnx::Model& model = shared_->model;
  for (std::vector<uint8_t>& buf : model.owned) {
    if (buf.data() != p || buf.size() != n) continue;
    int viewers = 0;
    onnx::Tensor* viewer = nullptr;
    for (onnx::Tensor& init : model.graph.initializers)
      if (init.bytes.data() >= buf.data() && init.bytes.data() < buf.data() + buf.size()) {
        ++viewers;
        viewer = &init;
      }
    if (viewers != 1) return false;
    std::vector<uint8_t>().swap(buf);
    // No stale view: a later buffer at the same address (initializers made as their readers are
    // built, onnx::Model::deferred) would count it as a second viewer and never be let go.
    viewer->bytes = {};
    return true;
  }
  return false;
}

// True when [p, p + n) lies in a buffer of Model::owned (a GGUF tensor converted at load) that
// only input(s) of `node` view, this node is the last one to read, and no earlier reader reads it
// at run: the node may then let its pages go as it packs them (MatMulNBits' rows_consumed), so a
// large matrix (a 150k-row lm_head) is not resident twice, converted and packed.
bool SessionImpl::last_reader_of_owned(const onnx::Node& node, const void* p, size_t n) const {
  const auto* lo = static_cast<const uint8_t*>(p);
  for (const std::vector<uint8_t>& buf : shared_->model.owned) {
    if (lo < buf.data() || lo + n > buf.data() + buf.size()) continue;
    for (const std::string& in : node.inputs) {
      const auto id = ids_.find(in);
      if (id == ids_.end() || values_[id->second].t.data != buf.data()) continue;
      const auto left = loads_left_.find(in);
      const bool read = static_cast<size_t>(id->second) < read_at_run_.size() && read_at_run_[id->second];
      return values_[id->second].kind == Kind::kConstant && left != loads_left_.end() && left->second == 1 &&
             !read && std::count(node.inputs.begin(), node.inputs.end(), in) == 1;
    }
    return false;
  }
  return false;
}

// Each release drops only the pages wholly inside one initializer; adjacent
// released initializers (B then scales) share boundary pages, dropped here.
void SessionImpl::release_merged_ranges() {
  std::sort(released_ranges_.begin(), released_ranges_.end(),
            [](const Range& a, const Range& b) { return a.file != b.file ? a.file < b.file : a.p < b.p; });
  for (size_t i = 0; i < released_ranges_.size();) {
    const Range& first = released_ranges_[i];
    const uint8_t* end = first.p + first.n;
    size_t j = i + 1;
    while (j < released_ranges_.size() && released_ranges_[j].file == first.file &&
           released_ranges_[j].p <= end) {
      end = std::max(end, released_ranges_[j].p + released_ranges_[j].n);
      ++j;
    }
    if (j > i + 1) first.file->release(first.p, static_cast<size_t>(end - first.p));
    i = j;
  }
  released_ranges_.clear();
  released_ranges_.shrink_to_fit();
}

// Large initializers read at run time straight from the mapping (an fp32
// embedding table) are read ahead now, so the first prompt does not wait on the
// disk, and marked random-access, so a row maps its own page, not 64 KiB around it.
void SessionImpl::advise_mapped_constants() {
  std::vector<bool> seen(values_.size(), false);
  for (const PlanNode& p : plan_)
    for (size_t i = 0; i < p.in.size() && p.op->packed_weight_bytes() == 0; ++i) {
      const int v = p.in[i];
      if (v < 0 || values_[v].kind != Kind::kConstant || seen[v] || !p.op->reads_constant_at_run(i)) continue;
      seen[v] = true;
      const Tensor& t = values_[v].t;
      const MappedFile* f = mapping_of(t);
      if (f == nullptr) continue;
      mapped_weight_bytes_ += t.bytes();
      if (t.bytes() >= (size_t{1} << 20)) {
        f->prefetch(t.data, t.bytes());
        f->random_access(t.data, t.bytes());
      }
    }
}

}  // namespace nbits::graph::detail
