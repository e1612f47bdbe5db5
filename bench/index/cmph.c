/*
 * cmph's CHD (Belazzougui, Botelho and Dietzfelbinger, "Hash, displace, and
 * compress", ESA 2009), the minimal perfect hash Hashfile's classic index
 * follows, built from the keys benches/index.rs builds its functions from:
 * bits per key, build time and query time, to set beside that bench's rows.
 *
 *   apt-get install -y libcmph-dev
 *   cc -O2 -o /tmp/cmph-bench bench/index/cmph.c -lcmph
 *   /tmp/cmph-bench 100000 1000000 10000000      # CMPH_LAMBDA=5 by default
 *
 * Keys are `key-<i>-<hex>`, as benches/index.rs makes them. The function is
 * packed (cmph_pack) and queried with cmph_search_packed, cmph's fastest
 * path; bits per key are the packed size's. Queries are every key in a
 * random order (the same xorshift shuffle as the Rust bench), each result
 * summed so none is skipped, the fastest of 3 passes. A cmph query hashes
 * the string itself (Jenkins); the Rust bench's "function query" rows are
 * given XXH3 hashes made beforehand, so they leave out the string hash.
 */
#include <cmph.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void run(uint32_t n, uint32_t lambda, double alpha) {
    char **keys = malloc(sizeof(char *) * n);
    for (uint32_t i = 0; i < n; i++) {
        char buffer[64];
        uint64_t mixed = (uint64_t)i * 0x9e3779b97f4a7c15ull;
        int len = snprintf(buffer, sizeof buffer, "key-%u-%llx", i, (unsigned long long)(mixed >> 40));
        keys[i] = malloc(len + 1);
        memcpy(keys[i], buffer, len + 1);
    }
    uint32_t *order = malloc(sizeof(uint32_t) * n);
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (uint32_t i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t j = (uint32_t)(x % ((uint64_t)i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }

    double started = now();
    cmph_io_adapter_t *source = cmph_io_vector_adapter(keys, n);
    cmph_config_t *config = cmph_config_new(source);
    cmph_config_set_algo(config, CMPH_CHD);
    cmph_config_set_b(config, lambda);
    if (alpha > 0) cmph_config_set_graphsize(config, alpha);
    cmph_t *mphf = cmph_new(config);
    cmph_config_destroy(config);
    if (mphf == NULL) {
        fprintf(stderr, "cmph could not build %u keys\n", n);
        exit(1);
    }
    uint32_t packed_len = cmph_packed_size(mphf);
    void *packed = malloc(packed_len);
    cmph_pack(mphf, packed);
    double built = now() - started;

    /* Minimal and perfect: every key its own index below n. */
    uint8_t *seen = calloc(n, 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = cmph_search_packed(packed, keys[i], (uint32_t)strlen(keys[i]));
        if (at >= n || seen[at]) {
            fprintf(stderr, "cmph gave key %u index %u twice or out of range\n", i, at);
            exit(1);
        }
        seen[at] = 1;
    }

    uint32_t *lengths = malloc(sizeof(uint32_t) * n);
    for (uint32_t i = 0; i < n; i++) lengths[i] = (uint32_t)strlen(keys[i]);
    double best = 1e9;
    uint64_t sum = 0;
    for (int pass = 0; pass < 3; pass++) {
        double t = now();
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = order[i];
            sum += cmph_search_packed(packed, keys[k], lengths[k]);
        }
        double took = (now() - t) / n;
        if (took < best) best = took;
    }
    printf("cmph CHD, lambda %u, load factor %s, %u keys: %.3f bits/key, build %.2f s (%.2f M keys/s), query %.0f ns (checksum %llu)\n",
           lambda, alpha > 0 ? getenv("CMPH_ALPHA") : "cmph's default", n, packed_len * 8.0 / n, built, n / built / 1e6, best * 1e9, (unsigned long long)sum);

    cmph_destroy(mphf);
    cmph_io_vector_adapter_destroy(source);
    free(packed);
    free(seen);
    free(lengths);
    free(order);
    for (uint32_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
}

int main(int argc, char **argv) {
    const char *lambda_env = getenv("CMPH_LAMBDA");
    uint32_t lambda = lambda_env ? (uint32_t)atoi(lambda_env) : 5;
    const char *alpha_env = getenv("CMPH_ALPHA");
    double alpha = alpha_env ? atof(alpha_env) : 0;
    if (argc < 2) {
        run(100000, lambda, alpha);
        return 0;
    }
    for (int i = 1; i < argc; i++) run((uint32_t)strtoul(argv[i], NULL, 10), lambda, alpha);
    return 0;
}
