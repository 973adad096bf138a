# mk/hardening.mk — fuzzing, sanitizers and valgrind (issue 8), included by the Makefile, whose
# ENGINE_SRC, HEADERS, CFLAGS_COMMON, NATIVE_ARCH and TEST_PROGRAMS it uses.
#   make fuzz            builds the libFuzzer targets (build/fuzz/), replays tests/fuzz/regressions,
#                        then runs each target FUZZ_SECONDS (default 60) from its seed corpus;
#                        fails on any finding (the crashing input lands in build/fuzz/findings/)
#   make test-asan       the C test programs and the CLI built with ASan+UBSan (build/asan/), run
#                        with the arguments the node suites give them, plus CLI runs
#   make test-valgrind   the load–generate–free cycle of the plain native build under valgrind
# Needs clang with its runtime (Debian: clang-14, libclang-rt-14-dev) and valgrind.
# Shared test data: ../shared (or WICK_SHARED); seeds are copied from there into build/, never committed.

.PHONY: fuzz fuzz-build fuzz-regressions fuzz-corpus test-asan test-valgrind

SAN_CC ?= clang
WICK_SHARED ?= ../shared
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := fuzz_gguf fuzz_llama2c fuzz_tokenizer fuzz_state
# a single input may take 25 s; one allocation above 2 GiB is a finding (the wasm build cannot
# make it: the engine must refuse such a file with an error before allocating)
FUZZ_LIMITS := -timeout=25 -rss_limit_mb=3072 -malloc_limit_mb=2048
# every long job here runs at low priority: the machine is shared with benchmarks
NICE ?= nice -n 19

SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# -O1 keeps the sanitizers fast enough; WICK_NO_THREADS is NOT set: the pool is exercised too
SAN_CFLAGS := $(CFLAGS_COMMON) -O1 -g -pthread $(NATIVE_ARCH) $(SAN_FLAGS)
# the fuzzers read their fixed companion files (tok512.bin, the vocabularies) from $WICK_SHARED
FUZZ_ENV = WICK_SHARED=$(abspath $(WICK_SHARED)) ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN)
ASAN_OPTIONS_RUN := detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
UBSAN_OPTIONS_RUN := print_stacktrace=1:halt_on_error=1

# ---- objects: the engine compiled once with the sanitizers and libFuzzer's coverage hooks,
# linked into the fuzzers and into the test programs and CLI (the hooks cost little there) ----
build/san/obj/%.o: src/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(SAN_CC) $(SAN_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

SAN_ENGINE_OBJ := $(addprefix build/san/obj/,$(addsuffix .o,$(ENGINE_NAMES)))
# made by a pattern rule, used by several links: keep them
.SECONDARY: $(SAN_ENGINE_OBJ)

# ---- fuzzers ----
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(SAN_ENGINE_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(SAN_CFLAGS) -fsanitize=fuzzer -o $@ $< $(SAN_ENGINE_OBJ) -lm

fuzz-build: $(addprefix build/fuzz/,$(FUZZ_TARGETS))

# Seed corpora, derived from ../shared at run time (tests/fuzz/seeds.mjs): shrunken copies of
# every model (one layer, 32 tokens, tiny dimensions, every tensor type), of the vocabularies,
# and the tokenizer test strings.
build/fuzz/corpus/.stamp: tests/fuzz/seeds.mjs tests/gguf.mjs
	rm -rf build/fuzz/corpus
	node tests/fuzz/seeds.mjs $(WICK_SHARED) build/fuzz/corpus
	@touch $@
fuzz-corpus: build/fuzz/corpus/.stamp

# Every saved finding is replayed first (a target given files runs each once and stops).
fuzz-regressions: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  dir=tests/fuzz/regressions/$$t; \
	  if [ -d $$dir ] && [ -n "$$(ls -A $$dir)" ]; then \
	    echo "fuzz: replaying $$dir ($$(ls $$dir | wc -l) inputs)"; \
	    $(FUZZ_ENV) build/fuzz/$$t $(FUZZ_LIMITS) $$dir/* > build/fuzz/$$t-regressions.log 2>&1 \
	      || { tail -n 60 build/fuzz/$$t-regressions.log; echo "fuzz: a saved regression of $$t fails again"; exit 1; }; \
	  fi; \
	done

# Each target fuzzes from a scratch copy of its corpus (new inputs stay in build/), at low
# priority; a finding is saved to build/fuzz/findings/<target>/ and fails the run. One target at a
# time, or as many as make's jobs (`make -j2 fuzz`: CI runs two at once on its 2 cores, each for
# the whole FUZZ_SECONDS, in half the time).
FUZZ_RUNS := $(addprefix fuzz-run-,$(FUZZ_TARGETS))
.PHONY: $(FUZZ_RUNS)
fuzz: $(FUZZ_RUNS)
$(FUZZ_RUNS): fuzz-run-%: fuzz-regressions fuzz-corpus
	@t=$*; mkdir -p build/fuzz/work/$$t build/fuzz/findings/$$t; \
	  cp -n build/fuzz/corpus/$$t/* build/fuzz/work/$$t/ 2>/dev/null || true; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_ENV) $(NICE) build/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_LIMITS) -print_final_stats=1 \
	      -artifact_prefix=build/fuzz/findings/$$t/ build/fuzz/work/$$t > build/fuzz/$$t.log 2>&1 \
	    || { tail -n 60 build/fuzz/$$t.log; echo "fuzz: $$t found a problem: see build/fuzz/findings/$$t/"; exit 1; }; \
	  echo "fuzz: $$t: $$(grep -E '^#[0-9]+.*DONE' build/fuzz/$$t.log | tail -n 1)"

# ---- the test programs and the CLI under ASan + UBSan ----
build/asan/test_%: tests/test_%.c $(SAN_ENGINE_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(SAN_CFLAGS) -o $@ $< $(SAN_ENGINE_OBJ) -lm

build/asan/wick: src/cli.c $(SAN_ENGINE_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(SAN_CFLAGS) -o $@ $< $(SAN_ENGINE_OBJ) -lm

ASAN_RUN = ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN) $(NICE)
M := $(WICK_SHARED)/models

# The arguments are those of tests/programs.test.mjs and tests/hostile.test.mjs; every program
# exits non-zero on a failed check, and a sanitizer report exits non-zero too.
# the families' files the engine runs (the hybrids lfm2 and qwen35 need a recurrent state: issue 15)
FAMILY_FILES = $(wildcard $(M)/families/*.gguf)

test-asan: $(addprefix build/asan/,$(TEST_PROGRAMS)) build/asan/wick
	@set -e; run() { echo "asan: $$*"; $(ASAN_RUN) "$$@" > build/asan/last.log 2>&1 || { tail -n 40 build/asan/last.log; exit 1; }; tail -n 1 build/asan/last.log | cut -c1-200; }; \
	run build/asan/test_kernels; \
	run build/asan/test_sampler; \
	run build/asan/test_attention; \
	run build/asan/test_dequant $(M)/mini; \
	run build/asan/test_tokenizer $(WICK_SHARED)/vocab $(M) $(WICK_SHARED)/reference; \
	run build/asan/test_context $(M)/stories260K.gguf $(M)/families/mini-gemma3-f16.gguf; \
	run build/asan/test_state $(M)/families/mini-qwen35-q8_0.gguf $(M)/families/mini-lfm2-f16.gguf; \
	run build/asan/test_session $(M)/families/mini-llama3-f16.gguf $(M)/families/mini-gemma3-f16.gguf $(M)/families/mini-lfm2-f16.gguf $(M)/families/mini-qwen35-q8_0.gguf; \
	run build/asan/test_load --mutate $(M)/mini/mini-q4_0.gguf 400 7; \
	run build/asan/test_load --mutate $(M)/mini/mini-qwen2-q8_0.gguf 400 7; \
	run build/asan/test_load --mutate $(M)/mini/mini-q4_k_m.gguf 200 11; \
	run build/asan/test_load --mutate $(M)/stories260K.gguf 200 13; \
	run build/asan/test_load --mutate $(M)/families/mini-gemma3-q4_k_m.gguf 200 17; \
	run build/asan/test_load --mutate $(M)/families/mini-phi3-q8_0.gguf 200 19; \
	run build/asan/test_load --mutate $(M)/families/mini-lfm2-q8_0.gguf 200 23; \
	run build/asan/test_load --mutate $(M)/families/mini-qwen35-q8_0.gguf 200 29; \
	run build/asan/test_load $(M)/mini/*.gguf $(FAMILY_FILES) $(M)/stories260K.gguf $(M)/stories260K.bin:$(M)/tok512.bin $(WICK_SHARED)/vocab/*.gguf; \
	if grep -q ERR build/asan/last.log; then grep ERR build/asan/last.log; exit 1; fi; \
	run build/asan/wick generate -m $(M)/stories260K.gguf -p "Once upon a time" -n 64 --temp 0; \
	run build/asan/wick generate -m $(M)/stories260K.bin -z $(M)/tok512.bin -p "Once upon a time" -n 600 --ctx 128 --threads 2 --seed 3; \
	run build/asan/wick generate -m $(M)/mini/mini-qwen2-q4_k_m.gguf -p "Hello" -n 16 --threads 2 --kv f32 --probs 3 --stop "the"; \
	run build/asan/wick logits -m $(M)/mini/mini-q8_0.gguf --tokens 1,403,407 --steps 2; \
	run build/asan/wick generate -m $(M)/families/mini-gemma2-q8_0.gguf -p "Hello" -n 200 --ctx 64 --threads 2 --temp 0 --ignore-eos; \
	run build/asan/wick generate -m $(M)/families/mini-qwen35-q8_0.gguf -p "Hello" -n 200 --ctx 64 --threads 2 --temp 0 --ignore-eos; \
	run build/asan/wick generate -m $(M)/families/mini-lfm2-q8_0.gguf -p "Hello" -n 200 --ctx 64 --threads 2 --temp 0 --ignore-eos; \
	run build/asan/wick tokenize -m $(WICK_SHARED)/vocab/ggml-vocab-gpt-2.gguf -p "Hello world, <|endoftext|> ünïcödé"; \
	run build/asan/wick info -m $(M)/mini/mini-chat-q8_0.gguf; \
	run build/asan/wick synth --shape mini-mha --type q4_k_m -o build/asan/synth-mini-mha.gguf --vocab $(WICK_SHARED)/vocab/ggml-vocab-llama-spm.gguf; \
	run build/asan/wick logits -m build/asan/synth-mini-mha.gguf --tokens 1,450,4996,17354,1701,29916,432,17204,975 --steps 3 --threads 2; \
	run build/asan/wick synth --arch qwen35 --shape mini --type q4_k_m -o build/asan/synth-qwen35.gguf --vocab $(WICK_SHARED)/vocab/ggml-vocab-llama-spm.gguf; \
	run build/asan/wick logits -m build/asan/synth-qwen35.gguf --tokens 1,450,4996,17354,1701,29916,432,17204,975 --steps 3 --threads 2; \
	run build/asan/wick synth --mmproj idefics3 --type q8_0 -o build/asan/mmproj-idefics3.gguf; \
	printf 'P6\n50 37\n255\n' > build/asan/image.ppm; head -c 5550 build/asan/mmproj-idefics3.gguf >> build/asan/image.ppm; \
	run build/asan/wick vision -m build/asan/mmproj-idefics3.gguf --image build/asan/image.ppm --threads 2 -o build/asan/vision.f32; \
	run build/asan/wick synth --mmproj idefics3 --type f16 -o build/asan/mmproj-idefics3-f16.gguf; \
	run build/asan/test_vision --mutate build/asan/mmproj-idefics3.gguf 600 31 2; \
	run build/asan/test_vision --mutate build/asan/mmproj-idefics3-f16.gguf 600 37 2; \
	run build/asan/wick synth --mmproj gemma3 --type f16 -o build/asan/mmproj-gemma3.gguf; \
	run build/asan/wick vision -m build/asan/mmproj-gemma3.gguf --image build/asan/image.ppm --threads 2 -o build/asan/vision-gemma3.f32; \
	run build/asan/wick synth --mmproj lfm2 --type q8_0 -o build/asan/mmproj-lfm2.gguf; \
	run build/asan/wick vision -m build/asan/mmproj-lfm2.gguf --image build/asan/image.ppm --threads 2 -o build/asan/vision-lfm2.f32; \
	printf 'P6\n760 730\n255\n' > build/asan/image-tiled.ppm; head -c 1664400 /dev/zero | tr '\0' '\141' >> build/asan/image-tiled.ppm; \
	run build/asan/wick vision -m build/asan/mmproj-lfm2.gguf --image build/asan/image-tiled.ppm --threads 2 -o build/asan/vision-lfm2-tiled.f32; \
	run build/asan/test_vision --mutate build/asan/mmproj-lfm2.gguf 200 41 2; \
	run build/asan/wick synth --shape vl --arch lfm2 --type q8_0 -o build/asan/text-vl-lfm2.gguf --vocab $(WICK_SHARED)/vocab/ggml-vocab-gpt-2.gguf; \
	run build/asan/wick logits -m build/asan/text-vl-lfm2.gguf --mmproj build/asan/mmproj-lfm2.gguf --image build/asan/image.ppm -p "User: <__media__> What is it?" --threads 2; \
	run build/asan/wick synth --mmproj gemma4v --type q8_0 -o build/asan/mmproj-gemma4v.gguf; \
	run build/asan/wick vision -m build/asan/mmproj-gemma4v.gguf --image build/asan/image.ppm --threads 2 -o build/asan/vision-gemma4v.f32; \
	run build/asan/wick synth --mmproj qwen3vl --type q8_0 -o build/asan/mmproj-qwen3vl.gguf; \
	run build/asan/wick synth --shape vl --arch qwen3vl --type q8_0 -o build/asan/text-vl-qwen3vl.gguf --vocab $(WICK_SHARED)/vocab/ggml-vocab-gpt-2.gguf; \
	run build/asan/wick logits -m build/asan/text-vl-qwen3vl.gguf --mmproj build/asan/mmproj-qwen3vl.gguf --image build/asan/image.ppm -p "User: <__media__> What is it?" --threads 2; \
	run build/asan/wick generate -m build/asan/text-vl-qwen3vl.gguf --mmproj build/asan/mmproj-qwen3vl.gguf --image build/asan/image.ppm -p "User: <__media__> What is it?" \
	  -n 120 --ctx 48 --threads 2 --temp 0 --ignore-eos; \
	echo "asan: all passed"
	@# and the node suites' native tests, pointed at this build
	WICK_NATIVE_DIR=build/asan ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN) \
	  $(NICE) node --test --test-concurrency=1 --test-name-pattern='^native: ' \
	    tests/programs.test.mjs tests/hostile.test.mjs tests/vision-hostile.test.mjs tests/engine.test.mjs tests/generation.test.mjs

# ---- valgrind: the plain native build, load → generate → free, no leak and no error ----
VALGRIND := $(NICE) valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
  --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1
test-valgrind: build/native/wick build/native/test_load build/native/test_context
	@set -e; run() { echo "valgrind: $$*"; $(VALGRIND) "$$@" > build/native/valgrind.log 2>&1 || { tail -n 60 build/native/valgrind.log; exit 1; }; }; \
	run build/native/wick generate -m $(M)/stories260K.gguf -p "Once upon a time" -n 48 --temp 0; \
	run build/native/wick generate -m $(M)/stories260K.bin -z $(M)/tok512.bin -p "Once upon a time" -n 200 --ctx 64 --threads 2; \
	run build/native/wick generate -m $(M)/mini/mini-qwen2-q4_k_m.gguf -p "Hello" -n 8 --stop "a" --probs 2; \
	run build/native/test_load $(M)/mini/mini-q4_0.gguf $(M)/mini/mini-q4_k_m.gguf $(M)/stories260K.bin:$(M)/tok512.bin $(WICK_SHARED)/vocab/ggml-vocab-gpt-2.gguf; \
	run build/native/test_load --mutate $(M)/mini/mini-q8_0.gguf 40 5; \
	run build/native/test_context $(M)/stories260K.gguf; \
	echo "valgrind: no error, no leak"

# ---- line coverage of the fuzz corpora (for FUZZING.md; not part of CI) ----
#   make fuzz-coverage [FUZZ_CORPUS=build/fuzz/work]   → a per-file table of what the corpora reach
FUZZ_CORPUS ?= build/fuzz/work
COV_FLAGS := $(CFLAGS_COMMON) -O1 -g -pthread $(NATIVE_ARCH) -fprofile-instr-generate -fcoverage-mapping
build/fuzz-cov/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(ENGINE_SRC) $(HEADERS)
	@mkdir -p $(@D)
	$(SAN_CC) $(COV_FLAGS) -fsanitize=fuzzer -o $@ $< $(ENGINE_SRC) -lm

.PHONY: fuzz-coverage
fuzz-coverage: $(addprefix build/fuzz-cov/,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_ENV) LLVM_PROFILE_FILE=build/fuzz-cov/$$t.profraw $(NICE) build/fuzz-cov/$$t -runs=0 $(FUZZ_LIMITS) $(FUZZ_CORPUS)/$$t > build/fuzz-cov/$$t.log 2>&1; \
	  llvm-profdata merge -sparse build/fuzz-cov/$$t.profraw -o build/fuzz-cov/$$t.profdata; \
	  echo "== $$t: $(FUZZ_CORPUS)/$$t ($$(ls $(FUZZ_CORPUS)/$$t | wc -l) inputs)"; \
	  llvm-cov report build/fuzz-cov/$$t -instr-profile=build/fuzz-cov/$$t.profdata $(ENGINE_SRC) | sed 's|^/.*/src/|src/|'; \
	done
