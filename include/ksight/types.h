/* Fixed-width types and attributes for headers shared by BPF programs (vmlinux.h) and user space. */
#ifndef KSIGHT_TYPES_H
#define KSIGHT_TYPES_H

#ifndef __bpf__
#include <linux/types.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif

#endif
