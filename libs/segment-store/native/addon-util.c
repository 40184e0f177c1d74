/*
 * addon-util.c: what the addon's parts share: JavaScript errors shaped like Node's system errors
 * (message, code = the errno name, errno negated, syscall), and checked integer arguments.
 */
#include "addon.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *errno_name(int error_number) {
  switch (error_number) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE";
    case EMFILE: return "EMFILE";
    case ENOSPC: return "ENOSPC";
    case ESPIPE: return "ESPIPE";
    case EPIPE: return "EPIPE";
    case EOVERFLOW: return "EOVERFLOW";
    case ENOTSOCK: return "ENOTSOCK";
    case EDESTADDRREQ: return "EDESTADDRREQ";
    case EMSGSIZE: return "EMSGSIZE";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENETDOWN: return "ENETDOWN";
    case ENETUNREACH: return "ENETUNREACH";
    case ENETRESET: return "ENETRESET";
    case ECONNABORTED: return "ECONNABORTED";
    case ECONNRESET: return "ECONNRESET";
    case ENOBUFS: return "ENOBUFS";
    case ENOTCONN: return "ENOTCONN";
    case ESHUTDOWN: return "ESHUTDOWN";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EHOSTDOWN: return "EHOSTDOWN";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    default: return NULL;
  }
}

static napi_status set_named_int32(napi_env env, napi_value object, const char *name, int32_t v) {
  napi_value value;
  napi_status status = napi_create_int32(env, v, &value);
  if (status != napi_ok) return status;
  return napi_set_named_property(env, object, name, value);
}

static napi_status set_named_string(napi_env env, napi_value object, const char *name,
                                    const char *text) {
  napi_value value;
  napi_status status = napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &value);
  if (status != napi_ok) return status;
  return napi_set_named_property(env, object, name, value);
}

/* Builds an Error shaped like Node's system errors: message, code, errno (negated), syscall. */
napi_value addon_system_error(napi_env env, const char *syscall, int error_number) {
  char fallback_name[32];
  const char *name = errno_name(error_number);
  if (name == NULL) {
    snprintf(fallback_name, sizeof fallback_name, "ERRNO_%d", error_number);
    name = fallback_name;
  }
  char message[256];
  snprintf(message, sizeof message, "%s failed: %s (%s)", syscall, name, strerror(error_number));

  napi_value code_value, message_value, error;
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code_value);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &message_value);
  napi_create_error(env, code_value, message_value, &error);
  set_named_int32(env, error, "errno", -error_number);
  set_named_string(env, error, "syscall", syscall);
  return error;
}

napi_value addon_throw_type_error(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

napi_value addon_throw_range_error(napi_env env, const char *message) {
  napi_throw_range_error(env, NULL, message);
  return NULL;
}

/* Largest integer a JavaScript number holds exactly (Number.MAX_SAFE_INTEGER). */
#define SAFE_INTEGER_MAX 9007199254740991.0

/* Reads a safe integer argument; returns false, with a TypeError thrown, for anything else. */
bool addon_integer_argument(napi_env env, napi_value value, int64_t *out, const char *name) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_number) {
    char message[128];
    snprintf(message, sizeof message, "%s must be a number", name);
    addon_throw_type_error(env, message);
    return false;
  }
  double as_double;
  napi_get_value_double(env, value, &as_double);
  /* The range check comes first: converting NaN or a huge double to int64_t is undefined. */
  bool in_range = as_double >= -SAFE_INTEGER_MAX && as_double <= SAFE_INTEGER_MAX;
  if (!in_range || as_double != (double)(int64_t)as_double) {
    char message[128];
    snprintf(message, sizeof message, "%s must be an integer", name);
    addon_throw_type_error(env, message);
    return false;
  }
  *out = (int64_t)as_double;
  return true;
}

bool addon_exact_arguments(napi_env env, napi_callback_info info, size_t expected,
                           napi_value *arguments, const char *usage) {
  size_t argument_count = expected;
  napi_get_cb_info(env, info, &argument_count, arguments, NULL, NULL);
  if (argument_count == expected) return true;
  char message[160];
  snprintf(message, sizeof message, "%s takes %zu arguments", usage, expected);
  addon_throw_type_error(env, message);
  return false;
}

bool addon_descriptor_argument(napi_env env, napi_value value, int *out, const char *name) {
  int64_t descriptor;
  if (!addon_integer_argument(env, value, &descriptor, name)) return false;
  if (descriptor < 0 || descriptor > INT32_MAX) {
    char message[128];
    snprintf(message, sizeof message, "%s out of range", name);
    addon_throw_range_error(env, message);
    return false;
  }
  *out = (int)descriptor;
  return true;
}

