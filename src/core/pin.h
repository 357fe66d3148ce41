/* --pin: collectors' programs, links and maps pinned in bpffs, and adopted by the next process that pins there. */
#ifndef KS_CORE_PIN_H
#define KS_CORE_PIN_H

#include <stdbool.h>
#include <stdint.h>
#include <bpf/libbpf.h>

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
 * The drain sequence kept beside @obj's pins, DIR/<obj>/drain_seq: a
 * one-element array of a u64, the number of drains whose data these maps
 * no longer hold (core/instance.h, ks_instance_resume).  Made with the
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

#endif
