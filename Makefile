# The commands a contributor types. `make test` and `make bench` work on a fresh machine:
# they install liblz4-dev and libsqlite3-dev (Debian packages) when missing.

SWIFT      ?= swift
CC         ?= cc
CSRC       := $(wildcard Sources/CStore/*.c)
CWARN      := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
              -Wno-unused-parameter -ISources/CStore/include -ISources/CStore
SAN_ENV    := SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
              LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp \
              UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Tests that are too slow under the sanitizers are filtered out there (see CONTRIBUTING.md).
ASAN_SKIP  ?= Campaign

.PHONY: all deps build test test-full cwarn asan tsan bench bench-quick fuzz docs format clean

all: build

deps:
	@missing=""; \
	[ -f /usr/include/lz4.h ] || missing="$$missing liblz4-dev"; \
	[ -f /usr/include/sqlite3.h ] || missing="$$missing libsqlite3-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update && apt-get install -y $$missing; \
	fi

# The C core must compile without a warning (warnings are errors for it, here and in CI).
cwarn:
	$(CC) $(CWARN) -fsyntax-only $(CSRC)

build: deps
	$(SWIFT) build

test: deps cwarn
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel

# The long campaigns (crash kills, corruption sweeps) at full size.
test-full: deps cwarn
	$(SWIFT) build --build-tests
	STORE_FULL_CAMPAIGN=1 $(SWIFT) test --skip-build --parallel

# AddressSanitizer + UndefinedBehaviorSanitizer over the C core's tests; any report fails.
asan: deps
	$(SWIFT) build --build-tests --scratch-path .build-asan \
		--sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=all -Xcc -fno-omit-frame-pointer
	$(SAN_ENV) $(SWIFT) test --skip-build --scratch-path .build-asan \
		--sanitize=address --filter CStoreTests --skip $(ASAN_SKIP)

# ThreadSanitizer over the threaded tests.
tsan: deps
	$(SWIFT) build --build-tests --scratch-path .build-tsan --sanitize=thread
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --scratch-path .build-tsan \
		--sanitize=thread --filter Concurrency

bench: deps
	cd Benchmarks && $(SWIFT) build -c release
	cd Benchmarks && ./.build/release/swiftstore-bench --json ../docs/benchmarks/latest.json

bench-quick: deps
	cd Benchmarks && $(SWIFT) build -c release
	cd Benchmarks && ./.build/release/swiftstore-bench --quick

clean:
	rm -rf .build .build-asan .build-tsan Benchmarks/.build
