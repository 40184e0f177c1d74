/*
 * writeback.c: starts the kernel's write-out of a byte range of a segment file, without waiting
 * for it and without a journal commit: sync_file_range(2) with SYNC_FILE_RANGE_WRITE, as RocksDB
 * does for bytes_per_sync.
 *
 * JavaScript API (registered by addon.c; src/native-writeback.ts types it):
 *
 *   startWriteback(fileFd, position, count) -> Promise<void>
 *
 *   Rejects with an Error shaped like Node's system errors (code, errno, syscall); arguments
 *   that are not non-negative integers throw a TypeError or RangeError.
 *
 * Why: the kernel keeps a file's pages dirty until they are 30 s old or the machine's dirty memory
 * passes vm.dirty_background_ratio (gigabytes here), so a 1 GiB segment's flush at its roll wrote
 * it all at once and stalled every writer on the disk. Starting write-out every few MiB keeps the
 * dirty tail small; unlike fdatasync it neither waits for the disk nor commits the file system's
 * journal, whose commits several times a second cost the append path latency and throughput.
 *
 * The call runs on the libuv pool: write-out can wait for a congested request queue. The caller
 * holds a reference to the file for the duration, so the descriptor stays the file's.
 */
#define _GNU_SOURCE /* sync_file_range */
#ifndef __linux__
#error "writeback.c uses Linux sync_file_range(2)"
#endif

#include "addon.h"

#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int file_fd;
  int64_t position;
  int64_t count;
  int error_number;
} writeback_request;

static void execute_writeback(napi_env env, void *data) {
  (void)env;
  writeback_request *request = data;
  for (;;) {
    int result = sync_file_range(request->file_fd, (off64_t)request->position,
                                 (off64_t)request->count, SYNC_FILE_RANGE_WRITE);
    if (result == 0) return;
    if (errno == EINTR) continue;
    request->error_number = errno;
    return;
  }
}

static void complete_writeback(napi_env env, napi_status status, void *data) {
  writeback_request *request = data;
  if (status != napi_ok || request->error_number != 0) {
    int error_number = status != napi_ok ? ECANCELED : request->error_number;
    napi_reject_deferred(env, request->deferred,
                         addon_system_error(env, "sync_file_range", error_number));
  } else {
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_resolve_deferred(env, request->deferred, undefined);
  }
  napi_delete_async_work(env, request->work);
  free(request);
}

static napi_value start_writeback_entry(napi_env env, napi_callback_info info) {
  napi_value arguments[3];
  if (!addon_exact_arguments(env, info, 3, arguments,
                             "startWriteback(fileFd, position, count)")) {
    return NULL;
  }
  int file_fd;
  int64_t position, count;
  if (!addon_descriptor_argument(env, arguments[0], &file_fd, "fileFd")) return NULL;
  if (!addon_integer_argument(env, arguments[1], &position, "position")) return NULL;
  if (!addon_integer_argument(env, arguments[2], &count, "count")) return NULL;
  if (position < 0) return addon_throw_range_error(env, "position must not be negative");
  if (count < 0) return addon_throw_range_error(env, "count must not be negative");

  napi_value promise;
  napi_deferred deferred;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) return NULL;
  writeback_request *request = calloc(1, sizeof *request);
  if (request == NULL) {
    napi_throw_error(env, "ENOMEM", "startWriteback: out of memory");
    return NULL;
  }
  request->deferred = deferred;
  request->file_fd = file_fd;
  request->position = position;
  request->count = count;
  napi_value resource_name;
  napi_create_string_utf8(env, "SpoolStartWriteback", NAPI_AUTO_LENGTH, &resource_name);
  napi_status status = napi_create_async_work(env, NULL, resource_name, execute_writeback,
                                              complete_writeback, request, &request->work);
  if (status == napi_ok) status = napi_queue_async_work(env, request->work);
  if (status != napi_ok) {
    if (request->work != NULL) napi_delete_async_work(env, request->work);
    free(request);
    napi_throw_error(env, "EIO", "startWriteback: napi_queue_async_work failed");
    return NULL;
  }
  return promise;
}

napi_status writeback_register(napi_env env, napi_value exports) {
  napi_value function;
  napi_status status = napi_create_function(env, "startWriteback", NAPI_AUTO_LENGTH,
                                            start_writeback_entry, NULL, &function);
  if (status != napi_ok) return status;
  return napi_set_named_property(env, exports, "startWriteback", function);
}
