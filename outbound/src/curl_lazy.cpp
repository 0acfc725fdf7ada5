// libcurl, opened at its first use instead of linked. libcurl and the libraries it needs
// (HTTP/2, IDN, SSH, Kerberos, LDAP, GnuTLS, ...) are some thirty of the shared libraries
// inletd would otherwise load at every start, and their loading was most of a start: what
// each `inletd sendmail` run (a process per message) and each subcommand paid, for webhooks,
// link checks and spam checks that most runs never make.
//
// These are libcurl's own entry points, defined here with its declarations: the callers
// keep calling curl_easy_setopt() and friends; the first call opens the library (by its
// soname, RTLD_LOCAL) and every call forwards to it. The executable does not export these
// definitions (no linked library refers to them), so libcurl's calls to itself stay its own.
// A library that cannot be opened is said once on stderr; the calls then fail as libcurl
// does when it cannot start (null handles, CURLE_FAILED_INIT).
#define CURL_DISABLE_TYPECHECK  // plain declarations, not the type-checking macros
#include <curl/curl.h>
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>

namespace {

#define INLET_CURL_FUNCTIONS(X)                                                         \
  X(curl_global_init) X(curl_global_cleanup) X(curl_easy_init) X(curl_easy_setopt)      \
  X(curl_easy_perform) X(curl_easy_cleanup) X(curl_easy_getinfo) X(curl_easy_strerror)  \
  X(curl_slist_append) X(curl_slist_free_all) X(curl_multi_init) X(curl_multi_add_handle) \
  X(curl_multi_remove_handle) X(curl_multi_perform) X(curl_multi_poll)                  \
  X(curl_multi_info_read) X(curl_multi_cleanup)

struct curl_api {
#define INLET_CURL_POINTER(name) decltype(&::name) name = nullptr;
  INLET_CURL_FUNCTIONS(INLET_CURL_POINTER)
#undef INLET_CURL_POINTER
};

// Opened once (thread-safe static initialisation), never closed; null when it cannot be.
const curl_api* lib() {
  static const curl_api* api = []() -> const curl_api* {
    static curl_api a;
    void* h = ::dlopen(INLET_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    bool ok = h != nullptr;
#define INLET_CURL_LOAD(name)                                          \
  if (ok) {                                                            \
    a.name = reinterpret_cast<decltype(&::name)>(::dlsym(h, #name));   \
    ok = a.name != nullptr;                                            \
  }
    INLET_CURL_FUNCTIONS(INLET_CURL_LOAD)
#undef INLET_CURL_LOAD
    if (!ok) {
      const char* why = ::dlerror();
      std::fprintf(stderr, "inlet: %s cannot be loaded: %s\n", INLET_CURL_SONAME,
                   why ? why : "a function is missing");
      return nullptr;
    }
    return &a;
  }();
  return api;
}

}  // namespace

// libcurl's declarations end their named parameters with an enum; clang warns that an
// enum may be promoted before `...`. An int-sized one is not (asserted below), and the
// definitions must keep the declared signatures.
static_assert(sizeof(CURLoption) == sizeof(int) && sizeof(CURLINFO) == sizeof(int));
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wvarargs"
#endif

extern "C" {

CURLcode curl_global_init(long flags) {
  const curl_api* c = lib();
  return c ? c->curl_global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void) {
  if (const curl_api* c = lib()) c->curl_global_cleanup();
}

CURL* curl_easy_init(void) {
  const curl_api* c = lib();
  return c ? c->curl_easy_init() : nullptr;
}

// The one argument after the option is a long, a pointer, a function pointer or a
// curl_off_t, as the option's number says (libcurl reads it the same way).
CURLcode curl_easy_setopt(CURL* h, CURLoption option, ...) {
  const curl_api* c = lib();
  if (!c) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = c->curl_easy_setopt(h, option, va_arg(ap, long));
  } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
    rc = c->curl_easy_setopt(h, option, va_arg(ap, void*));
  } else if (option < CURLOPTTYPE_OFF_T) {
    rc = c->curl_easy_setopt(h, option, va_arg(ap, void (*)(void)));
  } else if (option < CURLOPTTYPE_BLOB) {
    rc = c->curl_easy_setopt(h, option, va_arg(ap, curl_off_t));
  } else {
    rc = c->curl_easy_setopt(h, option, va_arg(ap, void*));
  }
  va_end(ap);
  return rc;
}

CURLcode curl_easy_perform(CURL* h) {
  const curl_api* c = lib();
  return c ? c->curl_easy_perform(h) : CURLE_FAILED_INIT;
}

void curl_easy_cleanup(CURL* h) {
  if (const curl_api* c = lib()) c->curl_easy_cleanup(h);
}

// Every CURLINFO takes one pointer to where the answer goes.
CURLcode curl_easy_getinfo(CURL* h, CURLINFO info, ...) {
  const curl_api* c = lib();
  if (!c) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, info);
  CURLcode rc = c->curl_easy_getinfo(h, info, va_arg(ap, void*));
  va_end(ap);
  return rc;
}

const char* curl_easy_strerror(CURLcode code) {
  const curl_api* c = lib();
  return c ? c->curl_easy_strerror(code) : "libcurl could not be loaded";
}

curl_slist* curl_slist_append(curl_slist* list, const char* s) {
  const curl_api* c = lib();
  return c ? c->curl_slist_append(list, s) : nullptr;
}

void curl_slist_free_all(curl_slist* list) {
  if (const curl_api* c = lib()) c->curl_slist_free_all(list);
}

CURLM* curl_multi_init(void) {
  const curl_api* c = lib();
  return c ? c->curl_multi_init() : nullptr;
}

CURLMcode curl_multi_add_handle(CURLM* m, CURL* h) {
  const curl_api* c = lib();
  return c ? c->curl_multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM* m, CURL* h) {
  const curl_api* c = lib();
  return c ? c->curl_multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_perform(CURLM* m, int* running) {
  const curl_api* c = lib();
  return c ? c->curl_multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_poll(CURLM* m, curl_waitfd extra_fds[], unsigned int extra_nfds,
                          int timeout_ms, int* ret) {
  const curl_api* c = lib();
  return c ? c->curl_multi_poll(m, extra_fds, extra_nfds, timeout_ms, ret)
           : CURLM_INTERNAL_ERROR;
}

CURLMsg* curl_multi_info_read(CURLM* m, int* msgs_in_queue) {
  const curl_api* c = lib();
  return c ? c->curl_multi_info_read(m, msgs_in_queue) : nullptr;
}

CURLMcode curl_multi_cleanup(CURLM* m) {
  const curl_api* c = lib();
  return c ? c->curl_multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}

}  // extern "C"
