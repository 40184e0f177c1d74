/*
 * addon.h: the parts of the segment store's native addon, each registering its functions on the
 * module's exports. addon.c calls them when Node loads the addon.
 */
#ifndef SEGMENT_STORE_ADDON_H
#define SEGMENT_STORE_ADDON_H

#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>

/* An Error like Node's system errors: code (the errno name), errno (negated), syscall
 * (addon-util.c). */
napi_value addon_system_error(napi_env env, const char *syscall, int error_number);

/* Throw and return NULL, for a callback to return. */
napi_value addon_throw_type_error(napi_env env, const char *message);
napi_value addon_throw_range_error(napi_env env, const char *message);

/* Reads a call's arguments into `arguments`, which has room for `expected`; false, with a
 * TypeError "<usage> takes <expected> arguments" thrown, when the call passed another number. */
bool addon_exact_arguments(napi_env env, napi_callback_info info, size_t expected,
                           napi_value *arguments, const char *usage);

/* Reads an argument that must be a safe integer; false, with a TypeError thrown, otherwise. */
bool addon_integer_argument(napi_env env, napi_value value, int64_t *out, const char *name);

/* Reads a file-descriptor argument: an integer from 0 to INT32_MAX; false, with a TypeError or a
 * RangeError ("<name> out of range") thrown, otherwise. */
bool addon_descriptor_argument(napi_env env, napi_value value, int *out, const char *name);

/* sendfileChunk, sendfileNow: fetch bytes from a segment file to a socket (sendfile.c). */
napi_status sendfile_register(napi_env env, napi_value exports);

/* startWriteback: start the write-out of a segment file's range (writeback.c). */
napi_status writeback_register(napi_env env, napi_value exports);

/* crc32c, crc32cImplementation, crc32cByImplementation: the batch checksum (crc32c.c). */
napi_status crc32c_register(napi_env env, napi_value exports);

#endif
