/*
 * sendfile.c: moves a byte range of a segment file to a socket with Linux sendfile(2), so fetch
 * bytes go from the page cache to the socket without ever entering JavaScript.
 *
 * JavaScript API (registered by addon.c; src/native-sendfile.ts types it):
 *
 *   sendfileChunk(socketFd, fileFd, position, count, writableWaitMsMax)
 *     -> Promise<{ bytesWritten: number, endOfFile: boolean }>
 *
 *   The promise rejects with an Error whose `code` is the errno name ("EPIPE"), whose `errno` is
 *   the negated errno value (as Node's own system errors), and whose `syscall` names the call.
 *
 *   sendfileNow(socketFd, fileFd, position, count) -> number
 *
 *   The same move on the calling (event-loop) thread, for bytes known to be in the page cache
 *   (the tail a follower or consumer reads right after it was written): it writes what the
 *   socket takes without waiting, returns that count (0 when the socket is full or the file
 *   ends), and throws the same Error on a failure. Why: each pool call costs the event loop a
 *   thread hand-off, and on a 2-core machine the woken worker preempts the loop: a CPU profile
 *   of a leader at 434k records/s spent a quarter of its busy time there. A page-cache miss would
 *   block the loop on the disk, so the caller uses this only for a log's recent tail, as it
 *   reads small slices inline (file-records.ts).
 *
 *   sendMoreNow(socketFd, bytes) -> number
 *
 *   Sends a response's header on the calling thread with MSG_MORE, right before the sendfile of
 *   its records: the kernel holds the few header bytes and sends them in the first segment of
 *   the records, instead of as a segment of their own. Why: on loopback each segment is a wake-up
 *   of the reader and a pass through both TCP stacks, and a header written through Node's queue
 *   was an eighth of a busy leader's CPU time (issue 11's profile); the reader woke twice per
 *   response. Returns the bytes the socket took (0 when it is full); throws as sendfileNow. The
 *   sendfile that follows carries no MSG_MORE at its end, so it pushes the header out with it
 *   (the kernel would send held bytes on its own after 200 ms).
 *
 * Design, and why:
 *
 * 1. sendfile(2) runs on the libuv thread pool (napi_create_async_work), never on the event-loop
 *    thread. The socket side is non-blocking (it is Node's own socket), but the file side is not:
 *    a page-cache miss makes sendfile wait for the disk, and that wait must not stall the loop.
 *
 * 2. The socket is non-blocking, so sendfile returns EAGAIN when the socket's send buffer is full
 *    (a slow reader). The worker then waits for writability with poll(2) on the socket, bounded
 *    by `writableWaitMsMax` for the whole call. A reader that catches up within the bound costs
 *    one wake-up and no round trip through JavaScript. When the bound passes, the call returns
 *    what it wrote (possibly 0 bytes); JavaScript then waits on a timer before the next call,
 *    so a stalled reader holds a pool thread for at most `writableWaitMsMax` at a time and
 *    cannot starve file-system work that shares the pool (4 threads by default).
 *    Why not uv_poll on the socket from the event loop: libuv keeps one watcher per fd, and Node
 *    already owns the watcher of this fd; a second one would replace Node's.
 *
 * 3. Both descriptors are duplicated (F_DUPFD_CLOEXEC) on the event-loop thread when the call
 *    starts, and the duplicates are closed on the event-loop thread when it completes. If Node
 *    closes the socket, or the segment owner closes the file, while the worker runs, the number
 *    could be reused by an unrelated open(); the worker only ever touches its own duplicates,
 *    so it can never write into, or read from, someone else's file. The price: a connection that
 *    Node closes during a call stays open until that call returns (bounded as in 2).
 *
 * 4. EINTR from sendfile or poll is retried. A partial write advances the position and loops.
 *    sendfile returning 0 means the file ended before `count` bytes: reported as `endOfFile`,
 *    and the caller decides (it re-checks the file size and reports a truncated file).
 *    Any other errno rejects the promise with the errno name. SIGPIPE is ignored by Node, so a
 *    peer that has gone away surfaces as EPIPE or ECONNRESET, not as a signal.
 *
 * Linux only: other systems have a different sendfile signature; the build script skips this
 * addon there and the JavaScript copy path is used.
 */
#ifndef __linux__
#error "sendfile.c uses the Linux sendfile(2) signature; other systems use the copy path"
#endif

#include "addon.h"

#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Linux transfers at most this many bytes per sendfile call; larger counts are a caller bug. */
#define SENDFILE_COUNT_MAX 0x7ffff000
/* A pool thread must never wait long on one socket (design point 2). */
#define WRITABLE_WAIT_MS_MAX 1000

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int socket_fd; /* our duplicate, owned by this struct */
  int file_fd;   /* our duplicate, owned by this struct */
  off_t position;
  size_t count;
  int writable_wait_ms_max;
  /* Results, written by the worker, read on the event-loop thread after it finishes. */
  size_t bytes_written;
  bool end_of_file;
  int error_number;
  const char *failed_syscall;
} sendfile_chunk;

static int64_t monotonic_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void record_failure(sendfile_chunk *chunk, const char *syscall, int error_number) {
  chunk->failed_syscall = syscall;
  chunk->error_number = error_number;
}

/*
 * Runs on a pool thread. Loops until `count` bytes are written, the file ends, an error occurs,
 * or the socket stayed full for `writable_wait_ms_max` in total (design points 2 and 4).
 */
static void execute_sendfile_chunk(napi_env env, void *data) {
  (void)env;
  sendfile_chunk *chunk = data;
  off_t offset = chunk->position;
  int64_t deadline_ms = -1; /* set at the first EAGAIN: only waiting counts against the bound */

  while (chunk->bytes_written < chunk->count) {
    ssize_t sent = sendfile(chunk->socket_fd, chunk->file_fd, &offset,
                            chunk->count - chunk->bytes_written);
    if (sent > 0) {
      chunk->bytes_written += (size_t)sent;
      continue;
    }
    if (sent == 0) {
      chunk->end_of_file = true;
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      record_failure(chunk, "sendfile", errno);
      return;
    }

    int64_t now_ms = monotonic_ms();
    if (deadline_ms < 0) deadline_ms = now_ms + chunk->writable_wait_ms_max;
    if (now_ms >= deadline_ms) return;

    struct pollfd socket_poll = {.fd = chunk->socket_fd, .events = POLLOUT, .revents = 0};
    int ready = poll(&socket_poll, 1, (int)(deadline_ms - now_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      record_failure(chunk, "poll", errno);
      return;
    }
    if (ready == 0) return; /* still full at the deadline: JavaScript backs off on a timer */
    /* Writable, or POLLERR/POLLHUP: the next sendfile either writes or reports the error. */
  }
}

static void close_duplicates(sendfile_chunk *chunk) {
  if (chunk->socket_fd >= 0) close(chunk->socket_fd);
  if (chunk->file_fd >= 0) close(chunk->file_fd);
  chunk->socket_fd = -1;
  chunk->file_fd = -1;
}

/* Runs on the event-loop thread after the worker finished: settle the promise, free. */
static void complete_sendfile_chunk(napi_env env, napi_status status, void *data) {
  sendfile_chunk *chunk = data;
  close_duplicates(chunk);

  if (status != napi_ok) {
    napi_value error = addon_system_error(env, "sendfile", ECANCELED);
    napi_reject_deferred(env, chunk->deferred, error);
  } else if (chunk->failed_syscall != NULL) {
    napi_value error = addon_system_error(env, chunk->failed_syscall, chunk->error_number);
    napi_reject_deferred(env, chunk->deferred, error);
  } else {
    napi_value result, bytes_written, end_of_file;
    napi_create_object(env, &result);
    napi_create_double(env, (double)chunk->bytes_written, &bytes_written);
    napi_get_boolean(env, chunk->end_of_file, &end_of_file);
    napi_set_named_property(env, result, "bytesWritten", bytes_written);
    napi_set_named_property(env, result, "endOfFile", end_of_file);
    napi_resolve_deferred(env, chunk->deferred, result);
  }

  napi_delete_async_work(env, chunk->work);
  free(chunk);
}

static napi_value sendfile_chunk_entry(napi_env env, napi_callback_info info) {
  napi_value arguments[5];
  const char *usage = "sendfileChunk(socketFd, fileFd, position, count, writableWaitMsMax)";
  if (!addon_exact_arguments(env, info, 5, arguments, usage)) {
    return NULL;
  }

  int socket_fd, file_fd;
  int64_t position, count, writable_wait_ms_max;
  if (!addon_descriptor_argument(env, arguments[0], &socket_fd, "socketFd")) return NULL;
  if (!addon_descriptor_argument(env, arguments[1], &file_fd, "fileFd")) return NULL;
  if (!addon_integer_argument(env, arguments[2], &position, "position")) return NULL;
  if (!addon_integer_argument(env, arguments[3], &count, "count")) return NULL;
  if (!addon_integer_argument(env, arguments[4], &writable_wait_ms_max, "writableWaitMsMax")) {
    return NULL;
  }
  if (position < 0) return addon_throw_range_error(env, "position must not be negative");
  if (count <= 0 || count > SENDFILE_COUNT_MAX) {
    return addon_throw_range_error(env, "count out of range");
  }
  if (writable_wait_ms_max < 0 || writable_wait_ms_max > WRITABLE_WAIT_MS_MAX) {
    return addon_throw_range_error(env, "writableWaitMsMax out of range");
  }

  napi_value promise;
  napi_deferred deferred;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) return NULL;

  /* Design point 3: duplicate now, on the event-loop thread, while both numbers are known good. */
  int socket_duplicate = fcntl(socket_fd, F_DUPFD_CLOEXEC, 0);
  if (socket_duplicate < 0) {
    napi_reject_deferred(env, deferred, addon_system_error(env, "dup", errno));
    return promise;
  }
  int file_duplicate = fcntl(file_fd, F_DUPFD_CLOEXEC, 0);
  if (file_duplicate < 0) {
    int error_number = errno;
    close(socket_duplicate);
    napi_reject_deferred(env, deferred, addon_system_error(env, "dup", error_number));
    return promise;
  }

  sendfile_chunk *chunk = calloc(1, sizeof *chunk);
  if (chunk == NULL) {
    close(socket_duplicate);
    close(file_duplicate);
    napi_reject_deferred(env, deferred, addon_system_error(env, "calloc", ENOMEM));
    return promise;
  }
  chunk->deferred = deferred;
  chunk->socket_fd = socket_duplicate;
  chunk->file_fd = file_duplicate;
  chunk->position = (off_t)position;
  chunk->count = (size_t)count;
  chunk->writable_wait_ms_max = (int)writable_wait_ms_max;

  napi_value resource_name;
  napi_create_string_utf8(env, "SpoolSendfileChunk", NAPI_AUTO_LENGTH, &resource_name);
  napi_status status = napi_create_async_work(env, NULL, resource_name, execute_sendfile_chunk,
                                              complete_sendfile_chunk, chunk, &chunk->work);
  if (status == napi_ok) status = napi_queue_async_work(env, chunk->work);
  if (status != napi_ok) {
    if (chunk->work != NULL) napi_delete_async_work(env, chunk->work);
    close_duplicates(chunk);
    free(chunk);
    napi_reject_deferred(env, deferred, addon_system_error(env, "napi_queue_async_work", EIO));
  }
  return promise;
}

static napi_value sendfile_now_entry(napi_env env, napi_callback_info info) {
  napi_value arguments[4];
  if (!addon_exact_arguments(env, info, 4, arguments,
                             "sendfileNow(socketFd, fileFd, position, count)")) {
    return NULL;
  }
  int socket_fd, file_fd;
  int64_t position, count;
  if (!addon_descriptor_argument(env, arguments[0], &socket_fd, "socketFd")) return NULL;
  if (!addon_descriptor_argument(env, arguments[1], &file_fd, "fileFd")) return NULL;
  if (!addon_integer_argument(env, arguments[2], &position, "position")) return NULL;
  if (!addon_integer_argument(env, arguments[3], &count, "count")) return NULL;
  if (position < 0) return addon_throw_range_error(env, "position must not be negative");
  if (count <= 0 || count > SENDFILE_COUNT_MAX) {
    return addon_throw_range_error(env, "count out of range");
  }

  /* On this thread, so both descriptors stay what the caller checked: no duplicates needed. */
  off_t offset = (off_t)position;
  size_t written = 0;
  while (written < (size_t)count) {
    ssize_t sent = sendfile(socket_fd, file_fd, &offset, (size_t)count - written);
    if (sent > 0) {
      written += (size_t)sent;
      continue;
    }
    if (sent == 0) break; /* the file ended: the caller's pool path reports it */
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break; /* full: the pool path waits */
    napi_throw(env, addon_system_error(env, "sendfile", errno));
    return NULL;
  }
  napi_value result;
  napi_create_double(env, (double)written, &result);
  return result;
}

static napi_value send_more_now_entry(napi_env env, napi_callback_info info) {
  napi_value arguments[2];
  if (!addon_exact_arguments(env, info, 2, arguments,
                             "sendMoreNow(socketFd, bytes)")) {
    return NULL;
  }
  int socket_fd;
  if (!addon_descriptor_argument(env, arguments[0], &socket_fd, "socketFd")) return NULL;
  bool is_buffer = false;
  napi_is_buffer(env, arguments[1], &is_buffer);
  if (!is_buffer) return addon_throw_type_error(env, "bytes must be a Buffer");
  void *data = NULL;
  size_t length = 0;
  if (napi_get_buffer_info(env, arguments[1], &data, &length) != napi_ok) {
    return addon_throw_type_error(env, "bytes must be a Buffer");
  }
  size_t written = 0;
  while (written < length) {
    ssize_t sent = send(socket_fd, (const char *)data + written, length - written,
                        MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE);
    if (sent > 0) {
      written += (size_t)sent;
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break; /* full: caller queues */
    napi_throw(env, addon_system_error(env, "send", sent < 0 ? errno : EIO));
    return NULL;
  }
  napi_value result;
  napi_create_double(env, (double)written, &result);
  return result;
}

napi_status sendfile_register(napi_env env, napi_value exports) {
  napi_value function;
  napi_status status = napi_create_function(env, "sendfileChunk", NAPI_AUTO_LENGTH,
                                            sendfile_chunk_entry, NULL, &function);
  if (status != napi_ok) return status;
  status = napi_set_named_property(env, exports, "sendfileChunk", function);
  if (status != napi_ok) return status;
  status = napi_create_function(env, "sendfileNow", NAPI_AUTO_LENGTH, sendfile_now_entry, NULL,
                                &function);
  if (status != napi_ok) return status;
  status = napi_set_named_property(env, exports, "sendfileNow", function);
  if (status != napi_ok) return status;
  status = napi_create_function(env, "sendMoreNow", NAPI_AUTO_LENGTH, send_more_now_entry, NULL,
                                &function);
  if (status != napi_ok) return status;
  return napi_set_named_property(env, exports, "sendMoreNow", function);
}
