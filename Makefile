# Builds ./ksight (BPF objects -> skeletons -> one binary), the unit tests and the test workloads.
CC ?= gcc
CLANG ?= clang-14
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

B := build
CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc -I$(B)/skel -I$(B)/gen
# libtracefs/libtraceevent (ksight list): their headers live in their own directories
TRACE_PKGS := libtracefs libtraceevent
CFLAGS += $(shell pkg-config --cflags $(TRACE_PKGS))
LDLIBS := -lbpf -lelf -lz -lm $(shell pkg-config --libs $(TRACE_PKGS))
# feature libraries, one line each (profile: libdw; serve: libmicrohttpd, libyaml, libcrypt, and
# GnuTLS, libmicrohttpd's TLS, for SHA-256 and random bytes)
LDLIBS += -ldw
LDLIBS += -lmicrohttpd -lyaml -lcrypt -lgnutls -lpthread
# diff: json-c reads collector reports
LDLIBS += -ljson-c
# top: ncurses (wide-character build) draws the live view
LDLIBS += $(shell pkg-config --libs ncursesw)
# report --trace-dat: its unit test reads the trace.dat back with libtracecmd (trace-cmd's own reader)
$(B)/tests/test_tracedat $(B)/tests/san/test_tracedat: LDLIBS += $(shell pkg-config --libs libtracecmd)
$(B)/tests/test_tracedat $(B)/tests/san/test_tracedat: CFLAGS += $(shell pkg-config --cflags libtracecmd)

# every C build writes its header dependencies (TARGET.d, read below by -include): an edited header
# rebuilds only what includes it; -MP's empty rules keep a deleted header from stopping the build
DEPFLAGS = -MMD -MP -MF $@.d -MT $@

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ibpf -Iinclude -Wall -Werror

BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(B)/skel/%.skel.h,$(BPF_SRCS))
# every src/ directory but the CLI's is library code (core, output, collectors, and the feature
# directories: format, events, record, symbol, profile, serve)
CORE_SRCS := $(filter-out src/cli/%,$(wildcard src/*/*.c))
CLI_SRCS := $(wildcard src/cli/*.c)
GEN_SRCS := $(B)/gen/names.c
CORE_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CORE_SRCS)) $(B)/obj/gen/names.o
CLI_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CLI_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
UNIT_SAN_BINS := $(patsubst tests/unit/%.c,$(B)/tests/san/%,$(UNIT_SRCS))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,$(B)/workloads/%,$(WORKLOAD_SRCS))
# Benchmark tools (bench/*.c, with skeletons of bench/*.bpf.c, and the objects objfloor loads): only `make bench` builds them.
# bench/hookcost.bpf.c is built once per probe (HOOKCOST_OBJS), not as a plain object with a skeleton
BENCH_BPF_SRCS := $(filter-out bench/hookcost.bpf.c,$(wildcard bench/*.bpf.c))
BENCH_OBJS := $(patsubst bench/%.bpf.c,$(B)/bench/bpf/%.bpf.o,$(BENCH_BPF_SRCS))
BENCH_SKELS := $(patsubst bench/%.bpf.c,$(B)/bench/skel/%.skel.h,$(BENCH_BPF_SRCS))
BENCH_BINS := $(patsubst bench/%.c,$(B)/bench/%,$(filter-out %.bpf.c,$(wildcard bench/*.c)))
# bench/hookcost.sh's probes: one object each of bench/hookcost.bpf.c (see there)
HOOKCOST_PROBES := empty clock clock2 pid cpu lines4 pages4 warm4 pcpu hash cgroup follow
HOOKCOST_OBJS := $(patsubst %,$(B)/bench/bpf/hookcost-%.bpf.o,$(HOOKCOST_PROBES))
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

.PHONY: FORCE all clean test unit run setup bench bench-tools golden-update test-kernels san test-san
.SECONDARY:
all: ksight $(UNIT_BINS) $(WORKLOADS) man completion

ksight: $(CLI_OBJS) $(B)/libksight.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(B)/libksight.a: $(CORE_OBJS)
	rm -f $@ && ar rcs $@ $^

$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(wildcard include/ksight/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# syscalls assigns histogram slots with atomic fetch-add and compare-and-exchange: BPF ISA v3 (kernel 5.12+)
$(B)/bpf/syscalls.bpf.o: BPF_CFLAGS += -mcpu=v3

# funclat's USDT programs use libbpf's usdt.bpf.h, which includes <linux/errno.h> and so the host's <asm/errno.h>
$(B)/bpf/funclat.bpf.o: BPF_CFLAGS += -I/usr/include/$(shell $(CC) -dumpmachine)

$(B)/skel/%.skel.h: $(B)/bpf/%.bpf.o
	@mkdir -p $(@D)
	$(BPFTOOL) gen skeleton $< name ks_$* > $@.tmp && mv $@.tmp $@

$(B)/gen/names.c: scripts/gen-names.sh
	@mkdir -p $(@D)
	sh scripts/gen-names.sh > $@.tmp && mv $@.tmp $@

# the git revision ksight_build_info reports: rewritten only when it changes, so a commit rebuilds one object
$(B)/gen/revision.h: FORCE
	@mkdir -p $(@D)
	@printf '#define KS_GIT_REVISION "%s"\n' "$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" > $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

FORCE:

$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The skeletons come first (order-only): a fresh build has no .d yet to say who includes which;
# afterwards the .d names the skeleton an object includes, so a changed one rebuilds its includers.
$(B)/obj/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/tests/%: tests/unit/%.c $(B)/libksight.a | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -Itests/unit -o $@ $< $(B)/libksight.a $(LDLIBS) -lm

# The same unit tests under ASan/UBSan, linked with the library built instrumented too: its
# objects once (build/san-obj), not every source again for each test.
SAN_OBJS := $(patsubst %.c,$(B)/san-obj/%.o,$(CORE_SRCS)) $(B)/san-obj/gen/names.o

$(B)/san-obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

$(B)/san-obj/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

$(B)/libksight-san.a: $(SAN_OBJS)
	rm -f $@ && ar rcs $@ $^

$(B)/tests/san/%: tests/unit/%.c $(B)/libksight-san.a | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -Itests/unit -o $@ $< $(B)/libksight-san.a $(LDLIBS) -lm

$(B)/workloads/%: tests/workloads/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror -D_GNU_SOURCE $(DEPFLAGS) -o $@ $< -lpthread

# profile's workload: no frame pointers, PIE, with debug info: its stacks can only be unwound from CFI
$(B)/workloads/prof_qsort: tests/workloads/prof_qsort.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fPIE -pie -Wall -Wextra -Werror $(DEPFLAGS) -o $@ $<

# pprof's workload: non-PIE with debug info and frame pointers (go tool pprof -disasm takes addresses as the ELF's)
$(B)/workloads/prof_src: tests/workloads/prof_src.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -no-pie -Wall -Wextra -Werror $(DEPFLAGS) -o $@ $<

# a relocatable object mapped (as ld maps its inputs): the dwarf unwinder's view of the process has it
$(B)/workloads/map_obj: tests/workloads/map_obj.c $(B)/workloads/objfile.o
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror $(DEPFLAGS) -o $@ $<

$(B)/workloads/objfile.o: tests/workloads/lib/objfile.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -c $(DEPFLAGS) -o $@ $<

# cfi past its tables' load: PIE, no frame pointers, and the library it dlopens later, built the same
$(B)/workloads/prof_dlopen: tests/workloads/prof_dlopen.c $(B)/workloads/libprofdl.so
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fPIE -pie -Wall -Wextra -Werror -D_GNU_SOURCE $(DEPFLAGS) -o $@ $<

$(B)/workloads/libprofdl.so: tests/workloads/lib/profdl.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fPIC -shared -Wall -Wextra -Werror $(DEPFLAGS) -o $@ $<

# stacks through JIT code: PIE without frame pointers around code generated with one
$(B)/workloads/prof_jit: tests/workloads/prof_jit.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fPIE -pie -Wall -Wextra -Werror -D_GNU_SOURCE $(DEPFLAGS) -o $@ $<

# stacks through signal frames: PIE without frame pointers, the hot work in a SIGPROF handler
$(B)/workloads/prof_signal: tests/workloads/prof_signal.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -fPIE -pie -Wall -Wextra -Werror -D_GNU_SOURCE $(DEPFLAGS) -o $@ $<

# offcpu --stacks' workload: frame pointers, so its user stack is walked in the kernel
$(B)/workloads/pipe_block: tests/workloads/pipe_block.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $(DEPFLAGS) -o $@ $< -lpthread

# the stack modes' many-paths workload: frame pointers, so every level is in the user stack
$(B)/workloads/stackpaths: tests/workloads/stackpaths.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $(DEPFLAGS) -o $@ $<

$(B)/bench/bpf/%.bpf.o: bench/%.bpf.c $(wildcard bpf/*.h) $(wildcard include/ksight/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(B)/bench/bpf/hookcost-%.bpf.o: bench/hookcost.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -DPROBE_$* -c $< -o $@

$(B)/bench/skel/%.skel.h: $(B)/bench/bpf/%.bpf.o
	@mkdir -p $(@D)
	$(BPFTOOL) gen skeleton $< name ks_$* > $@.tmp && mv $@.tmp $@

$(B)/bench/%: bench/%.c $(B)/libksight.a | $(BENCH_SKELS) $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -I$(B)/bench/skel -o $@ $< $(B)/libksight.a $(LDLIBS)

unit: $(UNIT_BINS) $(UNIT_SAN_BINS)

# ksight itself under ASan/UBSan (any finding aborts it), for the whole suite: make test-san.
# clang: its one runtime writes UBSan's reports to ASAN_OPTIONS's log_path too (gcc's
# separate libubsan writes them to stderr only, which many tests keep or discard).
SAN_DIR := build-san
SAN_CC ?= $(CLANG)
san: $(SAN_DIR)/ksight

# one object per source (not one compiler run over all): each has its .d, so a header edited
# mid-build rebuilds its includers next time instead of leaving a binary of old and new
SAN_KS_OBJS := $(patsubst %.c,$(SAN_DIR)/obj/%.o,$(CLI_SRCS) $(CORE_SRCS)) $(SAN_DIR)/obj/gen/names.o
$(SAN_DIR)/ksight: $(SAN_KS_OBJS)
	$(SAN_CC) $(CFLAGS) $(SAN) -o $@ $^ $(LDLIBS)

$(SAN_DIR)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(@D)
	$(SAN_CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

$(SAN_DIR)/obj/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(SAN_CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

# Rewrites the golden fixtures (tests/golden/*.txt) from the current binary; review the diff, then commit.
golden-update: ksight
	KSIGHT_GOLDEN_UPDATE=1 sh tests/golden/test_help.sh

# Man pages and shell completion, written by the binary from the tables -h prints (src/cli/help.c):
# ksight(1) and ksight-COMMAND(1) for every command `ksight -h` lists.
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
.PHONY: man completion install
man: $(B)/man/.stamp
completion: $(B)/completion/ksight $(B)/completion/_ksight

$(B)/man/.stamp: ksight
	rm -rf $(@D) && mkdir -p $(@D)
	./ksight help --man >$(@D)/ksight.1
	for c in $$(./ksight help --commands); do ./ksight help --man $$c >$(@D)/ksight-$$c.1 || exit 1; done
	touch $@

$(B)/completion/ksight: ksight
	@mkdir -p $(@D)
	./ksight help --completion bash >$@.tmp && mv $@.tmp $@

$(B)/completion/_ksight: ksight
	@mkdir -p $(@D)
	./ksight help --completion zsh >$@.tmp && mv $@.tmp $@

# PREFIX (default /usr/local) and DESTDIR as usual: make install DESTDIR=pkg PREFIX=/usr
install: ksight man completion
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0755 ksight $(DESTDIR)$(PREFIX)/bin/ksight
	install -m 0644 $(B)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(B)/completion/ksight $(DESTDIR)$(BASHCOMPDIR)/ksight
	install -m 0644 $(B)/completion/_ksight $(DESTDIR)$(ZSHCOMPDIR)/_ksight

# Installs what is missing, builds, and runs every test tier; ends with "N passed, N failed".
test:
	sh scripts/setup.sh
	$(MAKE) all unit
	bash tests/run.sh

# The golden and integration tiers again with $(SAN_DIR)/ksight (the unit tests' sanitized
# builds run in every `make test`); every sanitizer report is listed at the end (tests/san.sh).
test-san: all unit san
	bash tests/san.sh $(SAN_DIR)/ksight

# libFuzzer targets (tests/fuzz/fuzz_*.c) over the library built with clang's fuzzer and ASan/UBSan
# instrumentation; tests/integration/test_fuzz.sh runs each for a bounded time from its seed corpus.
.PHONY: fuzz
FUZZ_DIR := $(B)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_OBJS := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(CORE_SRCS) $(GEN_SRCS))
fuzz: $(FUZZ_BINS)

# every build of procself.c includes the generated revision.h
$(B)/obj/src/serve/procself.o $(B)/san-obj/src/serve/procself.o $(FUZZ_DIR)/obj/src/serve/procself.o $(SAN_DIR)/obj/src/serve/procself.o: $(B)/gen/revision.h

$(FUZZ_DIR)/obj/%.o: %.c | $(SKELS)
	@mkdir -p $(@D)
	$(CLANG) $(CFLAGS) $(FUZZ_SAN) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/%: tests/fuzz/%.c $(FUZZ_OBJS) | $(SKELS)
	$(CLANG) $(CFLAGS) $(FUZZ_SAN) $(DEPFLAGS) -fsanitize=fuzzer -Itests/unit -o $@ $< $(FUZZ_OBJS) $(LDLIBS)

# The integration tests inside each kernel of the matrix under qemu (tests/kernels/NAME.conf).
KERNELS ?= debian-6.1 debian-6.1-128cpu
export KERNELS
test-kernels: all
	KERNELS="$(KERNELS)" sh tests/kernels/run.sh

# Installs, builds, checks the kernel and shows five seconds of system-wide syscalls.
run:
	sh scripts/setup.sh
	$(MAKE) all
	./ksight doctor || true
	./ksight syscalls -d 5

bench-tools: $(BENCH_BINS) $(BENCH_OBJS) $(HOOKCOST_OBJS)

bench: all bench-tools
	bash bench/syscalls.sh

setup:
	sh scripts/setup.sh

clean:
	rm -rf $(B) $(SAN_DIR) ksight

# the compilers' dependency files of every C build above (missing ones, as in a fresh tree, are skipped)
-include $(patsubst %,%.d,$(CORE_OBJS) $(CLI_OBJS) $(SAN_OBJS) $(UNIT_BINS) $(UNIT_SAN_BINS) $(WORKLOADS) \
	$(B)/workloads/objfile.o $(SAN_KS_OBJS) $(FUZZ_OBJS) $(FUZZ_BINS) $(BENCH_BINS))
