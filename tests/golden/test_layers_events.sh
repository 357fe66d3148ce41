# Golden: event analysis (pairing, field filters, anonymizing) lives in src/events/, apart from the file format in src/format/, and the dependency runs one way: events/ uses format/, never the reverse.
. tests/lib.sh

misplaced=
for f in pair filter anon; do
	for x in c h; do
		[ -f "src/events/$f.$x" ] || misplaced="$misplaced src/events/$f.$x(missing)"
		[ -e "src/format/$f.$x" ] && misplaced="$misplaced src/format/$f.$x"
	done
done
t_eq "layers: pair, filter and anon are in src/events/, none in src/format/" "" "$misplaced"
# the writer that renders pairs is src/output/trace.c, and the pair reports are src/events/pair_report.c
bad=$(grep -l '^#include "events/' src/format/*.[ch] 2>/dev/null)
t_eq "layers: no file of src/format/ includes src/events/" "" "$bad"
# and the analysis needs nothing of the recorder or the commands above it
up=$(grep -l '^#include "\(record\|cli\|serve\|output\)/' src/events/*.[ch] 2>/dev/null)
t_eq "layers: src/events/ includes nothing from record/, cli/, serve/ or output/" "" "$up"
exit $T_FAILED
