# The sendfile(2) addon of the segment store: plain C against node_api.h, so one build serves
# every Node version with N-API 8. Built by scripts/build-native.js (npm run build:native),
# which runs npm's bundled node-gyp against this Node's own headers: nothing is downloaded.
{
  "targets": [
    {
      "target_name": "segment_store_sendfile",
      "sources": ["native/sendfile.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags_c": ["-std=gnu11", "-Wall", "-Wextra"],
    }
  ]
}
