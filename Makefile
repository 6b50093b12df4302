# Every CI step is one target; `make ci` runs what .ci/run runs.
CARGO ?= cargo
.PHONY: all build deps fmt fmt-check clippy test test-unit test-io_uring test-epoll bench loadtest run ci

all: build

build:
	$(CARGO) build --workspace

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# nginx (the differential oracle) and wrk, from Debian's packages when missing.
deps:
	bash .ci/deps

# Every crate's tests, then the loopback integration suite under both event loops.
test: deps
	$(MAKE) test-unit test-io_uring test-epoll

# Every crate's own tests (unit and integration) except the binary's loopback suite.
test-unit:
	$(CARGO) build --workspace --bins
	$(CARGO) test --workspace --exclude ringfront

test-io_uring:
	RINGFRONT_DRIVER=io_uring $(CARGO) test -p ringfront --tests

test-epoll:
	RINGFRONT_DRIVER=epoll $(CARGO) test -p ringfront --tests

bench:
	$(CARGO) bench -p ringfront-benches

loadtest:
	bash loadtest/run.sh

# A profile-guided release build at target/pgo/release/ringfront, trained on the load-test
# shapes (needs llvm-profdata of rustc's LLVM, nginx and wrk; docs/decisions/0020). Measure
# it with RINGFRONT_BIN=target/pgo/release/ringfront SKIP_BUILD=1 make loadtest.
.PHONY: pgo
pgo:
	bash loadtest/pgo.sh

# nginx's own test suite (../shared/nginx-tests, stock Test::Nginx harness) against the release
# binary; per-file counts next to nginx 1.22.1's and a totals line. .ci/run runs it as a report
# (it does not gate CI).
.PHONY: nginx-tests
nginx-tests:
	$(CARGO) build --release -p ringfront
	../shared/nginx-tests-run target/release/ringfront --jobs 2

# Memory per idle keep-alive connection (ringfront vs nginx) and a 10-minute leak soak;
# knobs in loadtest/soak.sh, results in loadtest/out/soak.md.
.PHONY: soak
soak:
	bash loadtest/soak.sh

# cargo-fuzz targets (fuzz/, nightly + libFuzzer): each for FUZZ_SECONDS, seeded from the
# committed corpus fuzz/corpus/TARGET; new inputs go to fuzz/work/TARGET (ignored), crashes
# to fuzz/artifacts/TARGET (add them to fuzz/corpus/TARGET once fixed).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= request_head response_head chunked config
CARGO_NIGHTLY ?= cargo +nightly
.PHONY: fuzz fuzz-smoke
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p fuzz/work/$$t; \
	  echo "== fuzz $$t for $(FUZZ_SECONDS)s"; \
	  (cd fuzz && $(CARGO_NIGHTLY) fuzz run $$t work/$$t corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1); \
	done

# CI: cargo-fuzz (and nightly) when missing, the corpus replayed on stable by the crates'
# fuzz_corpus tests, then every target for 10 s (which replays the corpus under libFuzzer first).
fuzz-smoke:
	@rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	$(CARGO) test -p ringfront-http -p ringfront-config --test fuzz_corpus
	$(MAKE) fuzz FUZZ_SECONDS=10

# Three demo backends on 127.0.0.1:9001-9003 and ringfront on config/ringfront.conf at :8080.
run: run-tls
	$(CARGO) build --release -p ringfront -p ringfront-testkit
	@bash -c 'set -m; ./target/release/demo-backend --port 9001 --port 9002 --port 9003 & \
	  trap "kill %1 2>/dev/null" EXIT INT TERM; \
	  echo; echo "ringfront on http://127.0.0.1:8080/ -> demo backends 9001 (weight 4), 9002 (2), 9003 (1)"; \
	  echo "try:  for i in 1 2 3 4 5 6 7; do curl -s http://127.0.0.1:8080/; done"; \
	  echo "and over TLS: curl --cacert target/run-tls/localhost.pem https://localhost:8443/"; echo; \
	  ./target/release/ringfront -c config/ringfront.conf'

ci: fmt-check clippy test

# A self-signed ECDSA P-256 certificate for localhost and the `listen ... ssl` lines that
# config/ringfront.conf includes, made once with the openssl command (target/ is not
# committed).
.PHONY: run-tls
run-tls:
	@mkdir -p target/run-tls
	@test -s target/run-tls/localhost.pem || openssl req -x509 -newkey ec \
	  -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 -subj /CN=localhost \
	  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	  -keyout target/run-tls/localhost.key -out target/run-tls/localhost.pem 2>/dev/null
	@printf '%s\n' 'listen 127.0.0.1:8443 ssl;' \
	  'ssl_certificate ../target/run-tls/localhost.pem;' \
	  'ssl_certificate_key ../target/run-tls/localhost.key;' > target/run-tls/https.conf
