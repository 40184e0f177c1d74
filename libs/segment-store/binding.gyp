# The native addon of the segment store: sendfile(2) for the fetch path, a hardware CRC-32C for
# the append path, and sync_file_range(2) to write recent appends out as they come. Plain C against node_api.h, so one build serves every Node version with
# N-API 8. Built by scripts/build-native.js (npm run build:native), which runs npm's bundled
# node-gyp against this Node's own headers: nothing is downloaded.
#
# No -msse4.2 or -mpclmul here: crc32c.c enables those per function and checks the CPU at load,
# so the addon also loads, and runs its portable path, on a CPU without them.
{
  "targets": [
    {
      "target_name": "segment_store_native",
      "sources": [
        "native/addon.c",
        "native/addon-util.c",
        "native/sendfile.c",
        "native/crc32c.c",
        "native/writeback.c"
      ],
      "defines": ["NAPI_VERSION=8"],
      # An addon may not be linked with --no-undefined (N-API comes from the node binary), so a
      # misspelled call would only fail when it runs: an undeclared function is an error here.
      "cflags_c": ["-std=gnu11", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
    }
  ]
}
