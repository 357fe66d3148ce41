# Sourced by the biolat tests: a loop device over a file in memory (about 20 us per 4 KiB read, nobody else uses it).
# loop_setup: sets LOOP (/dev/loopN), DEV (loopN), SYS (/sys/block/loopN) and T_CLEANUP; prints a SKIP and
# exits 0 when there is no losetup or no loop device to be had.
loop_setup() {
	if ! command -v losetup >/dev/null 2>&1; then
		t_skip "${1:-biolat}" "no losetup to make a loop device"
		exit 0
	fi
	img_dir=/dev/shm
	[ -d "$img_dir" ] && [ -w "$img_dir" ] || img_dir=$T_TMP
	IMG=$img_dir/ksight-biolat-$$.img
	LOOP=
	T_CLEANUP='[ -n "$LOOP" ] && { echo none >"/sys/block/${LOOP#/dev/}/queue/scheduler" 2>/dev/null; losetup -d "$LOOP" 2>/dev/null; }; rm -f "$IMG"'
	dd if=/dev/zero of="$IMG" bs=1M count=16 2>/dev/null
	LOOP=$(losetup -f --show "$IMG" 2>/dev/null) || { LOOP=$(losetup -f) && losetup "$LOOP" "$IMG"; } || LOOP=
	if [ -z "$LOOP" ] || [ ! -b "$LOOP" ]; then
		LOOP=
		t_skip "${1:-biolat}" "cannot attach a loop device"
		exit 0
	fi
	command -v udevadm >/dev/null 2>&1 && udevadm settle -t 5 2>/dev/null
	DEV=${LOOP#/dev/}
	SYS=/sys/block/$DEV
}
