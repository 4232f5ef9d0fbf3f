# The commands a contributor types (docs/CONTRIBUTING.md). `make test` and `make bench` work on a fresh machine:
# they install liblz4-dev, libsqlite3-dev, libpq-dev and postgresql (Debian packages) when missing.

SWIFT      ?= swift
CC         ?= cc
CSRC       := $(wildcard Sources/CStore/*.c)
CWARN      := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
              -Wmissing-prototypes -Wredundant-decls -Wno-unused-parameter \
              -ISources/CStore/include -ISources/CStore
SAN_ENV    := STORE_SANITIZER=1 SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
              LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp \
              UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Tests that are too slow under the sanitizers are filtered out there (docs/CONTRIBUTING.md, Building and testing).
ASAN_SKIP  ?= Campaign

.PHONY: all deps build tool c-example placement-loop lookup-loop create-loop lookup-layout commit-loop replay-time test test-full cwarn boundary asan tsan check-invariants bench bench-build bench-record bench-quick fuzz fuzz-build fuzz-corpus clean

all: build

deps:
	@missing=""; \
	[ -f /usr/include/lz4.h ] || missing="$$missing liblz4-dev"; \
	[ -f /usr/include/sqlite3.h ] || missing="$$missing libsqlite3-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	[ -f /usr/include/postgresql/libpq-fe.h ] || missing="$$missing libpq-dev"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update && apt-get install -y $$missing; \
	fi

# The C core must compile without a warning (warnings are errors for it, here and in CI).
# -Wmissing-prototypes and -Wredundant-decls make a function defined without its header's
# declaration, or declared a second time by hand in a .c file, fail the build.
cwarn:
	$(CC) $(CWARN) -fsyntax-only $(CSRC) Benchmarks/placement/placement_loop.c Benchmarks/lookup/lookup_loop.c Benchmarks/lookup/chase.c \
		Benchmarks/create/create_loop.c \
		Benchmarks/lookup/lookup_layout.c \
		Benchmarks/lookup/folio_sync.c \
		Benchmarks/commit/commit_loop.c Benchmarks/commit/journal_folios.c Benchmarks/commit/syscall_cost.c \
		Benchmarks/commit/disk_probe.c Benchmarks/commit/replay_time.c Benchmarks/commit/commit_stages.c \
		Benchmarks/commit/sqlite_commit_loop.c Benchmarks/commit/append_probe.c Benchmarks/notify/object_advance.c \
		Benchmarks/notify/pin_cost.c

# The Swift layer's boundary (docs/ARCHITECTURE.md, The Swift layer): only
# Sources/SwiftStore/Internal/ names the C core (`import CStore`, cs_* / CS_*), outside comments.
# The one exception is the object accessors' hot path: the property reads and writes in
# Object/ObjectBase.swift and the iterator's cursor in Collections/Results.swift, which may name
# only the identifiers in BOUNDARY_HOT_PATH.
BOUNDARY_HOT_FILES := Sources/SwiftStore/Object/ObjectBase.swift Sources/SwiftStore/Collections/Results.swift
BOUNDARY_HOT_PATH  := cs_obj_get_int|cs_obj_set_int|cs_obj_get|cs_obj_check_exists|cs_obj_exists|cs_obj|cs_value|CS_NONE|CS_NOTFOUND
BOUNDARY_C         := (\b(cs|CS)_[A-Za-z0-9_]+|^import CStore$$)
BOUNDARY_COMMENT   := ^[^:]+:[0-9]+:[[:space:]]*//

boundary:
	@bad=$$(grep -rnE '$(BOUNDARY_C)' Sources/SwiftStore --include='*.swift' | grep -v '^Sources/SwiftStore/Internal/' \
		| grep -vE '$(BOUNDARY_COMMENT)' | grep -vF '$(firstword $(BOUNDARY_HOT_FILES)):' \
		| grep -vF '$(lastword $(BOUNDARY_HOT_FILES)):'; \
		for f in $(BOUNDARY_HOT_FILES); do grep -nHE '$(BOUNDARY_C)' $$f | grep -vE '$(BOUNDARY_COMMENT)' \
			| sed -E 's/\b($(BOUNDARY_HOT_PATH))\b//g; s/^([^:]+:[0-9]+:)import CStore$$/\1/' \
			| grep -E '$(BOUNDARY_C)'; done); \
	if [ -n "$$bad" ]; then \
		echo "boundary: C core names outside Sources/SwiftStore/Internal/ (docs/ARCHITECTURE.md, The Swift layer):"; \
		echo "$$bad"; exit 1; fi; echo "boundary: ok"

build: deps
	$(SWIFT) build

# The `swiftstore` tool is a package of its own (tools/swiftstore/Package.swift), so that the
# library's users never fetch swift-argument-parser; the tests run its debug build.
tool: deps
	cd tools/swiftstore && $(SWIFT) build

# The README's C example (Examples/dogs.c) built against the core's sources and run: the exact
# compiler line a C program needs.
C_EXAMPLE_FLAGS := -std=c11 -D_GNU_SOURCE -ISources/CStore/include
C_EXAMPLE_LIBS  := -llz4 -lpthread -lm
c-example: deps
	@mkdir -p .build/c-example
	$(CC) $(C_EXAMPLE_FLAGS) -o .build/c-example/dogs Examples/dogs.c $(CSRC) $(C_EXAMPLE_LIBS)
	cd .build/c-example && ./dogs

# The C loop behind the placement figures (docs/benchmarks/README.md): one-row commits on a file of
# Int objects, with the logical size, free space and I/O per commit every so many commits. It
# reads the core's free list, so it is built from the core's sources, optimised.
placement-loop: deps
	@mkdir -p .build/placement-loop
	$(CC) -O2 $(C_EXAMPLE_FLAGS) -ISources/CStore -o .build/placement-loop/placement-loop \
		Benchmarks/placement/placement_loop.c $(CSRC) $(C_EXAMPLE_LIBS)
	@echo "run: .build/placement-loop/placement-loop FILE ROWS UPDATES [MODE 0|1|2] [EVERY]"

# The C loop behind the commit figures (docs/benchmarks/README.md, The small commit's CPU and
# system calls): the commit rows' load on a file it builds, optimised, -g for callgrind.
commit-loop: deps
	@mkdir -p .build/commit-loop
	$(CC) -O2 -g $(C_EXAMPLE_FLAGS) -o .build/commit-loop/commit-loop \
		Benchmarks/commit/commit_loop.c $(CSRC) $(C_EXAMPLE_LIBS)
	@echo "run: .build/commit-loop/commit-loop build FILE ROWS, then run FILE full|nosync START COUNT [ROWS]"

# The replay of a generation of one-row commits (docs/benchmarks/README.md, Replay of a
# generation): a crash's file and journal, then timed opens that replay it.
replay-time: deps
	@mkdir -p .build/commit-loop
	$(CC) -O2 -g -DREPLAY_IMAGE $(C_EXAMPLE_FLAGS) -o .build/commit-loop/replay-time \
		Benchmarks/commit/replay_time.c $(CSRC) $(C_EXAMPLE_LIBS)
	@echo "run: .build/commit-loop/replay-time crash FILE ROWS COMMITS, then replay FILE REPS"

# The C loop behind the lookup figures (docs/benchmarks/README.md, The lookup's cache misses at
# 10M): random lookups by Int primary key on a file it builds, optimised; -g for callgrind (a
# gcc build: valgrind does not read clang's DWARF 5).
lookup-loop: deps
	@mkdir -p .build/lookup-loop
	$(CC) -O2 -g $(C_EXAMPLE_FLAGS) -o .build/lookup-loop/lookup-loop \
		Benchmarks/lookup/lookup_loop.c $(CSRC) $(C_EXAMPLE_LIBS)
	@echo "run: .build/lookup-loop/lookup-loop build FILE N [MODE 0-3], then get FILE N OPS [MODE]"
	@echo "     (LOOKUP_SMAPS=1: the mapping's 2 MiB share); cache FILE huge|small, collapse FILE, touch FILE N K"

# The C loop behind the object-creation figures (docs/benchmarks/README.md, Creating an object
# with its values): N objects of 11 Ints with an Int primary key in a scattered order, created
# object then setters, or each with cs_obj_create_values; -g for callgrind (a gcc build).
create-loop: deps
	@mkdir -p .build/create-loop
	$(CC) -O2 -g $(C_EXAMPLE_FLAGS) -o .build/create-loop/create-loop \
		Benchmarks/create/create_loop.c $(CSRC) $(C_EXAMPLE_LIBS)
	@echo "run: .build/create-loop/create-loop FILE N sets|values"

# The tree-shape counter behind the lookup figures (Benchmarks/lookup/lookup_layout.c): it reads
# the core's private headers.
lookup-layout: deps
	@mkdir -p .build/lookup-loop
	$(CC) -O2 -g $(C_EXAMPLE_FLAGS) -ISources/CStore -o .build/lookup-loop/lookup-layout \
		Benchmarks/lookup/lookup_layout.c $(CSRC) $(C_EXAMPLE_LIBS)
	@echo "run: .build/lookup-loop/lookup-layout FILE [TABLE]"

# The tests run with a private PostgreSQL server for the mirror tests (.ci/with-postgres: initdb
# into a temporary directory, a Unix socket there, stopped and removed afterwards).
# Suites whose notifications reach an actor through Swift's global thread pool (docs/
# ARCHITECTURE.md, "Delivery on an actor") run in a second pass of their own: in the parallel
# pass the other suites' long synchronous tests can hold every pool thread (two on two cores)
# for longer than such a suite waits for a notification.
POOL_SUITES := ActorNotificationTests
SWIFT_TEST  := $(SWIFT) test --skip-build --parallel --skip "$(POOL_SUITES)" && $(SWIFT) test --skip-build --filter "$(POOL_SUITES)"

test: deps cwarn boundary tool
	$(SWIFT) build --build-tests
	.ci/with-postgres sh -c '$(SWIFT_TEST)'

# The long campaigns (crash kills, corruption sweeps) at full size.
test-full: deps cwarn tool
	$(SWIFT) build --build-tests
	STORE_FULL_CAMPAIGN=1 .ci/with-postgres sh -c '$(SWIFT_TEST)'

# AddressSanitizer + UndefinedBehaviorSanitizer over the C core's tests; any report fails.
# STORE_C_CORE_ONLY makes the package the C core and its tests alone (Package.swift), so this
# build does not compile the Swift layer.
asan: deps
	STORE_C_CORE_ONLY=1 $(SWIFT) build --build-tests --scratch-path .build-asan \
		--sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=all -Xcc -fno-omit-frame-pointer
	STORE_C_CORE_ONLY=1 $(SAN_ENV) $(SWIFT) test --skip-build --scratch-path .build-asan \
		--sanitize=address --filter CStoreTests --skip $(ASAN_SKIP)

# The C core's tests in an internal-checks build (docs/ARCHITECTURE.md, Internal checks): the
# core is compiled with CSTORE_INTERNAL_CHECKS and its assertions, and every commit verifies the
# version it made (cs_db_verify's checks) whenever the version it started from verified; a
# violation prints what broke and aborts the test run.
check-invariants: deps
	$(SWIFT) build --build-tests --scratch-path .build-checks -Xcc -DCSTORE_INTERNAL_CHECKS
	$(SWIFT) test --skip-build --scratch-path .build-checks --filter CStoreTests

# ThreadSanitizer over the threaded tests (TSAN_FILTER). STORE_TSAN_TESTS makes the test targets
# only the files of those suites and what they need (Package.swift), so this build compiles
# about a quarter of the tests' lines, not all of them; .ci/tsan-check then makes sure the
# filter selects the same tests in it as in the whole build of `make test` (docs/CONTRIBUTING.md,
# CI). The filter is literals and | only: .ci/tsan-check matches it with grep -E, Swift Testing
# with its own regular expressions, and both read those alike.
TSAN_FILTER := Concurrency|WriterLock|Notif|FreezeTests|SectionedResultsFreezeTests|ThreadSafeReferenceTests|AsyncWriteTests|AsyncOpenTests

tsan: deps tool
	STORE_TSAN_TESTS=1 $(SWIFT) build --build-tests --scratch-path .build-tsan --sanitize=thread
	.ci/tsan-check '$(TSAN_FILTER)'
	STORE_TSAN_TESTS=1 STORE_SANITIZER=1 TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/Tests/tsan.supp $(SWIFT) test --skip-build --scratch-path .build-tsan \
		--sanitize=thread --filter "$(TSAN_FILTER)"

# libFuzzer targets over the file format (Fuzz/README.md): builds them with clang's
# -fsanitize=fuzzer,address,undefined, writes the seed corpus and runs the targets side by side,
# each for FUZZ_SECONDS (its output in .build-fuzz/<target>.log, the tail printed). New inputs go to .build-fuzz/corpus/<target>, crashes to
# .build-fuzz/crashes/<target>; any crash, hang or sanitizer report fails the target. open_journal
# works in /dev/shm when it can (each input's replay syncs the database file and the journal,
# and on a disk those syncs, not the replay, would take most of its time).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 600
FUZZ_MAX_LEN ?= 65536
FUZZ_TARGETS ?= open_verify open_body query_parse open_journal
FUZZ_OUT     := .build-fuzz
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -fuse-ld=lld \
                -ISources/CStore/include -ISources/CStore -IFuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_DEPS    := Fuzz/fuzz_common.c Fuzz/fuzz_common.h $(CSRC) $(wildcard Sources/CStore/*.h) \
                Sources/CStore/include/cstore.h
FUZZ_ENV     := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
                UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
FUZZ_CORPUS  := Tests/Fixtures/fuzz-corpus
FUZZ_JOURNAL_CORPUS := Tests/Fixtures/fuzz-journal-corpus

# The core and the shared fuzz code are compiled once (with coverage for the fuzzer and the
# sanitizers) and linked into make_corpus and every target.
FUZZ_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(notdir $(CSRC)) fuzz_common.c)
FUZZ_LIBS := -llz4 -lpthread -lm

$(FUZZ_OUT)/obj/%.o: Sources/CStore/%.c $(FUZZ_DEPS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c -o $@ $<

$(FUZZ_OUT)/obj/fuzz_common.o: Fuzz/fuzz_common.c $(FUZZ_DEPS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c -o $@ $<

$(FUZZ_OUT)/bin/make_corpus: Fuzz/make_corpus.c $(FUZZ_OBJS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -o $@ $< $(FUZZ_OBJS) $(FUZZ_LIBS)

$(FUZZ_OUT)/bin/%: Fuzz/%.c $(FUZZ_OBJS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_OBJS) $(FUZZ_LIBS)

fuzz-build: $(FUZZ_OUT)/bin/make_corpus $(addprefix $(FUZZ_OUT)/bin/,$(FUZZ_TARGETS))
	rm -rf $(FUZZ_OUT)/seeds
	mkdir -p $(FUZZ_OUT)/seeds/open_verify $(FUZZ_OUT)/seeds/open_body $(FUZZ_OUT)/seeds/query_parse $(FUZZ_OUT)/seeds/open_journal
	$(FUZZ_ENV) $(FUZZ_OUT)/bin/make_corpus seeds $(FUZZ_OUT)/seeds/open_verify $(FUZZ_OUT)/seeds/open_body
	$(FUZZ_ENV) $(FUZZ_OUT)/bin/make_corpus journals $(FUZZ_OUT)/seeds/open_journal
	cp Fuzz/query-seeds/* $(FUZZ_OUT)/seeds/query_parse/

fuzz: fuzz-build
	@rm -f $(FUZZ_OUT)/*.log; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_OUT)/corpus/$$t $(FUZZ_OUT)/crashes/$$t; \
		extra=""; if [ $$t = open_verify ] && [ -d $(FUZZ_CORPUS) ]; then extra=$(FUZZ_CORPUS); fi; \
		dict=Fuzz/cstore.dict; maxlen=$(FUZZ_MAX_LEN); \
		if [ $$t = query_parse ]; then dict=Fuzz/query.dict; maxlen=4096; extra=Tests/Fixtures/query-corpus; fi; \
		tmp=$${TMPDIR:-/tmp}; if [ $$t = open_journal ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp=/dev/shm; fi; \
		echo "== $$t for $(FUZZ_SECONDS) s"; \
		( TMPDIR=$$tmp $(FUZZ_ENV) $(FUZZ_OUT)/bin/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=$$maxlen \
			-timeout=10 -rss_limit_mb=2048 -dict=$$dict -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_OUT)/crashes/$$t/ \
			$(FUZZ_OUT)/corpus/$$t $(FUZZ_OUT)/seeds/$$t $$extra > $(FUZZ_OUT)/$$t.log 2>&1 \
			|| echo "fuzz: $$t failed" >> $(FUZZ_OUT)/$$t.log ) & \
	done; wait; \
	rc=0; for t in $(FUZZ_TARGETS); do \
		echo "== $$t"; \
		if grep -q "^fuzz: $$t failed" $(FUZZ_OUT)/$$t.log; then rc=1; tail -n 80 $(FUZZ_OUT)/$$t.log; \
		else grep -E "DONE|^stat::" $(FUZZ_OUT)/$$t.log; fi; \
	done; \
	if [ $$rc -ne 0 ]; then echo "fuzz: a target failed; reproducers are in $(FUZZ_OUT)/crashes/, logs in $(FUZZ_OUT)/<target>.log"; fi; \
	exit $$rc

# Merges the fuzzing run's corpora (libFuzzer -merge=1) and replaces the committed replay corpora
# with the seeds plus the smallest merged inputs: the files' (Fuzz/select_corpus.sh) and the
# journals', with the base database they replay onto (Fuzz/select_journal_corpus.sh).
fuzz-corpus: fuzz-build
	$(FUZZ_ENV) FUZZ_MAX_LEN=$(FUZZ_MAX_LEN) sh Fuzz/select_corpus.sh $(FUZZ_OUT) $(FUZZ_CORPUS)
	mkdir -p $(FUZZ_OUT)/seeds/open_journal
	$(FUZZ_ENV) $(FUZZ_OUT)/bin/make_corpus journals $(FUZZ_OUT)/seeds/open_journal
	$(FUZZ_ENV) FUZZ_MAX_LEN=$(FUZZ_MAX_LEN) sh Fuzz/select_journal_corpus.sh $(FUZZ_OUT) $(FUZZ_JOURNAL_CORPUS)

# Prints the table; its JSON goes to Benchmarks/.build/latest.json. `make bench-record` also
# replaces the committed docs/benchmarks/latest.json (only when asked).
# The mirror rows need the tool's release build and a PostgreSQL server (.ci/with-postgres, with
# fsync on so the server's commits are durable like the file's).
bench: deps
	cd tools/swiftstore && $(SWIFT) build -c release
	cd Benchmarks && $(SWIFT) build -c release
	cd Benchmarks && STORE_PG_FSYNC=on ../.ci/with-postgres ./.build/release/swiftstore-bench --json .build/latest.json

bench-record: bench
	cp Benchmarks/.build/latest.json docs/benchmarks/latest.json

# A debug build of the Benchmarks package, for CI: it checks that the rows still compile against
# the library's API without the minutes a release build of GRDB takes.
bench-build: deps
	cd Benchmarks && $(SWIFT) build

bench-quick: deps
	cd tools/swiftstore && $(SWIFT) build -c release
	cd Benchmarks && $(SWIFT) build -c release
	cd Benchmarks && STORE_PG_FSYNC=on ../.ci/with-postgres ./.build/release/swiftstore-bench --quick

clean:
	rm -rf .build .build-asan .build-tsan .build-checks Benchmarks/.build tools/swiftstore/.build
