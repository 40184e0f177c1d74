/*
 * addon.c: the entry point of the segment store's native addon, segment_store_native.node.
 * Plain C against node_api.h (N-API 8), so one build serves every Node version that has it.
 * Each part registers its own functions; a part that fails to register fails the load, and the
 * JavaScript side then falls back for every part (src/native-addon.ts).
 */
#include "addon.h"

NAPI_MODULE_INIT() {
  if (sendfile_register(env, exports) != napi_ok) return NULL;
  if (crc32c_register(env, exports) != napi_ok) return NULL;
  if (writeback_register(env, exports) != napi_ok) return NULL;
  return exports;
}
