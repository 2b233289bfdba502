# keel -- one Makefile for everything.
#
#   make            build/ : libkeel.a, libkeel.so, keel.pc, the programs
#   make test       every test (cmocka suites and the scripted ones)
#   make asan       the same tests under AddressSanitizer and UBSan (build-asan/)
#   make tsan       the threaded engine suites under ThreadSanitizer (build-tsan/;
#                   not the scripts: fiu-run's preload cannot be combined with TSan)
#   make torture    a 30-second torture of the embedded engine at --kill-every 50ms
#   make fuzz       the HTTP request parser under libFuzzer for 60 seconds
#   make mutants    the mutation suite (tests/mutants/): long, not in CI
#   make install PREFIX=/usr/local
#
# Missing Debian packages are installed when run as root (apt-get), otherwise
# the exact apt-get line is printed and the build stops.

PREFIX ?= /usr/local
B ?= build
CC ?= cc
OPT ?= -O2
SAN ?=
CFLAGS_BASE = -std=gnu11 -g $(OPT) -Wall -Wextra -Werror -Wshadow -Wvla \
	-fPIC -D_GNU_SOURCE -DFIU_ENABLE=1 $(SAN) \
	-Ibase -Iengine -Irecovery -Ifaultsim -Ihttp -Itorture -Itools -Ishim -Isupervisor
CFLAGS_ALL = $(CFLAGS_BASE) $(CFLAGS)
LDLIBS_ALL = -lfiu -lpthread $(LDLIBS)

# Debian packages: build and test needs, then the benchmark peers.
DEPS_BUILD = libfiu-dev fiu-utils libcmocka-dev curl pkg-config libssl-dev \
	openssl python3 libnghttp2-dev nghttp2-client libngtcp2-dev \
	libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev \
	liburing-dev golang-go rustc musl-tools
DEPS_BENCH = liblmdb-dev libsqlite3-dev librocksdb-dev libleveldb-dev \
	nginx-light redis-server wrk fio clang
DEPS_STAMP = $(B)/.deps-build
# Only tests/slurm.sh (a cluster it starts only as root) and
# tests/h3_browser.sh (a real browser) need these: make test installs them
# as root, and elsewhere those tests skip, saying why.
DEPS_TEST_ROOT = slurm-wlm munge chromium
# The engines the claims table tortures (targets/, docs/claims.md), and
# the servers of its "servers" section (tools/claims_servers.sh).
DEPS_TARGETS = libsqlite3-dev liblmdb-dev libleveldb-dev librocksdb-dev \
	redis-server git sqlite3 libglib2.0-dev libgdbm-dev libtdb-dev \
	libdb5.3-dev etcd-server jq postgresql mariadb-server mercurial \
	tinycdb rrdtool libtokyocabinet-dev
DEPS_TARGETS_STAMP = $(B)/.deps-targets

# ---- the library (floors 0-2) -------------------------------------------
# base/ is floor 0 (format, CRC32C, the I/O seam, the error names),
# recovery/ floor 1, engine/ floor 2; tests/floors.sh keeps each folder to
# the floors below it.
LIB_SRCS = base/crc32c.c base/format.c base/io_posix.c base/error.c \
	engine/map.c engine/tree.c engine/batch.c engine/commit.c engine/db.c \
	engine/compact.c engine/grow.c engine/marker.c engine/pending.c \
	engine/delta.c \
	recovery/recover.c recovery/verify.c
LIB_OBJS = $(LIB_SRCS:%.c=$(B)/obj/%.o)
# The public headers: keel.h and the two it includes, quoted, so they must
# lie beside it.  $(B)/include holds them as make install lays them out
# (with keel/io.h), for programs built against the build tree.
PUBLIC_HEADERS = engine/keel.h base/keel_err.h recovery/keel_recovery.h
STAGED_HEADERS = $(addprefix $(B)/include/,$(notdir $(PUBLIC_HEADERS))) \
	$(B)/include/keel/io.h

# ---- fault simulator (floor 1; plugs into the I/O seam) ------------------
FAULTSIM_SRCS = faultsim/cache.c faultsim/sync.c faultsim/namespace.c \
	faultsim/mapped.c \
	faultsim/crash.c faultsim/fault.c faultsim/io_backend.c \
	faultsim/explain.c
FAULTSIM_OBJS = $(FAULTSIM_SRCS:%.c=$(B)/obj/%.o)

# ---- the LD_PRELOAD shim (floor 2; faultsim in front of any program) -----
# Built without sanitizers even in build-asan: it is preloaded into programs
# that carry no sanitizer runtime.
SHIM_SRCS = shim/shim.c shim/shim_ring.c shim/shim_fd.c shim/shim_open.c \
	shim/shim_expect.c shim/shim_write.c shim/shim_sync.c shim/shim_map.c \
	shim/shim_namespace.c shim/shim_stdio.c shim/shim_exec.c \
	shim/shim_backstop.c shim/shim_common.c faultsim/cache.c faultsim/sync.c \
	faultsim/namespace.c faultsim/mapped.c \
	faultsim/crash.c faultsim/fault.c faultsim/explain.c
SHIM_OBJS = $(SHIM_SRCS:%.c=$(B)/obj-shim/%.o)
SHIM_CFLAGS = $(filter-out -fsanitize% -fno-sanitize%,$(CFLAGS_ALL))
# tests/shim/unseen.c writes through io_uring where liburing is installed:
# built apart as unseen-uring, since a program linked with liburing goes to
# the supervisor by itself (supervisor/choose.c) and unseen's other modes
# test the shim
URING_TEST_LIBS = $(if $(wildcard /usr/include/liburing.h),-DHAVE_LIBURING -luring -lpthread)
SHIM_TEST_PROGS = $(patsubst tests/shim/%.c,$(B)/shim-tests/%,$(wildcard tests/shim/*.c)) \
	$(patsubst tests/targets/%.c,$(B)/shim-tests/%,$(wildcard tests/targets/*.c)) \
	$(B)/shim-tests/unseen-static $(B)/shim-tests/unseen-uring

# ---- engine adapters for torture --target NAME:CONFIG (targets/) ---------
# One program per engine, each with the shared loop of targets/adapter.c.
TARGET_NAMES = files sqlite lmdb leveldb rocksdb redis keel glib gdbm tdb bdb
# Programs people run, driven by a script each (targets/NAME.sh).
TARGET_SCRIPTS = git sqlite3
TARGET_PROGS = $(TARGET_NAMES:%=$(B)/targets/%) \
	$(TARGET_SCRIPTS:%=$(B)/targets/%)
TARGET_LIBS_files =
TARGET_LIBS_sqlite = -lsqlite3
TARGET_LIBS_lmdb = -llmdb
TARGET_LIBS_leveldb = -lleveldb
TARGET_LIBS_rocksdb = -lrocksdb
TARGET_LIBS_redis =
TARGET_LIBS_glib = $(shell pkg-config --libs glib-2.0 2>/dev/null)
TARGET_CFLAGS_glib = $(shell pkg-config --cflags glib-2.0 2>/dev/null)
TARGET_LIBS_gdbm = -lgdbm
TARGET_LIBS_tdb = -ltdb
TARGET_LIBS_bdb = -ldb
TARGET_CFLAGS_tdb = -DTDB_VERSION_TEXT='"$(shell pkg-config --modversion tdb 2>/dev/null)"'
# keel's adapter compiles the engine's sources itself, without sanitizers
# (build-asan's libkeel.a carries them, and adapters run under the shim).
TARGET_LIBS_keel = $(LIB_SRCS) -lfiu -lpthread
# RocksDB's C API has no version call; its C++ header has the numbers.
ROCKSDB_VERSION = $(shell sed -n 's/^\#define ROCKSDB_[A-Z]* //p' \
	/usr/include/rocksdb/version.h 2>/dev/null | paste -sd.)
TARGET_CFLAGS_rocksdb = -DROCKSDB_VERSION_TEXT='"$(ROCKSDB_VERSION)"'

# ---- programs (floor 3) ----------------------------------------------------
KEEL_CLI_SRCS = tools/keel.c
TORTURE_SRCS = torture/main.c torture/options.c torture/run.c torture/setup.c \
	torture/writer.c torture/oracle.c torture/value.c torture/proto.c \
	torture/report.c torture/samples.c torture/synclat.c torture/faults.c \
	torture/http_target.c torture/http_client.c torture/http2_client.c \
	torture/http3_client.c torture/quic_conn.c torture/http_conn.c torture/rot.c tools/duration.c \
	torture/exec_target.c torture/exec_front.c torture/exec_summary.c torture/exec_proto.c torture/adapters.c \
	torture/exec_life.c torture/exec_lives.c torture/exec_trace.c torture/exec_crash.c \
	torture/exec_violation.c torture/exec_refusal.c \
	torture/campaign.c torture/campaign_run.c torture/campaign_report.c \
	torture/campaign_json.c shim/shim_ctl.c shim/shim_common.c \
	shim/shim_tree.c supervisor/guard.c supervisor/record.c supervisor/fds.c \
	supervisor/creds.c supervisor/uring.c \
	supervisor/choose.c torture/exec_explain.c
SERVE_SRCS = http/serve_main.c http/serve_conn.c http/serve_req.c http/http_parse.c \
	http/tokens.c http/serve_tls.c http/serve_h2.c http/serve_limits.c \
	http/serve_h3.c http/serve_h3_stream.c http/serve_h3_tls.c \
	http/serve_h3_closing.c http/serve_h3_send.c http/serve_h3_mem.c \
	http/serve_fields.c http/h3_control.c
# HTTP/3: QUIC through ngtcp2 (its GnuTLS crypto), HTTP/3 through nghttp3
H3_PKGS = libngtcp2 libngtcp2_crypto_gnutls libnghttp3 gnutls
H3_LIBS = $(shell pkg-config --libs $(H3_PKGS) 2>/dev/null)
LOADGEN_SRCS = bench/http/loadgen.c bench/http/loadgen_h3.c torture/quic_conn.c
FSYNC_PROBE_SRCS = probe/fsync_probe.c probe/probe_hist.c probe/probe_json.c probe/probe_device.c probe/probe_run.c probe/probe_svg.c probe/probe_powercut.c tools/duration.c
BENCH_ENGINE_SRCS = bench/engine_bench.c bench/bench_keel.c bench/bench_lmdb.c bench/bench_sqlite.c bench/bench_rocksdb.c bench/bench_leveldb.c bench/bench_plain.c

PROGRAMS = $(B)/keel \
	$(if $(TORTURE_SRCS),$(B)/torture) \
	$(if $(SERVE_SRCS),$(B)/keel-serve) \
	$(if $(LOADGEN_SRCS),$(B)/loadgen) \
	$(if $(FSYNC_PROBE_SRCS),$(B)/fsync-probe)

# ---- tests ------------------------------------------------------------------
# cmocka suites: tests/test_<module>.c, each linked with the library (and
# faultsim).  Extra objects a suite needs go in TEST_EXTRA_<name>.
TESTS = test_duration test_crc32c test_format test_engine test_delta test_compact test_compact_identity test_hostile test_grow test_recovery test_faults_io test_http_parser test_fsync_probe test_torture_oracle test_faultsim test_faultsim_files test_faultsim_engine test_exec_proto test_exec_explain test_campaign test_limits test_fields
TEST_EXTRA_test_duration = tools/duration.c
TEST_EXTRA_test_torture_oracle = torture/oracle.c torture/value.c
TEST_EXTRA_test_exec_proto = torture/exec_proto.c torture/oracle.c torture/value.c
TEST_EXTRA_test_exec_explain = torture/exec_explain.c shim/shim_ctl.c
TEST_EXTRA_test_campaign = torture/campaign.c torture/campaign_json.c \
	torture/adapters.c tools/duration.c
TEST_EXTRA_test_http_parser = http/http_parse.c
TEST_EXTRA_test_limits = http/serve_limits.c http/h3_control.c
TEST_EXTRA_test_fields = http/serve_fields.c http/http_parse.c
TEST_EXTRA_test_fsync_probe = probe/probe_hist.c probe/probe_json.c probe/probe_device.c probe/probe_run.c probe/probe_svg.c probe/probe_powercut.c tools/duration.c
# scripted tests: tests/*.sh, run with the build directory as $1
TEST_SCRIPTS = tests/floors.sh tests/cli.sh tests/readme.sh tests/docs.sh tests/faults_doc.sh tests/hostile.sh tests/fsync_probe.sh tests/http.sh tests/tokens.sh tests/tls.sh tests/h2.sh tests/h3.sh tests/h3_browser.sh tests/h3_udp.sh tests/torture.sh tests/torture_faults.sh tests/torture_http.sh tests/shim.sh tests/shim_backstop.sh tests/shim_sound.sh tests/sim_rules.sh tests/refmodel.sh tests/sound_servers.sh tests/fs_models.sh tests/claims.sh tests/campaign.sh tests/slurm.sh
# tests/run.sh runs KEEL_TEST_JOBS tests side by side, in the order given:
# the long ones start first, so the lanes end together
# (the longest first: refmodel.sh and h3.sh, a minute each, used to start
# among the last, after the short ones)
TEST_LONG = tests/shim.sh tests/shim_sound.sh tests/sound_servers.sh \
	tests/slurm.sh tests/torture_faults.sh tests/h3.sh tests/h2.sh \
	tests/refmodel.sh tests/sim_rules.sh tests/shim_backstop.sh \
	tests/http.sh tests/docs.sh tests/campaign.sh
TEST_ORDER = $(foreach t,$(TEST_LONG),$(filter $(t),$(TEST_SCRIPTS))) $(filter-out $(TEST_LONG),$(TEST_BINS) $(TEST_SCRIPTS))

TEST_BINS = $(TESTS:%=$(B)/tests/%)

# Benchmark tools that need no peer library: built with everything else
# (so they keep compiling), never installed.
BENCH_TOOLS = $(B)/growth-latency
# tests/h3.sh's HTTP/3 client (one request per connection)
TEST_TOOLS = $(B)/h3-client

all: $(DEPS_STAMP) $(B)/libkeel.a $(B)/libkeel.so $(B)/keel.pc $(PROGRAMS) \
	$(STAGED_HEADERS) \
	$(B)/libkeel-shim.so $(SHIM_TEST_PROGS) $(BENCH_TOOLS) $(TARGET_PROGS) \
	$(TEST_TOOLS)

.PHONY: all deps deps-bench test asan tsan torture fuzz install clean bench mutants mutants-sim claims claims-servers

# ---- dependencies -------------------------------------------------------
$(DEPS_STAMP):
	@sh tests/deps.sh $(DEPS_BUILD)
	@mkdir -p $(B) && touch $@

$(DEPS_TARGETS_STAMP):
	@sh tests/deps.sh $(DEPS_TARGETS)
	@mkdir -p $(B) && touch $@

deps: $(DEPS_STAMP) $(DEPS_TARGETS_STAMP)

deps-bench:
	@sh tests/deps.sh $(DEPS_BUILD) $(DEPS_BENCH)

# ---- compile rules ----------------------------------------------------------
$(B)/obj/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

$(B)/libkeel.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# (the soname is written here: a build made before it changed relinks)
$(B)/libkeel.so: $(LIB_OBJS) Makefile
	$(CC) $(CFLAGS_ALL) -shared -Wl,-soname,libkeel.so.1 -o $@ $(LIB_OBJS) $(LDLIBS_ALL)

$(B)/obj-shim/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(B)/obj-shim -name '*.d' 2>/dev/null)

$(B)/libkeel-shim.so: $(SHIM_OBJS) shim/shim.map
	$(CC) $(SHIM_CFLAGS) -shared -Wl,--version-script=shim/shim.map \
		-o $@ $(SHIM_OBJS) -ldl -lpthread

# Small programs the shim tests run under it (tests/shim/*.c), plain libc.
$(B)/shim-tests/%: tests/shim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -o $@ $< $(SHIM_TEST_LIBS_$*)

# the same workload statically linked: the shim cannot load, the
# supervisor records it (tests/shim_sound.sh)
$(B)/shim-tests/unseen-static: tests/shim/unseen.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -static -o $@ $<

$(B)/shim-tests/unseen-uring: tests/shim/unseen.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -o $@ $< $(URING_TEST_LIBS)

$(B)/shim-tests/%: tests/targets/%.c
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) -o $@ $<

# keel itself as an exec target: the engine on its POSIX backend
$(B)/shim-tests/keel_kv: tests/targets/keel_kv.c $(B)/libkeel.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(B)/libkeel.a $(LDLIBS_ALL)

# The engine adapters: plain programs (no sanitizer: they run under the
# shim), linked with their engine.
$(B)/targets/%: targets/%.c targets/adapter.c targets/adapter.h targets/lsm.h \
		$(DEPS_TARGETS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_CFLAGS) $(TARGET_CFLAGS_$*) -Itargets -o $@ $< \
		targets/adapter.c $(TARGET_LIBS_$*)

$(B)/targets/keel: $(LIB_SRCS) $(wildcard base/*.h engine/*.h recovery/*.h)

$(B)/targets/%: targets/%.sh $(DEPS_TARGETS_STAMP)
	@mkdir -p $(dir $@)
	install -m 755 $< $@

$(B)/include/%.h: engine/%.h
	@mkdir -p $(dir $@)
	cp $< $@
$(B)/include/%.h: base/%.h
	@mkdir -p $(dir $@)
	cp $< $@
$(B)/include/%.h: recovery/%.h
	@mkdir -p $(dir $@)
	cp $< $@
$(B)/include/keel/io.h: base/io.h
	@mkdir -p $(dir $@)
	cp $< $@

$(B)/libkeel-faultsim.a: $(FAULTSIM_OBJS)
	@rm -f $@
	ar rcs $@ $^

PC_TEXT = 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: keel\nDescription: append-only copy-on-write tree store\nVersion: 0.2.0\nLibs: -L$${libdir} -lkeel\nLibs.private: -lfiu -lpthread\nCflags: -I$${includedir}\n'

$(B)/keel.pc: Makefile
	@mkdir -p $(B)
	printf $(PC_TEXT) '$(PREFIX)' > $@

LINK_LIBS = $(B)/libkeel-faultsim.a $(B)/libkeel.a

$(B)/keel: $(KEEL_CLI_SRCS:%.c=$(B)/obj/%.o) $(LINK_LIBS)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(B)/torture: $(TORTURE_SRCS:%.c=$(B)/obj/%.o) $(LINK_LIBS)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL) -lnghttp2 -lssl -lcrypto -lm \
		$(H3_LIBS)

$(B)/keel-serve: $(SERVE_SRCS:%.c=$(B)/obj/%.o) $(LINK_LIBS)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL) -lnghttp2 -lssl -lcrypto \
		$(H3_LIBS)

$(B)/h3-client: $(B)/obj/tests/h3_client.o $(B)/obj/torture/quic_conn.o
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(H3_LIBS)

$(B)/loadgen: $(LOADGEN_SRCS:%.c=$(B)/obj/%.o)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL) -lm $(H3_LIBS)

$(B)/fsync-probe: $(FSYNC_PROBE_SRCS:%.c=$(B)/obj/%.o)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL) -lm

$(B)/growth-latency: $(B)/obj/bench/growth_latency.o $(B)/libkeel.a
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

.SECONDARY:
.SECONDEXPANSION:
test_extra_objs = $(patsubst %.c,$(B)/obj/%.o,$(TEST_EXTRA_$(1)))
$(B)/tests/%: $(B)/obj/tests/%.o $$(call test_extra_objs,$$*) $(LINK_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $^ -lcmocka $(LDLIBS_ALL) -lm

# ---- running ------------------------------------------------------------
# make test builds with a job per CPU unless its command line chose -j (a
# plain make builds one file at a time: some 45 s of compiling, which two
# CPUs do in about 25); a sub-make is how a recipe can choose it
TEST_BUILD_JOBS = $(shell nproc 2>/dev/null || echo 1)
.PHONY: test-build
test-build: all $(TEST_BINS)
test:
	@$(MAKE) --no-print-directory \
		$(if $(filter -j%,$(MAKEFLAGS)),,-j$(TEST_BUILD_JOBS)) test-build
	@[ "$$(id -u)" != 0 ] || sh tests/deps.sh $(DEPS_TEST_ROOT)
	@sh tests/run.sh $(B) $(filter-out $(TEST_SKIP),$(TEST_ORDER))

# make asan runs every test but these, which check the tree, the documents
# and a scheduler's plumbing rather than C code a sanitizer could watch
# (the floors' includes, each --flag against its page, Slurm's job arrays
# around torture's campaign code, which tests/campaign.sh runs under the
# sanitizers): they run in make test, and make asan stays short enough for
# CI to run both
ASAN_SKIP = tests/floors.sh tests/docs.sh tests/slurm.sh
asan:
	$(MAKE) B=build-asan OPT=-O1 \
		SAN='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all' \
		TEST_SKIP='$(ASAN_SKIP)' test

TSAN_TESTS = test_engine test_delta test_compact test_grow test_faults_io test_faultsim_engine
tsan:
	$(MAKE) B=build-tsan OPT=-O1 \
		SAN='-fsanitize=thread -fno-omit-frame-pointer' \
		$(TSAN_TESTS:%=build-tsan/tests/%)
	@TSAN_OPTIONS=halt_on_error=1 sh tests/run.sh build-tsan $(TSAN_TESTS:%=build-tsan/tests/%)

torture: all
	$(B)/torture --kill-every 50ms --duration 30s

# The claims table (docs/results/claims.md and claims.svg; the promises and
# their analysis in docs/claims.md): every engine adapter under every fault;
# each run ends at its first violation, after CLAIMS_CYCLES cycles (200) or
# after CLAIMS_DURATION (90s), whichever comes first.  Not part of make test.
claims: all
	sh tools/claims.sh $(B)

# Its "servers" section: PostgreSQL, MariaDB, etcd, Redis, Mercurial,
# tinycdb, RRDtool and Tokyo Cabinet as exec targets (about 25 minutes;
# root, for --user postgres and --user mysql).
claims-servers: all
	sh tools/claims_servers.sh $(B)

# Each patch of tests/mutants/ plants a bug; make test and a fixed torture
# set must catch it.  Long (minutes per mutant): not part of make test.
mutants: all
	@sh tests/mutants/run.sh

# Each patch of tests/mutants/sim/ plants a bug in the fault simulator or a
# front end; tests/test_faultsim and tests/sim_rules.sh must catch it
# (about a minute a mutant): not part of make test.
mutants-sim: all
	@sh tests/mutants/sim.sh

# ---- benchmarks (need the peers: make deps-bench) ---------------------------
BENCH_ENGINE_LIBS = -llmdb -lsqlite3 -lrocksdb -lleveldb
$(B)/bench-engine: $(BENCH_ENGINE_SRCS:%.c=$(B)/obj/%.o) $(LINK_LIBS)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(BENCH_ENGINE_LIBS) $(LDLIBS_ALL) -lm

bench: deps-bench all $(B)/bench-engine

# ---- install --------------------------------------------------------------
# keel.h and the public headers it includes (keel_err.h, keel_recovery.h)
# go to PREFIX/include (so #include <keel.h> works), the I/O seam for custom
# backends to PREFIX/include/keel/io.h.  Installing as root into
# the system (no DESTDIR) runs ldconfig; when PREFIX/lib is not a directory
# the loader searches, it says so (see the README).
install: all
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/keel \
		$(DESTDIR)$(PREFIX)/bin
	install -m 644 $(B)/libkeel.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libkeel.so $(DESTDIR)$(PREFIX)/lib/libkeel.so.1
	ln -sf libkeel.so.1 $(DESTDIR)$(PREFIX)/lib/libkeel.so
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(PREFIX)/include/
	install -m 644 base/io.h $(DESTDIR)$(PREFIX)/include/keel/
	printf $(PC_TEXT) '$(PREFIX)' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/keel.pc
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
		echo ldconfig; ldconfig; \
		ldconfig -p | grep -qF '$(PREFIX)/lib/libkeel.so.1' || \
		echo "note: $(PREFIX)/lib is not searched by the loader: add it to /etc/ld.so.conf.d/ and run ldconfig, or set LD_LIBRARY_PATH=$(PREFIX)/lib"; \
	elif [ -z "$(DESTDIR)" ]; then \
		echo "note: run ldconfig as root (or set LD_LIBRARY_PATH=$(PREFIX)/lib) before running programs linked with -lkeel"; \
	fi

clean:
	rm -rf build build-asan build-tsan

# ---- fuzzing: the HTTP request parser under libFuzzer, ASan and UBSan ------
# New inputs go to $(B)/fuzz-corpus; the seeds in tests/http-corpus stay as-is.
fuzz:
	@mkdir -p $(B)/fuzz-corpus
	clang -std=gnu11 -g -O1 -D_GNU_SOURCE -Ihttp \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		tests/fuzz_http.c http/http_parse.c -o $(B)/fuzz_http
	$(B)/fuzz_http -max_total_time=60 -max_len=16384 -timeout=5 \
		$(B)/fuzz-corpus tests/http-corpus

# make print-VAR: a variable's value (tools/mutate reads TESTS and TEST_SCRIPTS)
print-%:
	@echo $($*)
