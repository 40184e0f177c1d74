/*
 * addon.h: the parts of the segment store's native addon, each registering its functions on the
 * module's exports. addon.c calls them when Node loads the addon.
 */
#ifndef SEGMENT_STORE_ADDON_H
#define SEGMENT_STORE_ADDON_H

#include <node_api.h>

/* sendfileChunk, sendfileNow: fetch bytes from a segment file to a socket (sendfile.c). */
napi_status sendfile_register(napi_env env, napi_value exports);

/* startWriteback: start the write-out of a segment file's range (writeback.c). */
napi_status writeback_register(napi_env env, napi_value exports);

/* crc32c, crc32cImplementation, crc32cByImplementation: the batch checksum (crc32c.c). */
napi_status crc32c_register(napi_env env, napi_value exports);

#endif
