// SmallCallback: a move-only `void()` callable that stores callables of up to kInline bytes in
// itself, so scheduling one costs no allocation (std::function in libstdc++ stores only 16 bytes
// and only trivially copyable callables in place: a lambda capturing a std::shared_ptr and a
// pointer already allocates). Larger callables, or ones whose move may throw, go to the heap,
// as std::function would put them.
//
// Moving a SmallCallback relocates the callable (its move constructor, then its destructor);
// callables that are trivially copyable and destructible are moved as plain bytes, without an
// indirect call. Invoking an empty SmallCallback is a precondition violation.
//
// Not part of the API on its own: installed because TimerService::Callback is one.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace delayq::detail {

class SmallCallback {
 public:
  // 40 bytes and pointer alignment: with the ops pointer, 48 bytes a callback (the slab of a
  // million pending callbacks is 48 MB to fault in, not 64 MB with 16-byte alignment).
  static constexpr size_t kInline = 40;

  SmallCallback() noexcept = default;
  SmallCallback(std::nullptr_t) noexcept {}

  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, SmallCallback> &&
                                     std::is_invocable_r_v<void, D&>>>
  SmallCallback(F&& f) {  // NOLINT: implicit, as std::function's
    if constexpr (kFits<D>) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      D* p = new D(std::forward<F>(f));
      std::memcpy(buf_, &p, sizeof p);
      ops_ = &kHeapOps<D>;
    }
  }

  SmallCallback(SmallCallback&& o) noexcept { take(o); }
  SmallCallback& operator=(SmallCallback&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  SmallCallback& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  ~SmallCallback() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }

  // Precondition: not empty.
  void operator()() {
    assert(ops_);
    ops_->invoke(buf_);
  }

  // True if a callable of type F is stored in place (no allocation).
  template <class F>
  static constexpr bool stored_inline() {
    return kFits<std::decay_t<F>>;
  }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*relocate)(void* from, void* to);  // null: copy the bytes
    void (*destroy)(void*);                  // null: nothing to do
  };

  template <class D>
  static constexpr bool kFits =
      sizeof(D) <= kInline &&
      alignof(D) <= alignof(void*) && std::is_nothrow_move_constructible_v<D>;
  template <class D>
  static constexpr bool kBytes =
      std::is_trivially_copyable_v<D>&& std::is_trivially_destructible_v<D>;

  template <class D>
  static constexpr Ops kInlineOps = {
      [](void* p) { (*static_cast<D*>(p))(); },
      kBytes<D> ? nullptr
                : +[](void* from, void* to) {
                    D* f = static_cast<D*>(from);
                    ::new (to) D(std::move(*f));
                    f->~D();
                  },
      kBytes<D> ? nullptr : +[](void* p) { static_cast<D*>(p)->~D(); },
  };
  // The buffer holds a D*: relocated as bytes.
  template <class D>
  static constexpr Ops kHeapOps = {
      [](void* p) { (**static_cast<D**>(p))(); },
      nullptr,
      [](void* p) { delete *static_cast<D**>(p); },
  };

  void take(SmallCallback& o) noexcept {
    ops_ = o.ops_;
    if (!ops_) return;
    if (ops_->relocate)
      ops_->relocate(o.buf_, buf_);
    else
      std::memcpy(buf_, o.buf_, kInline);
    o.ops_ = nullptr;
  }
  void reset() noexcept {
    if (ops_ && ops_->destroy) ops_->destroy(buf_);
    ops_ = nullptr;
  }

  alignas(void*) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

static_assert(sizeof(SmallCallback) == 48);

}  // namespace delayq::detail
