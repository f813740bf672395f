// ThreadSanitizer annotations for an abseil that was not built with it,
// linked into the ThreadSanitizer build only (HPCAI500_SANITIZE=thread, see
// docs/design.md, "Hardening in CI").
//
// Debian's libabsl_synchronization is not instrumented, so TSan cannot see
// that absl::Mutex orders memory: every access our code guards with one
// would be reported as a race. The definitions below take the place of the
// library's (a program's own symbols interpose a shared library's, for the
// calls gRPC and abseil itself make too), tell TSan what each call does to
// the mutex through its __tsan_mutex_* interface, as abseil's own TSan build
// does, and call the library's definition, found with dlsym(RTLD_NEXT).
// Between a pre_ and a post_ annotation TSan ignores memory accesses, which
// covers the conditions the library evaluates while it (un)locks. The
// destructor is left alone: TSan forgets a mutex when its memory is freed,
// and a __tsan_mutex_destroy would itself race where gRPC frees a mutex
// after a reference count TSan cannot see.
//
// Thread-safe: each function looks its original up once (a static local)
// and counts its nesting per thread.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

static_assert(ABSL_OPTION_USE_INLINE_NAMESPACE,
              "the mangled names below assume abseil's inline namespace");

namespace {

#define HPCAI500_STRINGIFY_INNER(x) #x
#define HPCAI500_STRINGIFY(x) HPCAI500_STRINGIFY_INNER(x)

// The shared library's definition of absl::<inline namespace>::<tail>,
// `tail` being the rest of its Itanium mangled name (e.g. "5Mutex4LockEv"),
// of a const member function when `is_const`. Aborts when there is none: the
// abseil found at run time is not the one the program was built against.
template <typename Fn>
Fn Next(const char* tail, bool is_const = false) {
  const std::string inline_namespace =
      HPCAI500_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string symbol = std::string(is_const ? "_ZNK" : "_ZN") + "4absl" +
                             std::to_string(inline_namespace.size()) +
                             inline_namespace + tail;
  void* fn = dlsym(RTLD_NEXT, symbol.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_mutex_tsan: no %s in the loaded abseil\n",
                 symbol.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// How many of this file's functions run on this thread: the library's
// functions call one another through the same symbols (AwaitWithTimeout
// calls AwaitWithDeadline, Notification::Notify calls Lock), and TSan must
// see each operation once, from the outermost call.
thread_local int nesting = 0;

// Runs `call` (the library's function) as the outermost call, or returns
// what `call` returns when nested.
template <typename Call, typename Before, typename After>
auto Annotated(Call call, Before before, After after) {
  if (nesting > 0) return call();
  ++nesting;
  before();
  auto result = call();
  after(result);
  --nesting;
  return result;
}

// TSan's view of one acquisition of `mu` (flags: read, try) by `acquire`,
// the library's call, which returns whether it acquired.
template <typename Acquire>
bool Acquiring(void* mu, unsigned flags, Acquire acquire) {
  return Annotated(
      acquire, [&] { __tsan_mutex_pre_lock(mu, flags); },
      [&](bool acquired) {
        __tsan_mutex_post_lock(
            mu, acquired ? flags : flags | __tsan_mutex_try_lock_failed, 0);
      });
}

template <typename Release>
void Releasing(void* mu, unsigned flags, Release release) {
  Annotated([&] { return release(), true; },
            [&] { __tsan_mutex_pre_unlock(mu, flags); },
            [&](bool) { __tsan_mutex_post_unlock(mu, flags); });
}

// A wait that releases `mu` and holds it again on return (Await, CondVar's
// Wait): a release, then an acquisition, as TSan sees it.
template <typename Wait>
auto Waiting(void* mu, unsigned flags, Wait wait) {
  return Annotated(
      wait, [&] { __tsan_mutex_pre_unlock(mu, flags); },
      [&](const auto&) {
        __tsan_mutex_post_unlock(mu, flags);
        __tsan_mutex_pre_lock(mu, flags);
        __tsan_mutex_post_lock(mu, flags, 0);
      });
}

constexpr unsigned kWrite = 0;
constexpr unsigned kRead = __tsan_mutex_read_lock;
constexpr unsigned kTry = __tsan_mutex_try_lock;

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex4LockEv");
  Acquiring(this, kWrite, [&] { return next(this), true; });
}

void Mutex::ReaderLock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  Acquiring(this, kRead, [&] { return next(this), true; });
}

bool Mutex::TryLock() {
  static const auto next = Next<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  return Acquiring(this, kTry, [&] { return next(this); });
}

bool Mutex::ReaderTryLock() {
  static const auto next = Next<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  return Acquiring(this, kRead | kTry, [&] { return next(this); });
}

void Mutex::Unlock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex6UnlockEv");
  Releasing(this, kWrite, [&] { next(this); });
}

void Mutex::ReaderUnlock() {
  static const auto next = Next<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  Releasing(this, kRead, [&] { next(this); });
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto next = Next<void (*)(Mutex*, const Condition&)>(
      "5Mutex8LockWhenERKNS0_9ConditionE");
  Acquiring(this, kWrite, [&] { return next(this, cond), true; });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto next = Next<void (*)(Mutex*, const Condition&)>(
      "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Acquiring(this, kRead, [&] { return next(this, cond), true; });
}

// The timed LockWhens hold the mutex on return whether or not the
// condition became true.
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  bool met = false;
  Acquiring(this, kWrite,
            [&] { return met = next(this, cond, timeout), true; });
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  bool met = false;
  Acquiring(this, kWrite,
            [&] { return met = next(this, cond, deadline), true; });
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  bool met = false;
  Acquiring(this, kRead, [&] { return met = next(this, cond, timeout), true; });
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  bool met = false;
  Acquiring(this, kRead,
            [&] { return met = next(this, cond, deadline), true; });
  return met;
}

// Await is only called with the mutex held; the write flag is what TSan
// checks against how it was taken, and our code takes it for writing.
void Mutex::Await(const Condition& cond) {
  static const auto next = Next<void (*)(Mutex*, const Condition&)>(
      "5Mutex5AwaitERKNS0_9ConditionE");
  Waiting(this, kWrite, [&] { return next(this, cond), true; });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Waiting(this, kWrite, [&] { return next(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto next = Next<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Waiting(this, kWrite, [&] { return next(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  static const auto next =
      Next<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  Waiting(mu, kWrite, [&] { return next(this, mu), true; });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto next = Next<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return Waiting(mu, kWrite, [&] { return next(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto next = Next<bool (*)(CondVar*, Mutex*, Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return Waiting(mu, kWrite, [&] { return next(this, mu, deadline); });
}

// A Notification orders what came before Notify() before what follows a
// wait that saw it (the library's flag is an atomic TSan does not see).
// HasBeenNotified() is inline and cannot be covered: our code does not
// use it.
void Notification::Notify() {
  static const auto next =
      Next<void (*)(Notification*)>("12Notification6NotifyEv");
  Annotated([&] { return next(this), true; }, [&] { __tsan_release(this); },
            [](bool) {});
}

void Notification::WaitForNotification() const {
  static const auto next = Next<void (*)(const Notification*)>(
      "12Notification19WaitForNotificationEv", /*is_const=*/true);
  Annotated([&] { return next(this), true; }, [] {},
            [&](bool) { __tsan_acquire(const_cast<Notification*>(this)); });
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto next = Next<bool (*)(const Notification*, Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE",
      /*is_const=*/true);
  return Annotated([&] { return next(this, timeout); }, [] {},
                   [&](bool notified) {
                     if (notified) {
                       __tsan_acquire(const_cast<Notification*>(this));
                     }
                   });
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto next = Next<bool (*)(const Notification*, Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE",
      /*is_const=*/true);
  return Annotated([&] { return next(this, deadline); }, [] {},
                   [&](bool notified) {
                     if (notified) {
                       __tsan_acquire(const_cast<Notification*>(this));
                     }
                   });
}

ABSL_NAMESPACE_END
}  // namespace absl
