# herald: make up | test | test-cluster | down | reset
# Every target that needs servers starts them first (stack/up.sh is idempotent).

GO ?= go
GOTEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: up down reset test test-cluster build vet

up:
	stack/up.sh

down:
	stack/down.sh

reset:
	stack/reset.sh

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...
	$(GO) vet -tags cluster ./...
	$(GO) vet -tags disruptive ./...

# Every test, against the real servers; a server that does not answer is a
# failure (tests only skip under -short, which this target never passes).
# Then, serially and alone, the disruptive tests (build tag disruptive,
# names TestDisruptive*): they stop servers, which would break any test
# running beside them.
test: up vet
	$(GO) test $(GOTEST_FLAGS) ./...
	$(GO) test $(GOTEST_FLAGS) -p 1 -tags disruptive -run 'TestDisruptive' ./...

# Replication tests on a three-broker cluster: stops and restarts brokers.
test-cluster:
	KAFKA_BROKERS=3 stack/up.sh
	$(GO) test $(GOTEST_FLAGS) -tags cluster -run 'TestCluster' ./...
