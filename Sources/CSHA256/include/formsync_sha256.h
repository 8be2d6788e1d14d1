#ifndef FORMSYNC_SHA256_H
#define FORMSYNC_SHA256_H

#include <stddef.h>
#include <stdint.h>

/// Compresses `blocks` whole 64-byte blocks at `data` into `state` (eight words, FIPS 180-4
/// order). Uses the CPU's SHA extensions when it has them, the portable code otherwise.
void formsync_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);

/// The portable code alone, whatever the CPU has (tests compare the two).
void formsync_sha256_blocks_portable(uint32_t state[8], const uint8_t *data, size_t blocks);

/// Whether `formsync_sha256_blocks` uses the CPU's SHA extensions on this machine.
int formsync_sha256_accelerated(void);

#endif
