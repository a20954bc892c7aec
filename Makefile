# The two commands: `make run` and `make test`. Both bootstrap (install any
# missing Debian package), configure and build first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all bootstrap configure build run test test-asan bench reference tidy clean

all: build

bootstrap:
	@scripts/bootstrap

$(BUILD)/build.ninja: | bootstrap
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: bootstrap $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Builds only the simulator (not the tests and benchmarks), runs the default
# simulation and prints its result.
run: configure
	cmake --build $(BUILD) -j $(JOBS) --target tpusim
	$(BUILD)/sim/tpusim run --arch v5e --gemm 4096,4096,4096 --out results/default

# The whole test suite, then the unit tests again under ASan + UBSan.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan

test-asan: bootstrap
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTPUSIM_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS) -L unit_

# Rewrites results/reference/ from the runs listed in results/reference/RUNS
# (the CTest tests reference.* compare them); commit the diff with its reason.
reference: configure
	cmake --build $(BUILD) -j $(JOBS) --target tpusim
	scripts/update-reference --tpusim $(BUILD)/sim/tpusim

# clang-tidy (.clang-tidy) on the C++ files changed since TIDY_BASE (default:
# the merge base with main); installs Debian's clang-tidy if missing.
tidy: configure
	JOBS=$(JOBS) scripts/tidy $(BUILD)

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf $(BUILD) $(BUILD)-asan
