/* CRC-32C (Castagnoli) of chunk payloads. */
#ifndef LP_CRC32C_H
#define LP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC: pass 0 for the first block. */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

#endif
