# nap: `make` builds everything, `make test` installs the test prerequisites and runs
# the whole suite. See README.md and docs/testing.md.

GO       ?= go
BIN      := bin
PKG      := github.com/nap-k8s/nap
# VERSION stamps a release (make dist VERSION=v0.1.0); unset, binaries carry
# internal/version's, which the chart's appVersion and the lab's images share.
VERSION  ?=
LDFLAGS  := -s -w $(if $(VERSION),-X $(PKG)/internal/version.Version=$(VERSION))
# Bounded fuzzing in `make test`, by input counts (5 to 12 s each on the 2-core machine):
# a time bound can end while a worker minimises a new input, and Go's fuzzer then fails
# with "context deadline exceeded" (seen in CI). For a longer local run: make fuzz FUZZTIME=10m
FUZZ_PARSE  ?= 200000x
FUZZ_DIFF   ?= 300x
FUZZ_READ   ?= 20000x
FUZZ_INJECT ?= 15000x
FUZZ_SNMP   ?= 100000x
FUZZ_UTF16  ?= 50000x
FUZZ_WEBHOOK ?= 10000x
FUZZ_VALUE  ?= 30000x
FUZZ_SOCKETS ?= 50000x
FUZZ_VERDICT ?= 200000x
FUZZ_LIVE   ?= 100000x
FUZZ_VERDICTLOG ?= 100000x
ifdef FUZZTIME
FUZZ_PARSE  := $(FUZZTIME)
FUZZ_DIFF   := $(FUZZTIME)
FUZZ_READ   := $(FUZZTIME)
FUZZ_INJECT := $(FUZZTIME)
FUZZ_SNMP   := $(FUZZTIME)
FUZZ_UTF16  := $(FUZZTIME)
FUZZ_WEBHOOK := $(FUZZTIME)
FUZZ_VALUE  := $(FUZZTIME)
FUZZ_SOCKETS := $(FUZZTIME)
FUZZ_VERDICT := $(FUZZTIME)
FUZZ_LIVE   := $(FUZZTIME)
FUZZ_VERDICTLOG := $(FUZZTIME)
endif

.PHONY: all build prereqs kube-bins ingress-bins dns-bins containerd-bins server-bins tool-bins dist cluster-up cluster-down e2e e2e-downtime e2e-decided proof-picture test unit fuzz bench bench-controller bench-scale clean FORCE

all: build

build: $(BIN)/napctl $(BIN)/kubectl-nap $(BIN)/kubectl_complete-nap $(BIN)/nap $(BIN)/nap-amd64 $(BIN)/nap-arm64

$(BIN)/napctl $(BIN)/kubectl-nap $(BIN)/nap: FORCE
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/$(notdir $@)

# kubectl's completion of the plugin (kubectl 1.26+ runs it from PATH).
$(BIN)/kubectl_complete-nap: cmd/kubectl-nap/kubectl_complete-nap
	@mkdir -p $(BIN)
	install -m 0755 $< $@

# The tiny sleepers are written by napctl itself: the same bytes as `napctl binary`.
$(BIN)/nap-%: $(BIN)/napctl
	$(BIN)/napctl binary --arch $* --file $@

prereqs:
	bash hack/prereqs.sh

# Kubernetes binaries (hack/kube-version) built from the Go module proxy into a cache
# outside the repository, and the envtest assets folder; only the first run builds.
# Node 2 of the lab runs an older kubelet and kube-proxy (hack/kube-version-node2).
kube-bins: prereqs
	bash hack/kube-bins.sh
	KUBE_VERSION=$$(cat hack/kube-version-node2) KUBE_BINS="kubelet kube-proxy" bash hack/kube-bins.sh

# The lab's ingress controller, Traefik (hack/ingress-version), built from the Go module
# proxy into the same cache; only the first run builds.
ingress-bins:
	bash hack/ingress-bins.sh

# The lab's cluster DNS, CoreDNS (hack/dns-version), built from the Go module proxy into
# the same cache; only the first run builds.
dns-bins:
	bash hack/dns-bins.sh

# Node 2's containerd 2.x (it mounts image volumes), built once into the cache.
containerd-bins:
	bash hack/containerd-bins.sh

# The third-party servers the proof runs unmodified (nginx: Debian's package), fetched
# once into the cache.
server-bins:
	bash hack/server-bins.sh

# helm and promtool (hack/tool-versions), built once into the cache: the tests run them
# on the chart and the alerting rules as users do.
tool-bins:
	bash hack/tool-bins.sh

# The two-node lab (hack/cluster.sh; needs root). Idempotent both ways.
cluster-up: kube-bins ingress-bins dns-bins containerd-bins server-bins tool-bins
	bash hack/cluster.sh up

cluster-down:
	bash hack/cluster.sh down

# Every end-to-end test on the local cluster, one process (the full lane of
# hack/e2e-lanes too, which make test leaves out); it stays up afterwards (make
# cluster-down).
e2e: cluster-up
	$(GO) test -count=1 -timeout 50m -parallel 3 ./test/e2e

# The downtime experiment: every traffic path (ClusterIP from node 1 and from node 2, the
# ingress, the load balancer with externalTrafficPolicy Local and Cluster) × disruption
# (rolling restart, scale-down, node drain) × variant (none, nap, native; and drain,
# nap + drain, the webhook on the first; nap at calibrate's delay behind the load
# balancer), 3 rounds each (1 behind the load balancer) under napctl probe at 200 req/s;
# each row replaces its own in docs/downtime-results.md as soon as it is measured, so the
# table can be regenerated in parts. Some scenarios, at another rate:
# make e2e-downtime NAP_DOWNTIME_ONLY='ingress (Traefik), node drain|L7 load balancer' NAP_DOWNTIME_RATE=2
# (NAP_DOWNTIME_ROUNDS sets the rounds.) The rows whose pods run nap's binary also give
# the confusion table of nap's verdicts against what the probe lost after each pod's
# exit, over the rows measured in that run: docs/verdict-results.md, written whole.
e2e-downtime: cluster-up
	NAP_DOWNTIME_OUT=$(CURDIR)/docs/downtime-results.md NAP_VERDICTS_OUT=$(CURDIR)/docs/verdict-results.md NAP_DOWNTIME_ONLY='$(NAP_DOWNTIME_ONLY)' \
		$(GO) test -count=1 -timeout 360m -run TestDowntimeExperiment -v ./test/e2e

# The live wait's whole table (docs/adaptive.md, "Decided at termination"): make test
# runs its two pairs.
e2e-decided: cluster-up
	NAP_DECIDED_ALL=1 $(GO) test -count=1 -timeout 60m -run 'TestWaitDecidedAtTermination$$' -v ./test/e2e

# The README's picture: TestIngressDowntime's two probe reports (a rolling restart behind
# the ingress, without a delay and with nap's) into docs/proof, drawn as
# docs/proof/rollout.svg by the probe's own plot.
proof-picture: cluster-up
	NAP_PROOF_OUT=$(CURDIR)/docs/proof $(GO) test -count=1 -timeout 10m -run 'TestIngressDowntime$$' -v ./test/e2e
	$(GO) test -count=1 -run TestProofPicture ./probe -update

# The whole suite (hack/test.sh): unit and envtest tests, while the lab starts beside them
# and runs the early lane's end-to-end tests (hack/e2e-lanes); then the two side lanes at
# once, then every other end-to-end test but the full lane's (make e2e) alone on the lab,
# bounded fuzzing beside it, torn down after. Nothing may skip for a missing prerequisite
# (see internal/testenv).
test: prereqs kube-bins ingress-bins dns-bins containerd-bins server-bins tool-bins build
	$(GO) vet ./...
	GO=$(GO) MAKE=$(MAKE) bash hack/test.sh

unit:
	$(GO) test ./...

fuzz:
	$(GO) test ./sleeper/nap -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_PARSE) -fuzzminimizetime 2s
	$(GO) test ./sleeper/nap -run '^$$' -fuzz '^FuzzPassiveOpens$$' -fuzztime $(FUZZ_SNMP) -fuzzminimizetime 2s
	$(GO) test ./sleeper/nap -run '^$$' -fuzz '^FuzzSocketsRead$$' -fuzztime $(FUZZ_SOCKETS) -fuzzminimizetime 2s
	$(GO) test ./sleeper/nap -run '^$$' -fuzz '^FuzzParseVerdict$$' -fuzztime $(FUZZ_VERDICT) -fuzzminimizetime 2s
	$(GO) test ./sleeper/nap -run '^$$' -fuzz '^FuzzParseLive$$' -fuzztime $(FUZZ_LIVE) -fuzzminimizetime 2s
	$(GO) test ./sleeper -run '^$$' -fuzz '^FuzzDifferential$$' -fuzztime $(FUZZ_DIFF) -fuzzminimizetime 2s
	$(GO) test ./manifest -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZ_READ) -fuzzminimizetime 2s
	$(GO) test ./manifest -run '^$$' -fuzz '^FuzzUTF16$$' -fuzztime $(FUZZ_UTF16) -fuzzminimizetime 2s
	$(GO) test ./manifest -run '^$$' -fuzz '^FuzzValue$$' -fuzztime $(FUZZ_VALUE) -fuzzminimizetime 2s
	$(GO) test ./inject -run '^$$' -fuzz '^FuzzInject$$' -fuzztime $(FUZZ_INJECT) -fuzzminimizetime 2s
	$(GO) test ./controller -run '^$$' -fuzz '^FuzzInjectorHandle$$' -fuzztime $(FUZZ_WEBHOOK) -fuzzminimizetime 2s
	$(GO) test ./test/forensic -run '^$$' -fuzz '^FuzzReadVerdictsLine$$' -fuzztime $(FUZZ_VERDICTLOG) -fuzzminimizetime 2s

bench: prereqs build
	$(GO) run ./hack/bench-sleeper
	$(GO) test ./drain/... -run '^$$' -bench . -count 5 | tee /dev/stderr | bash hack/bench-ratio.sh
	$(GO) test ./lint -run '^$$' -bench 'Lint10k' -benchmem -count 3
	$(GO) test ./lint -run '^$$' -bench 'InjectVsLint' -benchmem -count 3 | tee /dev/stderr | bash hack/bench-ratio.sh Lint Inject
	$(GO) test ./controller -run '^$$' -bench 'InjectorHandle' -benchmem -count 3
	$(GO) test ./internal/cli/app -run '^$$' -bench 'LargeManifest|LargeMapping' -benchtime 1x -timeout 20m
	bash hack/bench-probe.sh
	$(MAKE) kube-bins
	NAP_BENCH_PROBE_WATCH=1 $(GO) test -count=1 -run TestProbeWatchCost -v ./internal/cli/probe
	$(MAKE) bench-controller

# The controller's figures (docs/controller-bench.md): 2,000 namespaces (a Service, 5 Deployments
# and 5 pods each), 60 s at rest, napctl status over them all,
# 50 Pod creates per second in rounds until 3 are quiet (NAP_BENCH_ROUNDS, NAP_BENCH_MAX_STEAL);
# envtest, 15 to 30 minutes.
bench-controller: kube-bins
	NAP_BENCH_CONTROLLER_OUT=$(CURDIR)/docs/controller-bench.md $(GO) test -count=1 -timeout 60m -run TestControllerBenchmarks -v ./controller/bench

# The controller, its Reporter, napctl status and lint --live on a fleet grown in steps
# to Kubernetes' tested limits: 2,000 / 5,000 / 10,000 namespaces and 10k / 50k / 150k pods
# (NAP_BENCH_SCALE_STEPS), growth fitted over the steps (docs/controller-scale.md);
# NAP_BENCH_PROFILES=DIR keeps CPU and heap profiles of each phase for go tool pprof;
# envtest, 25 to 45 minutes (27.6 in the last run); it fails when a target is missed at the last step. Not in make test.
bench-scale: kube-bins
	NAP_BENCH_SCALE_OUT=$(CURDIR)/docs/controller-scale.md $(GO) test -count=1 -timeout 150m -run TestScaleBenchmarks -v ./controller/bench

# What a release publishes: the images (napctl with nap, nap alone; an OCI archive to push
# with skopeo), the kubectl plugin for linux and darwin on amd64 and arm64 with their
# sha256, and the krew manifest naming them. make dist VERSION=v0.1.0
dist:
	$(if $(VERSION),,$(error make dist needs VERSION, such as make dist VERSION=v0.1.0))
	$(GO) run ./hack/dist -o dist -version $(VERSION)
	$(GO) run ./hack/images -version $(VERSION) -o dist/images.tar -pinned dist/images.txt
	# napctl install's manifests, the controller's image pinned by digest.
	$(GO) run -ldflags '$(LDFLAGS)' ./cmd/napctl install --image "$$(grep -m1 '/napctl@sha256:' dist/images.txt)" > dist/install.yaml.new
	mv dist/install.yaml.new dist/install.yaml

clean:
	rm -rf $(BIN) dist

FORCE:
