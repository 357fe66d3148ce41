/* A recording's collector reports (record --collect) read back from their JSON renderings as struct ks_report: the whole-window ones and the interval series. */
#ifndef KS_FORMAT_REPORTS_H
#define KS_FORMAT_REPORTS_H

#include <stddef.h>
#include "core/report.h"
#include "core/series.h"
#include "core/strindex.h"
#include "format/recording.h"

struct ks_rec_reports {
	struct ks_report *totals; /* the whole-window reports (kind total), in file order */
	int ntotals;
	struct ks_series *series; /* the interval reports, in file order */
	/* private: the names (keys, columns, histograms) the reports point to, each once */
	char **names;
	size_t nnames, cap;
	struct ks_strindex idx;
};

/*
 * Reads @rec's report chunks into @out; times are shifted to
 * CLOCK_REALTIME by the manifest's calibration.  0, or -ENOMEM, or
 * -EBADMSG with one line in @why (a rendering that is not the JSON writer's).
 * Release with ks_rec_reports_free, also after an error.
 */
int ks_rec_reports_load(struct ks_rec_reports *out, const struct ks_recording *rec, char *why, size_t whylen);
void ks_rec_reports_free(struct ks_rec_reports *r);

#endif
