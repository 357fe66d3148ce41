/* --pin: collectors' programs, links and maps pinned in bpffs, and adopted by the next process that pins there. */
#ifndef KS_CORE_PIN_H
#define KS_CORE_PIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>

struct ks_instance;
struct ks_report;

/*
 * Layout under the pin directory DIR, one directory per BPF object (the
 * skeleton's name, e.g. DIR/ks_syscalls/): map_<map> (dots made
 * underscores: bpffs refuses dots), prog_<program>, link_<program>,
 * hook_<variant> and drain_seq (ks_pin_seq_open).  A directory is built as <name>_new and renamed into
 * place once complete, so a crash while pinning leaves nothing adoptable.
 */

/*
 * Whether @path is an entry under the pin directory as ksight makes them:
 * not a symbolic link (bpf_obj_get and opendir would follow it to another's
 * object), a directory when @dir else a pinned object, and this euid's
 * (bpffs gives a pin its pinner's uid).  0, -ENOENT, or -ELOOP/-EPERM
 * after a one-line error.
 */
int ks_pin_own(const char *path, bool dir);
/* bpf_obj_get(@path) of an entry ks_pin_own accepts: an fd, or its negative errno (ENOENT said nothing). */
int ks_pin_obj_get(const char *path);

/* Collectors loaded from now on pin under @dir (NULL: nothing is pinned, the default). */
void ks_pin_scope(const char *dir);
const char *ks_pin_dir(void);

/*
 * Before a skeleton's load, with its maps sized and programs chosen for
 * @hook.  With a pin scope and @obj's directory there, the load adopts
 * it: every map reuses its pinned twin (after checking type, sizes and
 * the .rodata contents, i.e. the options the programs were loaded with),
 * and no program is loaded (the pinned links keep the old ones attached).
 * Returns 1 when adopting, 0 for a fresh load, -ENOENT when another hook
 * variant was pinned (the loader tries the next), -ESTALE or another
 * negative errno after a one-line error when the pins do not match these
 * options (ks_pin_failed then says so).
 */
int ks_pin_prepare(struct bpf_object *obj, const char *hook);
/* True after a prepare printed why the pins could not be adopted. */
bool ks_pin_failed(void);
/* Whether the last ks_pin_prepare of @obj adopted its pins. */
bool ks_pin_adopted(const struct bpf_object *obj);
/*
 * A new fd of @p's pinned twin (an adopted object loads no program: its
 * own fds are -1), for the caller to close; negative errno when @p was
 * never pinned (these options do not load it).
 */
int ks_pin_prog_get(struct bpf_object *obj, const struct bpf_program *p);
/* How many prepares adopted so far: a caller compares it before and after opening one collector. */
unsigned int ks_pin_adoptions(void);
/* After a fresh attach for @hook: pins @obj's maps, programs and the links of @skel; 0 or negative errno. */
int ks_pin_attached(struct bpf_object *obj, struct bpf_object_skeleton *skel, const char *hook);
/*
 * Links and programs a collector made itself, outside its skeleton
 * (funclat's per-target probes): pinned in the same directory, each under
 * its @name ("link_..." or "prog_..."; unique, not a program's own).
 */
struct ks_pin_extra {
	char name[40];
	int fd;
};
/* ks_pin_attached, and @n extras beside them in the same rename. */
int ks_pin_attached_extra(struct bpf_object *obj, struct bpf_object_skeleton *skel, const char *hook,
			  const struct ks_pin_extra *x, int n);
/* A new fd of the extra @name pinned beside @obj's pins, for the caller to close; -ENOENT when there is none. */
int ks_pin_extra_get(const struct bpf_object *obj, const char *name);

/*
 * The drain sequence kept beside @obj's pins, DIR/<obj>/drain_seq: a
 * one-element array of a u64, the number of drains whose data these maps
 * no longer hold (ks_instance_resume below).  Made with the
 * other pins, or now (at 0) beside pins of a ksight that had none.  An fd
 * for the caller to close, with the map's id in *@id (unique for the
 * boot: it tells these pins from any before them); -ENOENT without a pin
 * scope, another negative errno on failure.
 */
int ks_pin_seq_open(const struct bpf_object *obj, uint32_t *id);

/*
 * Makes sure @dir can hold pins: mounts bpffs at /sys/fs/bpf when nothing
 * is mounted there (saying so), then checks that @dir is, or can be made,
 * a directory on a bpf filesystem: not a link, and when it exists, this
 * euid's and not writable by group or others (what is pinned there is
 * adopted).  0, or after a one-line error -EINVAL (DIR is not usable: bad
 * usage), -EPERM (bpffs not mounted and no CAP_SYS_ADMIN to mount it, or
 * DIR another's) or -EACCES (no write access to DIR's parent).
 */
int ks_pin_check_dir(const char *dir);
/*
 * Makes sure no other process serves from @dir (two would split the
 * drains and overwrite each other's saved totals): an fd to keep open for
 * the life of the process, or -EBUSY/-errno after a one-line error.
 */
int ks_pin_lock(const char *dir);
/* Removes what ks_pin_attached and the exporter's state left under @dir, then @dir; 0 or -errno. */
int ks_pin_remove(const char *dir);

/*
 * What serve --pin needs of a collector, beside drain's READ and CLEAR
 * modes (core/collector.h): its descriptor's optional pin member, NULL
 * for a collector that cannot be pinned.
 */
struct ks_pin_ops {
	/*
	 * offsetof(the context's type, its pointer to a bpftool skeleton),
	 * whose object's pins core keeps the drain sequence beside
	 * (ks_instance_object).  Every such skeleton starts as struct
	 * ks_skel_head (core/loader.h; KS_SKEL_OPS checks).
	 */
	size_t skel_at;
	/*
	 * Optional: in-kernel values kept cumulative, whose copy as of the
	 * last read lives in user space (syscalls' histograms).  cursor_get
	 * gives that copy as of the last KS_DRAIN_READ (a malloc'd buffer, the
	 * caller's), saved with the totals that read went into; cursor_set
	 * puts a saved one back after an adoption.  0 or -errno.  Core
	 * reaches them through ks_instance_cursor_get/set.
	 */
	int (*cursor_get)(void *ctx, void **buf, size_t *len);
	int (*cursor_set)(void *ctx, const void *buf, size_t len);
	/*
	 * Instead of cursor_get/set, for a cursor that is only u64 counters of
	 * the context (the .bss counters' last read): their offsets in it,
	 * saved and put back by core (ks_cursor_get_u64/set).
	 */
	struct ks_cursor_u64 {
		const size_t *at;
		int n; /* at most 15 */
	} cursor_u64;
};

/*
 * The drain protocol of serve --pin (implemented in core/instance.c,
 * beside the one-step drain it splits): drains in two steps around the save
 * of the totals, so that a kill -9 anywhere neither loses a drain nor
 * counts one twice.
 *
 * Per drain N of an instance: mark, READ the quiet half into the totals
 * (ks_instances_collect), save the totals saying they hold N drains
 * (ks_instance_drains), CLEAR the half and write N into the sequence
 * beside the pins (ks_instances_clear).  The saved count S and the
 * pinned one C tell a restart where the kill came (ks_drain_resume):
 *   before the save        S = C = N-1: the maps hold nothing the totals
 *                          hold (the read half is counted by a later
 *                          drain, with what the programs add to it);
 *   after the save, before or while clearing, or before C is written
 *                          S = N = C+1: the half the programs are not
 *                          writing was counted; it is emptied without
 *                          counting, before the first mark can send the
 *                          programs back into it;
 *   after C is written     S = C = N.
 * A save that failed leaves S < C: those drains are gone (counted in
 * ksight_pin_save_errors_total when they happened).  The totals are saved
 * with the id of the sequence's map, so that totals counted from other
 * maps (pins made afresh, an older state) are never paired with these.
 * Values the kernel keeps cumulative, reported as the difference from a
 * last read kept in user space (syscalls' histograms, .bss counters),
 * need no sequence: that read is the collector's cursor, saved in the
 * same copy as the totals it went into and put back on a restart.
 */
struct ks_pin_seq {
	int fd;		  /* the sequence map beside the pins */
	uint32_t id;	  /* that map's id: pairs saved totals with these pins */
	uint64_t cleared; /* its value: drains whose data the maps no longer hold */
	bool clear_due;	  /* a KS_DRAIN_READ ran; its KS_DRAIN_CLEAR is owed */
};

/*
 * After ks_instance_open under a pin scope: opens the sequence beside
 * @in's pins (ks_pin_seq_open) as in->pin.  0 (also without a pin scope,
 * where nothing is pinned) or negative errno; -EOPNOTSUPP for a collector
 * without pin ops.
 */
int ks_instance_pin(struct ks_instance *in);
enum ks_resume {
	KS_RESUME_COUNT,   /* the maps hold nothing the totals hold */
	KS_RESUME_DISCARD, /* the last drain saved was not (all) emptied: empty it, counting nothing */
	KS_RESUME_LOST,	   /* drains emptied after the last good save are lost */
	KS_RESUME_FRESH,   /* the totals were not counted from these maps */
	KS_RESUME_ODD,	   /* saved more than one drain ahead of the maps: cannot be, counted as COUNT */
};
/* The decision above: @paired when the saved id is this sequence's, @saved drains S, @cleared C. */
enum ks_resume ks_drain_resume(bool paired, uint64_t saved, uint64_t cleared);
/*
 * After opening @in under a pin scope and restoring its totals, which
 * hold @saved drains counted from the sequence map @saved_id (0: none
 * known) with the collector's cursor @cursor (@len bytes, NULL: none):
 * decides, empties when it must, and makes the sequence say @saved.
 * Returns the decision, or a negative errno.
 */
int ks_instance_resume(struct ks_instance *in, uint64_t saved, uint32_t saved_id, const void *cursor, size_t len);
/* How many drains the totals hold once the last read is added: what to save with them. */
uint64_t ks_instance_drains(const struct ks_instance *in);
/* After the save: empties what ks_instances_collect read and counts the drain in each sequence; the first error. */
int ks_instances_clear(struct ks_instance *in, int n);
/* ks_instances_collect's steps for a pinned @in: the clear a failed save still owes, then the read. */
int ks_pin_clear_owed(struct ks_instance *in);
int ks_pin_read(struct ks_instance *in, struct ks_report *r);
/* Closes and frees in->pin (ks_instance_close). */
void ks_instance_unpin(struct ks_instance *in);
/*
 * Test-only fault injection (tests/integration/test_serve_pin.sh): with
 * KSIGHT_FAULT=POINT[:N] in the environment, the Nth time (1 without N)
 * the process reaches @point it sends itself SIGKILL.  Points:
 * after-read, after-save (serve's collect), in-clear (ks_instances_clear,
 * the first instance emptied, its sequence not yet written).
 */
void ks_fault_point(const char *point);
/* The BPF object of an opened instance whose collector has pin ops (by their skel_at), else NULL. */
struct bpf_object *ks_instance_object(const struct ks_instance *in);
/*
 * @in's --pin cursor: its collector's cursor_get, or the counters its
 * cursor_u64 names; *@buf NULL (and 0) when it has none.  set puts a
 * saved one back (0 when it has none).  0 or negative errno.
 */
int ks_instance_cursor_get(const struct ks_instance *in, void **buf, size_t *len);
int ks_instance_cursor_set(struct ks_instance *in, const void *buf, size_t len);

#endif
