/*
 * crc32c.c: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of RecordBatch v2,
 * with the CPU's CRC and carry-less multiply instructions. The leader checks the CRC of every
 * produced batch before it appends it; with @node-rs/crc32 (one chain of crc32 instructions,
 * about 5 GB/s on 16 KiB batches) that check was the largest cost of an append after the write.
 *
 * JavaScript API (registered by addon.c; src/native-crc32c.ts types it):
 *
 *   crc32c(data, start, end, initial = 0) -> number
 *     The CRC-32C of data[start, end) as an unsigned 32-bit integer. `data` is a Uint8Array
 *     (a Buffer). `initial` is the CRC of the bytes before `start`, to continue a computation:
 *     crc32c(d, 0, n) === crc32c(d, k, n, crc32c(d, 0, k)). Throws TypeError or RangeError on
 *     bad arguments, never reads outside the array.
 *
 *   crc32cImplementation -> string
 *     The path crc32c runs on this CPU, the fastest it has (design point 1): "avx512-vpclmulqdq",
 *     "sse4.2-pclmul-3way", "sse4.2" or "portable".
 *
 *   crc32cByImplementation -> { [name]: crc32c }
 *     Every path this CPU can run, under the same names, each with crc32c's signature: tests
 *     check each one, so the paths a machine does not choose are still covered where it can
 *     run them, and benchmarks compare them.
 *
 * Design, and why:
 *
 * 1. One binary for every x86-64 CPU. The fast paths are compiled with per-function target
 *    attributes (target("sse4.2,pclmul")), not with -msse4.2 for the whole file, so the compiler
 *    never emits those instructions anywhere else; the path is chosen once, at load, with
 *    __builtin_cpu_supports. Without SSE4.2 (or off x86-64) a slice-by-8 table path runs.
 *
 * 2. The crc32 instruction folds 8 bytes into the CRC with a latency of 3 cycles but can start
 *    one every cycle, so a single dependent chain runs at a third of the unit's speed. The
 *    sse4.2-pclmul-3way path splits each stretch of the input into three adjacent blocks A, B, C
 *    of n bytes each and runs three independent chains over them, interleaved instruction by
 *    instruction. With crc_A seeded by the running CRC register and crc_B, crc_C by zero, the
 *    register is linear in its inputs, so
 *
 *        crc(A || B || C) = shift(crc_A, 2n) ^ shift(crc_B, n) ^ crc_C
 *
 *    where shift(c, k) is the register after feeding k zero bytes to c: c * x^(8k) mod P.
 *
 * 3. shift with one carry-less multiply: for a reflected 32-bit c and the constant
 *    K = x^(8k - 33) mod P, pclmulqdq(c, K) is the 64-bit reflected product c * K * x (a
 *    carry-less product of reflected values comes out one bit position short, which is a factor
 *    x), and crc32(0, that) multiplies by x^32 and reduces mod P: c * x^(8k) mod P. The
 *    constants are computed at load (shift_constant), in software.
 *
 * 4. Block lengths adapt to the input: each round takes the largest multiple of 8 bytes, up to
 *    BLOCK_WORDS_MAX words per block, that the remaining input fills three times, so a 16 KiB
 *    batch runs as two rounds of 3 x 2 KiB and one of 3 x 1344 bytes, and only its last few
 *    bytes run as a single chain. 2 KiB blocks keep the combine (two multiplies, about 10
 *    cycles) near 1 % of a round; blocks under BLOCK_WORDS_MIN words are not worth a combine.
 *
 * 5. With SSE4.2 but no PCLMULQDQ (CPUs from before 2010) the single-chain sse4.2 path runs: it
 *    is still four times the speed of the tables.
 *
 * 6. Initialization (tables, constants, dispatch) runs once per process under pthread_once, as
 *    the module may be loaded by several worker threads; afterwards everything is read-only.
 *
 * 7. The crc32 unit takes one instruction a cycle, so three chains are its ceiling (about
 *    23 GB/s here). CPUs with AVX-512 and VPCLMULQDQ (Ice Lake, Zen 4 and later) run the
 *    avx512-vpclmulqdq path instead, about 42 GB/s on a 16 KiB batch: four 64-byte accumulators
 *    (sixteen 16-byte lanes) take the input 256 bytes at a time, and each lane moves its 128 bits
 *    256 bytes on with two carry-less multiplies and adds them to the bytes there (folding). By
 *    the argument of point 3, a lane of words w0 (first in memory) and w1 moved on by f bytes is
 *    clmul(w0, x^(8f + 31) mod P) ^ clmul(w1, x^(8f - 33) mod P), each constant in the low half
 *    of its 64-bit word: congruent to the lane times x^(8f) mod P, which is all a CRC can see.
 *    At the end the accumulators fold into the last one, 64 bytes whose CRC from a zero
 *    register (eight crc32 instructions) is the register for everything folded, and the last
 *    bytes, fewer than 256, go through the three-chain path. The running CRC enters by XOR into
 *    the first four bytes: crc(c, M) = crc(0, M with c added to its first 32 bits).
 */
#include "addon.h"

#include <node_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_X86_64 1
#include <immintrin.h>
#else
#define CRC32C_X86_64 0
#endif

/* The reflected form of the Castagnoli polynomial 0x1EDC6F41. */
#define CASTAGNOLI_POLYNOMIAL_REFLECTED 0x82f63b78u

/* Design point 4: the longest and shortest block of a three-chain round, in 8-byte words. */
#define BLOCK_WORDS_MAX 256
#define BLOCK_WORDS_MIN 8

typedef uint32_t (*crc32c_update_function)(uint32_t crc, const uint8_t *data, size_t length);

static pthread_once_t initialize_once = PTHREAD_ONCE_INIT;
/* Slice-by-8 tables: table k maps a byte to its contribution when k more bytes follow it. */
static uint32_t slice_by_8_tables[8][256];
/* shift_constants[w][0] shifts by 2 blocks of w words, [w][1] by 1 block (design point 3). */
static uint32_t shift_constants[BLOCK_WORDS_MAX + 1][2];
/* Design point 7: fold constants for 256 and 64 bytes, [0] for the first word, [1] the second. */
static uint32_t fold_256_constants[2];
static uint32_t fold_64_constants[2];

/* ---- Portable path ------------------------------------------------------------------------- */

static void build_slice_by_8_tables(void) {
  for (uint32_t byte = 0; byte < 256; byte++) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; bit++) {
      crc = (crc & 1) ? (crc >> 1) ^ CASTAGNOLI_POLYNOMIAL_REFLECTED : crc >> 1;
    }
    slice_by_8_tables[0][byte] = crc;
  }
  for (uint32_t byte = 0; byte < 256; byte++) {
    uint32_t crc = slice_by_8_tables[0][byte];
    for (int table = 1; table < 8; table++) {
      crc = (crc >> 8) ^ slice_by_8_tables[0][crc & 0xff];
      slice_by_8_tables[table][byte] = crc;
    }
  }
}

/* Little-endian 64-bit load without alignment or aliasing assumptions. */
static inline uint64_t load_little_endian_64(const uint8_t *bytes) {
  uint64_t word;
  memcpy(&word, bytes, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  word = __builtin_bswap64(word);
#endif
  return word;
}

/* Feeds `length` bytes to the CRC register `crc` (no pre- or post-inversion). */
static uint32_t update_portable(uint32_t crc, const uint8_t *data, size_t length) {
  while (length >= 8) {
    uint64_t word = load_little_endian_64(data) ^ crc;
    crc = slice_by_8_tables[7][word & 0xff] ^ slice_by_8_tables[6][(word >> 8) & 0xff] ^
          slice_by_8_tables[5][(word >> 16) & 0xff] ^ slice_by_8_tables[4][(word >> 24) & 0xff] ^
          slice_by_8_tables[3][(word >> 32) & 0xff] ^ slice_by_8_tables[2][(word >> 40) & 0xff] ^
          slice_by_8_tables[1][(word >> 48) & 0xff] ^ slice_by_8_tables[0][word >> 56];
    data += 8;
    length -= 8;
  }
  while (length > 0) {
    crc = (crc >> 8) ^ slice_by_8_tables[0][(crc ^ *data) & 0xff];
    data++;
    length--;
  }
  return crc;
}

/* ---- Shift constants (design point 3) ------------------------------------------------------ */

/*
 * a * b mod P for reflected polynomials (bit 31 is x^0). Runs only at load: 32 steps a call.
 */
static uint32_t multiply_modulo_polynomial(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int bit = 31; bit >= 0; bit--) {
    if (a & (1u << bit)) product ^= b;
    b = (b & 1) ? (b >> 1) ^ CASTAGNOLI_POLYNOMIAL_REFLECTED : b >> 1; /* b *= x */
  }
  return product;
}

/* x^exponent mod P, reflected, by square and multiply. */
static uint32_t x_to_the_power_modulo_polynomial(uint64_t exponent) {
  uint32_t result = 0x80000000u; /* x^0 */
  uint32_t square = 0x40000000u; /* x^1, then x^2, x^4, ... */
  while (exponent > 0) {
    if (exponent & 1) result = multiply_modulo_polynomial(result, square);
    square = multiply_modulo_polynomial(square, square);
    exponent >>= 1;
  }
  return result;
}

/* The K of design point 3 for a shift by `shift_bytes` bytes. */
static uint32_t shift_constant(uint64_t shift_bytes) {
  return x_to_the_power_modulo_polynomial(8 * shift_bytes - 33);
}

static void build_shift_constants(void) {
  for (uint32_t words = 1; words <= BLOCK_WORDS_MAX; words++) {
    shift_constants[words][0] = shift_constant(2 * 8 * (uint64_t)words);
    shift_constants[words][1] = shift_constant(8 * (uint64_t)words);
  }
  fold_256_constants[0] = x_to_the_power_modulo_polynomial(8 * 256 + 31);
  fold_256_constants[1] = x_to_the_power_modulo_polynomial(8 * 256 - 33);
  fold_64_constants[0] = x_to_the_power_modulo_polynomial(8 * 64 + 31);
  fold_64_constants[1] = x_to_the_power_modulo_polynomial(8 * 64 - 33);
}

/* ---- x86-64 paths -------------------------------------------------------------------------- */

#if CRC32C_X86_64

/* One chain: bytes until 8-aligned, 8-byte words, then the last bytes. */
__attribute__((target("sse4.2"))) static uint32_t update_sse42(uint32_t crc, const uint8_t *data,
                                                               size_t length) {
  while (length > 0 && ((uintptr_t)data & 7) != 0) {
    crc = _mm_crc32_u8(crc, *data);
    data++;
    length--;
  }
  uint64_t crc64 = crc;
  while (length >= 8) {
    crc64 = _mm_crc32_u64(crc64, load_little_endian_64(data));
    data += 8;
    length -= 8;
  }
  crc = (uint32_t)crc64;
  while (length > 0) {
    crc = _mm_crc32_u8(crc, *data);
    data++;
    length--;
  }
  return crc;
}

/* c * x^(8k) mod P, where constant = shift_constant(k) (design point 3). */
__attribute__((target("sse4.2,pclmul"))) static inline uint64_t shift_by_constant(
    uint64_t crc, uint32_t constant) {
  __m128i product = _mm_clmulepi64_si128(_mm_cvtsi64_si128((int64_t)crc),
                                         _mm_cvtsi32_si128((int32_t)constant), 0x00);
  return _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(product));
}

/* Three chains over adjacent blocks, combined with carry-less multiplies (design points 2-4). */
__attribute__((target("sse4.2,pclmul"))) static uint32_t update_sse42_pclmul(uint32_t crc,
                                                                             const uint8_t *data,
                                                                             size_t length) {
  while (length > 0 && ((uintptr_t)data & 7) != 0) {
    crc = _mm_crc32_u8(crc, *data);
    data++;
    length--;
  }
  uint64_t crc64 = crc;
  while (length >= 3 * 8 * BLOCK_WORDS_MIN) {
    size_t words = length / (3 * 8);
    if (words > BLOCK_WORDS_MAX) words = BLOCK_WORDS_MAX;
    const size_t block_bytes = 8 * words;
    const uint8_t *block_a = data;
    const uint8_t *block_b = data + block_bytes;
    const uint8_t *block_c = data + 2 * block_bytes;
    uint64_t crc_a = crc64, crc_b = 0, crc_c = 0;
    for (size_t at = 0; at < block_bytes; at += 8) {
      crc_a = _mm_crc32_u64(crc_a, load_little_endian_64(block_a + at));
      crc_b = _mm_crc32_u64(crc_b, load_little_endian_64(block_b + at));
      crc_c = _mm_crc32_u64(crc_c, load_little_endian_64(block_c + at));
    }
    crc64 = shift_by_constant(crc_a, shift_constants[words][0]) ^
            shift_by_constant(crc_b, shift_constants[words][1]) ^ crc_c;
    data += 3 * block_bytes;
    length -= 3 * block_bytes;
  }
  while (length >= 8) {
    crc64 = _mm_crc32_u64(crc64, load_little_endian_64(data));
    data += 8;
    length -= 8;
  }
  crc = (uint32_t)crc64;
  while (length > 0) {
    crc = _mm_crc32_u8(crc, *data);
    data++;
    length--;
  }
  return crc;
}

/* Every 16-byte lane of `accumulator` moved 256 or 64 bytes on, plus `next` (design point 7). */
__attribute__((target("avx512f,vpclmulqdq"))) static inline __m512i fold_512(
    __m512i accumulator, __m512i constants, __m512i next) {
  __m512i first_words = _mm512_clmulepi64_epi128(accumulator, constants, 0x00);
  __m512i second_words = _mm512_clmulepi64_epi128(accumulator, constants, 0x11);
  return _mm512_ternarylogic_epi64(first_words, second_words, next, 0x96); /* a ^ b ^ c */
}

__attribute__((target("avx512f,vpclmulqdq"))) static inline __m512i broadcast_fold_constants(
    const uint32_t constants[2]) {
  return _mm512_broadcast_i32x4(_mm_set_epi64x(constants[1], constants[0]));
}

/* Four 64-byte accumulators folded 256 bytes at a time (design point 7); 512 bytes at least. */
__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) static uint32_t
update_avx512_vpclmulqdq(uint32_t crc, const uint8_t *data, size_t length) {
  if (length < 2 * 256) return update_sse42_pclmul(crc, data, length);
  const __m512i fold_256 = broadcast_fold_constants(fold_256_constants);
  const __m512i fold_64 = broadcast_fold_constants(fold_64_constants);
  /* The running CRC is added to the first four bytes: crc(c, M) = crc(0, M ^ c). */
  __m512i accumulator_0 =
      _mm512_xor_si512(_mm512_loadu_si512(data), _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, crc));
  __m512i accumulator_1 = _mm512_loadu_si512(data + 64);
  __m512i accumulator_2 = _mm512_loadu_si512(data + 128);
  __m512i accumulator_3 = _mm512_loadu_si512(data + 192);
  data += 256;
  length -= 256;
  while (length >= 256) {
    accumulator_0 = fold_512(accumulator_0, fold_256, _mm512_loadu_si512(data));
    accumulator_1 = fold_512(accumulator_1, fold_256, _mm512_loadu_si512(data + 64));
    accumulator_2 = fold_512(accumulator_2, fold_256, _mm512_loadu_si512(data + 128));
    accumulator_3 = fold_512(accumulator_3, fold_256, _mm512_loadu_si512(data + 192));
    data += 256;
    length -= 256;
  }
  accumulator_1 = fold_512(accumulator_0, fold_64, accumulator_1);
  accumulator_2 = fold_512(accumulator_1, fold_64, accumulator_2);
  accumulator_3 = fold_512(accumulator_2, fold_64, accumulator_3);
  /* The last 64 bytes now stand for everything so far: their CRC from zero is the register. */
  uint64_t words[8];
  _mm512_storeu_si512(words, accumulator_3);
  uint64_t register_value = 0;
  for (int word = 0; word < 8; word++) register_value = _mm_crc32_u64(register_value, words[word]);
  return update_sse42_pclmul((uint32_t)register_value, data, length);
}

#endif /* CRC32C_X86_64 */

/* ---- Dispatch ------------------------------------------------------------------------------ */

typedef struct {
  const char *name;
  crc32c_update_function update;
} crc32c_path;

/* Every path this CPU can run, fastest last; the last one is the one crc32c uses. */
static crc32c_path available_paths[4];
static size_t available_path_count;

static void initialize(void) {
  build_slice_by_8_tables();
  build_shift_constants();
  available_paths[available_path_count++] = (crc32c_path){"portable", update_portable};
#if CRC32C_X86_64
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    available_paths[available_path_count++] = (crc32c_path){"sse4.2", update_sse42};
    if (__builtin_cpu_supports("pclmul")) {
      available_paths[available_path_count++] =
          (crc32c_path){"sse4.2-pclmul-3way", update_sse42_pclmul};
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq")) {
        available_paths[available_path_count++] =
            (crc32c_path){"avx512-vpclmulqdq", update_avx512_vpclmulqdq};
      }
    }
  }
#endif
}

/* ---- N-API entry --------------------------------------------------------------------------- */

/* Largest integer a JavaScript number holds exactly (Number.MAX_SAFE_INTEGER). */
#define SAFE_INTEGER_MAX 9007199254740991.0

static napi_value throw_type_error(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

/* Reads an integer argument in [minimum, maximum]; returns false, with an error thrown, if not. */
static bool read_integer_argument(napi_env env, napi_value value, const char *name,
                                  double minimum, double maximum, double *out) {
  char message[160];
  double number;
  if (napi_get_value_double(env, value, &number) != napi_ok) {
    snprintf(message, sizeof message, "crc32c: %s must be a number", name);
    throw_type_error(env, message);
    return false;
  }
  /* The range check comes first: it also rejects NaN, and converting a huge double is undefined. */
  if (!(number >= -SAFE_INTEGER_MAX && number <= SAFE_INTEGER_MAX) ||
      number != (double)(int64_t)number) {
    snprintf(message, sizeof message, "crc32c: %s must be an integer", name);
    throw_type_error(env, message);
    return false;
  }
  if (number < minimum || number > maximum) {
    snprintf(message, sizeof message, "crc32c: %s is %.0f, outside [%.0f, %.0f]", name, number,
             minimum, maximum);
    napi_throw_range_error(env, NULL, message);
    return false;
  }
  *out = number;
  return true;
}

/* crc32c(data, start, end, initial?) with the update function given as the callback data. */
static napi_value crc32c_entry(napi_env env, napi_callback_info info) {
  size_t argument_count = 4;
  napi_value arguments[4];
  void *callback_data;
  if (napi_get_cb_info(env, info, &argument_count, arguments, NULL, &callback_data) != napi_ok) {
    return NULL;
  }
  const crc32c_path *path = callback_data;
  if (argument_count < 3) {
    return throw_type_error(env, "crc32c(data, start, end, initial?) takes 3 or 4 arguments");
  }

  napi_typedarray_type type;
  size_t length;
  void *bytes;
  if (napi_get_typedarray_info(env, arguments[0], &type, &length, &bytes, NULL, NULL) != napi_ok ||
      type != napi_uint8_array) {
    return throw_type_error(env, "crc32c: data must be a Uint8Array or a Buffer");
  }

  double start, end, initial = 0;
  if (!read_integer_argument(env, arguments[1], "start", 0, (double)length, &start)) return NULL;
  if (!read_integer_argument(env, arguments[2], "end", start, (double)length, &end)) return NULL;
  if (argument_count == 4) {
    napi_valuetype initial_type;
    if (napi_typeof(env, arguments[3], &initial_type) != napi_ok) return NULL;
    if (initial_type != napi_undefined &&
        !read_integer_argument(env, arguments[3], "initial", 0, 4294967295.0, &initial)) {
      return NULL;
    }
  }

  uint32_t crc = (uint32_t)initial;
  /* An empty or detached array may have no storage at all: then there is nothing to add. */
  if (end > start) {
    crc = ~path->update(~crc, (const uint8_t *)bytes + (size_t)start, (size_t)(end - start));
  }
  napi_value result;
  if (napi_create_uint32(env, crc, &result) != napi_ok) return NULL;
  return result;
}

static napi_status create_crc32c_function(napi_env env, const crc32c_path *path,
                                          napi_value *function) {
  return napi_create_function(env, "crc32c", NAPI_AUTO_LENGTH, crc32c_entry, (void *)path,
                              function);
}

napi_status crc32c_register(napi_env env, napi_value exports) {
  pthread_once(&initialize_once, initialize);
  const crc32c_path *fastest = &available_paths[available_path_count - 1];
  napi_value function, name, by_implementation;
  napi_status status = create_crc32c_function(env, fastest, &function);
  if (status == napi_ok) status = napi_set_named_property(env, exports, "crc32c", function);
  if (status == napi_ok) {
    status = napi_create_string_utf8(env, fastest->name, NAPI_AUTO_LENGTH, &name);
  }
  if (status == napi_ok) {
    status = napi_set_named_property(env, exports, "crc32cImplementation", name);
  }
  /* Every path this CPU can run, by name: tests check each against the JavaScript tables. */
  if (status == napi_ok) status = napi_create_object(env, &by_implementation);
  for (size_t index = 0; status == napi_ok && index < available_path_count; index++) {
    status = create_crc32c_function(env, &available_paths[index], &function);
    if (status == napi_ok) {
      status = napi_set_named_property(env, by_implementation, available_paths[index].name,
                                       function);
    }
  }
  if (status == napi_ok) {
    status = napi_set_named_property(env, exports, "crc32cByImplementation", by_implementation);
  }
  return status;
}
