# Thin wrapper around CMake. The real build lives in CMakeLists.txt.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo asan clean help

all: build

help:
	@echo "make deps     install missing system packages (apt-get as root; else prints the list)"
	@echo "make build    configure and build into $(BUILD)/"
	@echo "make test     deps, -Werror build, the whole ctest suite (starts its own servers)"
	@echo "make demo     deps, build, run the demo campaign locally (kb-launch --local)"
	@echo "make asan     ASan+UBSan build into build-asan/ and run the tests there"

deps:
	@sh scripts/install-deps.sh

configure:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	cmake -S . -B $(BUILD) -DKB_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

demo: deps build
	$(BUILD)/bin/kb-launch --local --restart examples/demo/campaign.json

# The multinode tests (a Slurm cluster in network namespaces, a 30 s link drop) are left out:
# they take minutes and test the daemons' interplay, which the plain pass covers (docs/cluster.md).
# So are the tests labelled no-asan, whose time is nvcc's or Python's, not our C: the CUDA
# compiles (test_cuda_compile, gpu_catalogue_compile, tasks_compile_*), the KernelBench importer
# (Python) and tasks_modelnew (the PyTorch worker); every program of ours they run also runs
# under ASan in another test (test_cuda_pool, tasks_torch_oracle), and CI must stay under 30
# minutes on two cores. Also left out: tasks_host_suite (a 13-task campaign, 170 s under ASan,
# whose programs run under ASan in e2e_launch and scheduler_campaign_llm, its tasks in
# tasks_host_sanity), tasks_seed_margin (the host tasks' seeds against their tolerances: the
# tasks' data; its draws and verify.c run under ASan in test_inputs and test_verify), and the
# benchmarks' smoke runs (label bench: 97 s under ASan; the queue
# scripts and the witness they drive run under ASan in the queue and runner tests).
asan: deps
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DKB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" \
	  CTEST_FLAGS="-LE 'multinode|no-asan|bench' $(CTEST_FLAGS)"

clean:
	rm -rf $(BUILD) build-asan
