/* libFuzzer target: the recording reader (chunks, formats, events, every renderer) on any file bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "format/filter.h"
#include "format/recfile.h"
#include "format/recording.h"
#include "format/trace_out.h"
#include "core/log.h"

/*
 * Most mutations break a chunk's CRC32C, and the reader then skips it
 * before any decoder sees it.  So when the first byte is odd, the CRCs of
 * the chunks that follow one another from the header are recomputed: the
 * formats, events and renderers get the mutated bytes.
 */
static void fix_crcs(uint8_t *p, size_t size)
{
	size_t off = sizeof(struct ks_rec_header);

	while (off + sizeof(struct ks_rec_chunk) <= size) {
		struct ks_rec_chunk c;

		memcpy(&c, p + off, sizeof(c));
		if (c.magic != KS_REC_CHUNK_MAGIC || c.len > size - off - sizeof(c))
			break;
		if (c.type != KS_REC_FORMAT) {
			c.crc = 0;
			c.crc = ks_crc32c(ks_crc32c(0, &c, sizeof(c)), p + off + sizeof(c), c.len);
			memcpy(p + off, &c, sizeof(c));
		}
		off += sizeof(c) + c.len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct ks_recording rec;
	uint8_t *p;
	char path[64];
	int fd;

	if (!size)
		return 0;
	if (!null) {
		null = fopen("/dev/null", "w");
		ks_json = false;
	}
	p = malloc(size);
	if (!p)
		return 0;
	memcpy(p, data + 1, size - 1);
	if (data[0] & 1)
		fix_crcs(p, size - 1);
	fd = memfd_create("ks-fuzz", MFD_CLOEXEC);
	if (fd < 0 || write(fd, p, size - 1) != (ssize_t)(size - 1))
		abort();
	free(p);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!ks_recording_load(&rec, path)) {
		ks_trace_write(&rec, KS_TRACE_TEXT, 0, null);
		ks_trace_write(&rec, KS_TRACE_JSON, 0, null);
		ks_trace_write(&rec, KS_TRACE_CSV, 0, null);
		ks_trace_write_perfetto(&rec, 0, null);
		/* fields every event has: never an error, so the filter runs on every event */
		ks_recording_filter(&rec, "cpu < 2 || comm ~ \"*a?\"");
		ks_trace_write(&rec, KS_TRACE_TEXT, 0, null);
		ks_recording_free(&rec);
	}
	close(fd);
	return 0;
}
