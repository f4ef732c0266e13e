# Herald: the two commands a newcomer needs.
#   make demo   install what is missing, build (release), start the whole stack (herald dev up),
#               send a broadcast and a tag push to 100,000 simulated devices with live progress,
#               check them against apns-sim, stop everything (KEEP=1 leaves it up)
#   make test   install what is missing, build once for the Swift tests (debug) and once for
#               the processes (release), start the infrastructure, run every test (end to end on
#               one stack, then on two APIs behind HAProxy, two centers and four senders), stop
#               everything (the exit status is the tests')
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT ?= swift
KEEP ?= 0
# The one release build: every product, built as the Containerfile builds it (the committed
# Package.resolved, the static Swift runtime). The end-to-end and scale-out tests, the image check,
# the demo and the benchmarks all run its binaries in .build/release, so nothing is compiled for
# release twice.
RELEASE_BUILD := $(SWIFT) build --force-resolved-versions -c release --static-swift-stdlib
# Each step's time goes to .local/step-times.txt (scripts/step.sh); .ci/run prints them.
STEP := scripts/step.sh

.PHONY: help deps deps-demo build release schema test test-tsan format demo check-image bench-e2e bench-scale-10m bench-import bench-api bench-events bench-fanout bench-sender bench-sender-latency bench-scale bench-soak bench-priority bench-one-device bench-console bench-apns-client bench-apns-sim bench-kafka bench-gateway infra-up infra-down clean

help:
	@echo "make demo     # the whole stack, 100,000 simulated devices, a broadcast and a tag push, checked (KEEP=1 leaves it up)"
	@echo "make test     # build once and run all tests against real PostgreSQL and Kafka"
	@echo "make schema   # Schemas/postgres-schema.sql written again from the migrations (after adding one)"
	@echo "make release  # every product, built as the Containerfile builds them (what the demo, the end-to-end tests and the benchmarks run)"
	@echo "make test-tsan  # the HTTP/2 (APNs client, apns-sim) and Kafka tests under ThreadSanitizer"
	@echo "make bench-e2e  # a 1,000,000-device broadcast through the whole herald dev stack"
	@echo "make bench-scale-10m  # the end-to-end benchmark at 1,000,000 and at 10,000,000 devices: is time per notification linear, is memory flat"
	@echo "make bench-import  # herald-api's import of 1,000,000 devices (half updates) against psql COPY + merge, as a ratio"
	@echo "make bench-kafka  # Kafka throughput benchmark (release build) against kcat"
	@echo "make bench-apns-sim  # apns-sim against nghttpd under h2load (release build)"
	@echo "make bench-apns-client  # Herald's APNs client against h2load, both to apns-sim"
	@echo "make bench-sender  # a million notifications through Kafka and herald-sender to apns-sim"
	@echo "make bench-sender-latency  # herald-sender at apns-sim latencies of 0 to 100 ms, each against h2load with the sender's connections and streams"
	@echo "make bench-scale  # herald-sender ×1, ×2, ×4 against the same million-notification backlog"
	@echo "make bench-api  # single-device pushes to herald-api under wrk, against /healthz"
	@echo "make bench-events  # engagement events (POST /v1/events) in batches of 100 under wrk, against /healthz"
	@echo "make bench-soak  # 30 minutes of mixed pushes on the dev stack: RSS and table sizes at start and end (SOAK_MINUTES=…)"
	@echo "make bench-priority  # one-device pushes' latency, quiet and while another app's broadcasts run (ratio of p99s)"
	@echo "make bench-one-device  # where an idle stack's one-device push spends its time, stage by stage (kcat's hop beside it)"
	@echo "make bench-console  # console pages rendered with 1,000,000 devices in the app, against /healthz (p99 target 50 ms)"
	@echo "make bench-fanout  # a 1,000,000-device broadcast fanned out by herald-center, against psql COPY"
	@echo "make bench-gateway  # herald-gateway holding 18,000 TLS connections against mosquitto; online against APNs latency"
	@echo "make check-image  # the Containerfile's runtime packages proven in a debootstrap'ed bookworm root (root needed)"

# What the demo builds with and runs (scripts/packages-demo.txt); the tests and benchmarks add
# scripts/packages-test.txt.
deps-demo:
	@$(STEP) deps scripts/install-dependencies.sh demo

deps:
	@$(STEP) deps scripts/install-dependencies.sh test

build: deps
	$(SWIFT) build --build-tests

format:
	scripts/format.sh

test: deps
	$(STEP) format scripts/format.sh --check
	$(STEP) package-names scripts/check-package-names.sh
	@# FoundationNetworking needs libcurl, which the static release build and the image do not have:
	@# only HeraldKitURLSession (an app's, never linked by Herald's executables) may import it.
	$(STEP) imports bash -c 'mkdir -p .local && $(SWIFT) package dump-package > .local/package.json && scripts/check-imports.py < .local/package.json && scripts/module-graph.py --check < .local/package.json && ! grep -rn "import FoundationNetworking" Sources Clients/HeraldKit/Sources/HeraldKit Clients/HeraldKit/Sources/HeraldGatewayProtocol && cd Clients/HeraldKit && $(SWIFT) package dump-package | ../../scripts/check-imports.py'
	$(STEP) openapi scripts/generate-openapi.sh --check
	$(STEP) deploy scripts/test-deploy.sh
	$(STEP) build $(SWIFT) build --build-tests
	$(STEP) schema scripts/with-infrastructure.sh .build/debug scripts/schema-snapshot.sh .build/debug --check
	$(STEP) swift-tests scripts/with-infrastructure.sh .build/debug env SWIFT='$(SWIFT)' scripts/swift-test.sh --skip-build --skip HostileServerTests
	$(STEP) api-contract scripts/with-infrastructure.sh .build/debug scripts/test-api-contract.sh .build/debug
	$(STEP) abuse scripts/with-infrastructure.sh .build/debug scripts/test-abuse.sh .build/debug
	$(STEP) external-clients scripts/test-external-clients.sh .build/debug
	$(STEP) gateway scripts/with-infrastructure.sh .build/debug scripts/test-gateway.sh .build/debug
	$(STEP) release $(RELEASE_BUILD)
	$(STEP) heraldkit scripts/test-heraldkit.sh .build/release
	$(STEP) end-to-end scripts/test-end-to-end.sh .build/release
	$(STEP) scale-out scripts/test-scale-out.sh .build/release

release: deps
	$(RELEASE_BUILD)

# Schemas/postgres-schema.sql written again from the migrations (after adding one).
schema: deps
	$(SWIFT) build --product herald
	$(SWIFT) build --product herald-admin
	scripts/with-infrastructure.sh .build/debug scripts/schema-snapshot.sh .build/debug

# The HTTP/2 engine (HeraldHTTP2, through the APNs client's and apns-sim's tests) under
# ThreadSanitizer: a build of its own in .build-tsan (slow the first time), with -DHERALD_TSAN so
# the modules' locks are ones ThreadSanitizer can see (VisibleMutex); any data race fails the run.
# HeraldKafka's tests cannot run under it here: librdkafka starts its threads with C11
# thrd_create, which ThreadSanitizer does not see, and its allocator crashes on them
# (docs/operations.md). The development broker runs uninstrumented.
TSAN_TESTS := ^(HeraldAPNsTests|APNsSimulatorTests)\.
TSAN_BUILD := --sanitize=thread --build-path .build-tsan -Xswiftc -DHERALD_TSAN
test-tsan: deps
	$(SWIFT) build --product herald-kafka-dev
	$(SWIFT) build --build-tests $(TSAN_BUILD)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" scripts/with-infrastructure.sh .build/debug \
	  $(SWIFT) test --skip-build $(TSAN_BUILD) --filter '$(TSAN_TESTS)'

demo: deps-demo
	$(RELEASE_BUILD)
	KEEP=$(KEEP) scripts/demo.sh .build/release

bench-soak: release
	Benchmarks/Soak/run.sh .build/release $${SOAK_MINUTES:-30}

bench-priority: release
	Benchmarks/PriorityLatency/run.sh .build/release $${PRIORITY_DEVICES:-1000000} $${PRIORITY_PHASE_SECONDS:-40}

bench-one-device: release
	Benchmarks/OneDevice/run.sh .build/release $${ONE_DEVICE_PUSHES:-300}

bench-console: release
	Benchmarks/Console/run.sh .build/release $${CONSOLE_DEVICES:-1000000}

bench-e2e: release
	Benchmarks/EndToEnd/run.sh .build/release

bench-scale-10m: release
	Benchmarks/Scale10M/run.sh .build/release $${SCALE_DEVICES:-10000000}

bench-import: release
	Benchmarks/DeviceImport/run.sh .build/release $${IMPORT_DEVICES:-1000000}

bench-apns-sim: release
	.build/release/apns-sim-throughput --apns-sim .build/release/apns-sim

bench-apns-client: release
	.build/release/apns-client-throughput --apns-sim .build/release/apns-sim

bench-sender: release
	HERALD_LOG_LEVEL=warning scripts/with-infrastructure.sh .build/release .build/release/sender-throughput

bench-sender-latency: release
	Benchmarks/SenderLatency/run.sh .build/release

# Senders 1, 2 and 4 against the same backlog, each run on a fresh broker and PostgreSQL with its
# own h2load reference (docs/benchmarks.md, docs/operations.md's capacity table).
bench-scale: release
	@for senders in 1 2 4; do \
	  echo "== $$senders sender(s)"; \
	  HERALD_LOG_LEVEL=warning scripts/with-infrastructure.sh .build/release .build/release/sender-throughput --senders $$senders || exit 1; \
	done

bench-api: release
	HERALD_LOG_LEVEL=warning scripts/with-infrastructure.sh .build/release .build/release/api-throughput

bench-events: release
	HERALD_LOG_LEVEL=warning scripts/with-infrastructure.sh .build/release .build/release/api-throughput --events

bench-fanout: release
	HERALD_LOG_LEVEL=warning scripts/with-infrastructure.sh .build/release .build/release/fanout-throughput

bench-gateway: release
	Benchmarks/Gateway/run.sh .build/release $${GATEWAY_CONNECTIONS:-18000}

bench-kafka: release
	.build/release/kafka-throughput --broker-binary .build/release/herald-kafka-dev

# The container image's runtime stage without a registry (scripts/check-image.sh): the release
# binaries, built as the Containerfile builds them, run in a minimal bookworm root.
check-image: deps
	$(STEP) release $(RELEASE_BUILD)
	$(STEP) check-image scripts/with-infrastructure.sh .build/release scripts/check-image.sh .build/release

infra-up: deps
	$(SWIFT) build --product herald-kafka-dev
	scripts/postgres.sh start
	scripts/kafka-dev.sh start .build/debug/herald-kafka-dev

infra-down:
	-scripts/kafka-dev.sh stop
	-scripts/postgres.sh stop

clean: infra-down
	rm -rf .build .local
