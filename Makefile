# The two commands: `make run` and `make test`. Both bootstrap (install any
# missing Debian package), configure and build first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all bootstrap configure build run test test-asan fuzz fuzz-build fuzz-cli bench reference tidy clean

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

# clang-tidy on the changed files (scripts/tidy), the whole test suite,
# the unit tests again under ASan + UBSan, then a short run of every fuzzer.
# The tests keep their HBM calibration cache in the build folder, not the
# user's ~/.cache/tpusim.
test: build
	JOBS=$(JOBS) scripts/tidy $(BUILD)
	cd $(BUILD) && TPUSIM_CACHE_DIR=$(abspath $(BUILD))/hbm-cache ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan
	$(MAKE) fuzz FUZZ_SECONDS=3

# libFuzzer targets (tests/fuzz/), built with Debian's clang in their own
# folder; each runs FUZZ_SECONDS on a seed corpus of the shipped files.
# A crash leaves its input in $(BUILD)-fuzz/artifacts/ and fails the target.
FUZZ_SECONDS ?= 120
FUZZERS = fuzz_workload_yaml:configs/workloads fuzz_scalesim_csv:configs/workloads \
          fuzz_model_file:models/zoo fuzz_config:configs fuzz_sweep_expr:tests/fuzz/seeds/expr \
          fuzz_mesh:tests/fuzz/seeds/mesh fuzz_serve_inputs:tests/fuzz/seeds/serve
fuzz-build: bootstrap
	CXX=clang++ cmake -S . -B $(BUILD)-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTPUSIM_FUZZ=ON
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzzers

# $(call run_fuzzers,name:seeds ...): each fuzzer FUZZ_SECONDS on its corpus.
define run_fuzzers
	@mkdir -p $(BUILD)-fuzz/artifacts
	@for f in $(1); do n=$${f%%:*}; seeds=$${f#*:}; mkdir -p $(BUILD)-fuzz/corpus/$$n; \
	  echo "== $$n ($(FUZZ_SECONDS) s, seeds $$seeds)"; \
	  $(BUILD)-fuzz/tests/fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
	    -artifact_prefix=$(BUILD)-fuzz/artifacts/$$n- -print_final_stats=1 \
	    $(BUILD)-fuzz/corpus/$$n $$seeds 2>&1 | grep -E "^stat::number_of_executed_units|ERROR|SUMMARY|Test unit written" || true; \
	  if ls $(BUILD)-fuzz/artifacts/$$n-* >/dev/null 2>&1; then echo "$$n: findings in $(BUILD)-fuzz/artifacts"; exit 1; fi; \
	done
endef

fuzz: fuzz-build
	$(call run_fuzzers,$(FUZZERS))

# The sweep-spec, validation-case and suite readers (tests/fuzz/CMakeLists.txt:
# they need the whole tpusim_sim library instrumented, so not in `make test`).
FUZZERS_CLI = fuzz_sweep_spec:configs/sweeps fuzz_case_file:configs/validation fuzz_suite:configs/suites
fuzz-cli: fuzz-build
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzzers-cli
	$(call run_fuzzers,$(FUZZERS_CLI))

# Besides the unit tests: the multi-chip tests of the ICI simulator, one
# whole multi-chip run with a collective (issue 17: these once leaked) and
# the run's error paths after simulation (time limit, VCD write error:
# exceptions after SystemC switched stacks, sim/engine/asan_stack.h). The
# other multi-chip tests repeat the same code on larger slices and take
# minutes each in this Debug + ASan build.
ASAN_EXTRA = ^(IciModule\..*|MultiChip\.(CollectiveTakesTheNetworkModelsTime|CollectiveNeedsASliceAndItsAxes|MeshMapsOntoSliceDimensionsAndTheirParts|ExplicitPlacementBuildsMaxTextsHybridRing|AxisOfOneChipAfterTheLastDimensionIsAGroupOfOne|PlacementOfManyPartsIsRefusedWithoutOverflow)|HostileCli\.(RunsBeyondTheSimulatedTimeLimitStopAndSaySo|AVcdOnAFullDiskExitsNonZeroNamingThePath))$$
# The executables of those tests and the binary the CLI ones run: with the
# unit tests, all the ASan build compiles (tests/CMakeLists.txt).
ASAN_EXTRA_TARGETS = module_test_ici_module module_test_multichip cli_test_cli_hostile tpusim
# Left out of the ASan run: the 256 MiB instances of the HBM models'
# agreement with the detailed model, the same code as their smaller sizes
# and 103 s of test time under ASan, and the detailed model's streaming of
# the shipped v5p and v7 memory systems, the same code as the other
# generations' on more channels and 115 s (the Release run keeps them all;
# a parameterised test's CTest name ends in "  # GetParam() = ...").
ASAN_SKIP = ^(Sizes/.*/268435456|(Shipped/HbmGeneration|Chips/ShippedHbm)\..*/(v5p|v7)( .*)?)$$
test-asan: bootstrap
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTPUSIM_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS) --target unit-tests $(ASAN_EXTRA_TARGETS)
	cd $(BUILD)-asan && TPUSIM_CACHE_DIR=$(abspath $(BUILD))-asan/hbm-cache ctest --output-on-failure --no-tests=error -j $(JOBS) -L unit_ -E '$(ASAN_SKIP)'
	cd $(BUILD)-asan && TPUSIM_CACHE_DIR=$(abspath $(BUILD))-asan/hbm-cache ctest --output-on-failure --no-tests=error -j $(JOBS) -R '$(ASAN_EXTRA)'

# Rewrites results/reference/ from the runs listed in results/reference/RUNS
# (the CTest tests reference.* compare them); commit the diff with its reason.
reference: configure
	cmake --build $(BUILD) -j $(JOBS) --target tpusim
	scripts/update-reference --tpusim $(BUILD)/sim/tpusim

# clang-tidy (.clang-tidy) on the C++ files changed since TIDY_BASE (default:
# the merge base with main; on main, the last commit's first parent; empty:
# every file), results cached under $(BUILD)/tidy-cache; installs Debian's
# clang-tidy-14 if missing. `make test` runs it first.
tidy: configure
	JOBS=$(JOBS) scripts/tidy $(BUILD)

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf $(BUILD) $(BUILD)-asan
