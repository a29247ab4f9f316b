# Two commands do all the set-up on a fresh machine:
#   make run   - install, then measure and report on config/config.yaml
#   make test  - install, then run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= all
CONFIG ?= config/config.yaml

# RESULTS=dir: a run of its own in dir (dir/results/, dir/logs/, dir/bin/),
# e.g. a before and an after for make compare; VERBOSE=1 also shows
# Snakemake's job blocks (membench's own lines and every error always show).
RESULTS ?=
RUN_DIR  = $(if $(RESULTS),$(RESULTS),.)
RUN_ARGS = $(if $(RESULTS),--directory $(call quote,$(RESULTS)) --configfile $(call quote,$(abspath $(CONFIG))),--configfile $(call quote,$(CONFIG))) $(BUDGET_ARGS)
# BUDGET=4m (or 90s, 240): the run's measuring time, over the config's budget: (issue 51)
BUDGET ?=
BUDGET_ARGS = $(if $(BUDGET),--config budget=$(call quote,$(BUDGET)))
TERMINAL = $(if $(VERBOSE),,2>&1 | $(BIN)/python -u workflow/scripts/terminal_lines.py)

.PHONY: config-exists bytecode run findings plan status test bench lint compare bundle reference system-deps test-deps bench-deps clean

# System packages come from Debian's apt; only what is missing is installed.
system-deps:
	@command -v gcc >/dev/null && echo 'int main(void){return 0;}' | gcc -fopenmp -x c - -o /dev/null 2>/dev/null \
	  || { apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev libgomp1; }
	@command -v dmidecode >/dev/null || [ -x /usr/sbin/dmidecode ] \
	  || { apt-get update -qq && apt-get install -y --no-install-recommends dmidecode; } 2>/dev/null \
	  || echo "dmidecode not installed: the probe will report the theoretical peak as unknown (state it in the config)"

# The report is checked in a real headless Chromium (Debian's package); the
# NUMA guest test (tests/test_numa_guest.py) boots QEMU with a busybox-static
# initramfs; the Arm build is cross-compiled and run under qemu-aarch64
# (tests/test_arm.py, docs/arm.md). Only what is missing is installed.
test-deps:
	@missing=; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v aarch64-linux-gnu-gcc >/dev/null || missing="$$missing gcc-aarch64-linux-gnu"; \
	dpkg-query -W -f='$${Status}' libc6-dev-arm64-cross 2>/dev/null | grep -q 'ok installed' || missing="$$missing libc6-dev-arm64-cross"; \
	command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null || missing="$$missing qemu-user"; \
	command -v qemu-system-x86_64 >/dev/null || missing="$$missing qemu-system-x86"; \
	dpkg-query -W -f='$${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing="$$missing busybox-static"; \
	for tool in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do \
	  command -v $${tool%%:*} >/dev/null || missing="$$missing $${tool#*:}"; done; \
	[ -z "$$missing" ] || { apt-get update && apt-get install -y --no-install-recommends $$missing; }

# likwid-bench, the bandwidth reference of `make bench` (Debian's package),
# installed when missing.
bench-deps:
	@command -v likwid-bench >/dev/null || { apt-get update && apt-get install -y --no-install-recommends likwid; }

# uv installs the pins (pip installs uv): the same packages as pip in 7 s
# instead of 40 here. Every installed module is compiled up front, on every
# CPU, their test folders left out: with PYTHONDONTWRITEBYTECODE set (as on
# this project's machines) Python would compile pandas and matplotlib again
# in every process.
$(STAMP): requirements.txt requirements-dev.txt requirements-install.txt requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-compile --disable-pip-version-check -r requirements-install.txt -c requirements.lock
	$(BIN)/uv pip install --quiet --no-compile --python $(BIN)/python -r requirements-dev.txt -c requirements.lock
	$(BIN)/python -m compileall -q -j 0 -x '/tests/' $(VENV)/lib > /dev/null
	@$(BIN)/python -c "import os, time; print(round(time.time() - os.stat('$(VENV)/pyvenv.cfg').st_mtime))" > $(VENV)/.install_seconds
	touch $@

# make run prints what it will measure and the estimate of its time first
# (study_estimate.py), and where the time went last (time_breakdown.py:
# the install, when this run made .venv, then Snakemake's phases).
INSTALL_TIME = $$([ -f $(VENV)/.install_seconds ] && echo --install-seconds $$(cat $(VENV)/.install_seconds) && rm -f $(VENV)/.install_seconds)

# Snakemake starts with SIGINT and SIGQUIT at their defaults, even where make
# was started in a shell's background (which ignores them, and a shell cannot
# undo that): Ctrl-C and kill -INT then stop it (README, "Stopping and resuming").
# The filter (terminal_lines.py) ignores Ctrl-C so that Snakemake's last
# words come through; pipefail keeps Snakemake's exit code.
run: SHELL := /bin/bash
run: .SHELLFLAGS := -o pipefail -c
run: config-exists system-deps $(STAMP) bytecode
	@$(BIN)/python workflow/scripts/study_estimate.py --configfile $(call quote,$(CONFIG)) --cores $(CORES) --directory $(call quote,$(RUN_DIR)) $(if $(BUDGET),--budget $(call quote,$(BUDGET)))
	@env --default-signal=INT,QUIT,TERM $(BIN)/snakemake --cores $(CORES) $(RUN_ARGS) $(TERMINAL); rc=$$?; \
	  $(BIN)/python workflow/scripts/time_breakdown.py --directory $(call quote,$(RUN_DIR)) $(INSTALL_TIME); exit $$rc
	@$(BIN)/python workflow/scripts/print_findings.py $(call quote,$(RUN_DIR)/results/summary/findings.json) --report $(call quote,$(abspath $(RUN_DIR)/results/report.html))

# membench's own modules compiled beside their sources (only what changed):
# with PYTHONDONTWRITEBYTECODE set, every job's Python compiled them again.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q workflow/scripts > /dev/null

# The findings summary of stored results again (README, "Findings"), then the report's path.
findings: $(STAMP)
	@$(BIN)/python workflow/scripts/print_findings.py $(call quote,$(RUN_DIR)/results/summary/findings.json) --report $(call quote,$(abspath $(RUN_DIR)/results/report.html))

# A config that is not there: one line, before anything is installed.
config-exists:
	@[ -f "$(CONFIG)" ] || { echo "make: CONFIG=$(CONFIG): no such file (the configs: $$(ls config/*.yaml | tr '\n' ' '))"; exit 2; }

# Progress of a run (also while it goes on): repetitions stored, time left.
status: $(STAMP)
	@$(BIN)/python workflow/scripts/study_status.py --configfile $(CONFIG) --directory $(call quote,$(RUN_DIR))
	@$(BIN)/python workflow/scripts/study_estimate.py --left --configfile $(CONFIG) --cores $(CORES) --directory $(call quote,$(RUN_DIR))

# What a run would measure, and why (new cells, a knob changed), before it runs.
plan: config-exists $(STAMP)
	@$(BIN)/python workflow/scripts/study_status.py --plan --configfile $(CONFIG) --directory $(call quote,$(RUN_DIR))

# A failed repetition (a killed harness) stays stored as failed; this moves
# each aside, kept (results/<system>/superseded/failed/), so that the next
# make run measures them again (docs/results-layout.md, "Measure again").
.PHONY: remeasure-failed
remeasure-failed: $(STAMP)
	@$(BIN)/python workflow/scripts/remeasure_failed.py --directory $(call quote,$(RUN_DIR))

# The suite in two parts: on TEST_WORKERS pytest-xdist workers (a test file
# is one unit of work, so its measured study is made once; the longest go
# first, tests/conftest.py LONGEST_FIRST), then the tests marked quiet
# alone, as they judge real threads quiet or not.
TEST_WORKERS ?= 2
test: system-deps test-deps $(STAMP) bytecode
	$(BIN)/pytest -q -rs -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not quiet" --durations=15 tests
	$(BIN)/pytest -q -rs -m quiet --durations=5 tests

# Speed and memory targets, each side by side in one sitting with its
# reference (not tests: timings on shared machines are noisy); every bench
# runs, then make fails if one was off target. likwid-bench (bandwidth;
# installed from apt when missing), the read:write mixes against the
# likwid-bench kernels of the same read:write streams, the oversize skip, figures-only at 64 CPUs and at
# the Colfax study's 27,000 repetitions, the idle latency against multichase
# (skips without ../shared/ref/multichase), the pipeline's own cost against
# a bare Snakefile, make compare on two 27,000-repetition studies, what
# checking every stored record costs collect, cache-to-cache latency
# against core-to-core-latency (cargo install; skips without cargo).
bench: system-deps bench-deps $(STAMP)
	@failed=; \
	for bench in compare_likwid.py "compare_likwid_mixes.py --strict" oversize_skip.py figures_only.py record_validation.py "compare_multichase.py --strict" "compare_c2c.py --strict" pipeline_overhead.py compare_speed.py; do \
	  echo "== bench/$$bench"; $(BIN)/python bench/$$bench || failed="$$failed $${bench%% *}"; done; \
	[ -z "$$failed" ] || { echo "off target or failed:$$failed"; exit 1; }

# Two result sets, matched cell by cell (README, "Comparing two result
# sets"): make compare BASE=runA NEW=runB [OUT=compare] [THRESHOLD=2]
# [IGNORE=pages] [KEEP_DISTURBED=1]; a side may be DIR:SYSTEM. Exit code 0: no cell worse,
# 1: a gate row worse, 2: bad input, 3: nothing decided (said in one line), also through make: a recipe's failure
# is always 2 to make, so the comparison runs while make reads this file
# and a 1 puts make in question mode (-q) with compare not up to date,
# which is make's own exit code 1.
OUT       ?= compare
THRESHOLD ?= 2
IGNORE    ?=
quote = '$(subst ','\'',$(1))'
# BASE, NEW, OUT, THRESHOLD and IGNORE are taken as written ($(value)):
# a `$` in them is never expanded by make (`BASE='r$(shell ...)'` runs
# nothing, a folder `d$x` stays `d$x`), and single quotes keep the shell off.
# make -n compare only says what it would run.
dry_run := $(findstring n,$(filter-out --%,$(firstword -$(MAKEFLAGS))))
ifeq ($(MAKECMDGOALS)$(dry_run),comparen)
$(info make compare (dry run): compare_results.py $(call quote,$(value BASE)) $(call quote,$(value NEW)) --out $(call quote,$(value OUT)))
else ifeq ($(MAKECMDGOALS),compare)
COMPARE_RC := $(shell \
  ( [ -n $(call quote,$(value BASE)) ] && [ -n $(call quote,$(value NEW)) ] \
    || { echo "usage: make compare BASE=<dir>[:system]|<bundle>|ref:<name> NEW=(as BASE) [OUT=compare] [THRESHOLD=2] [IGNORE=knob,...] [KEEP_DISTURBED=1]"; exit 2; }; \
    base=$(call quote,$(value BASE)); new=$(call quote,$(value NEW)); out=$(call quote,$(value OUT)); \
    [ -n "$$out" ] || { echo "make compare: OUT is empty; name the folder the comparison is written to (OUT=compare)"; exit 2; }; \
    [ -d "$$out" ] || [ ! -e "$$out" ] || { echo "make compare: OUT=$$out: not a folder; name a new folder or an earlier comparison's"; exit 2; }; \
    $(MAKE) --no-print-directory -s $(STAMP) || exit 2; \
    for side in base new; do eval "given=\$$$$side"; case "$$given" in (*.crate.zip) \
      rm -rf "$$out/$$side-bundle"; \
      $(BIN)/python workflow/scripts/run_bundle.py open "$$given" --dest "$$out/$$side-bundle" || exit 2; \
      eval "$$side=\$$out/$$side-bundle/results";; esac; done; \
    $(BIN)/python workflow/scripts/compare_results.py "$$base" "$$new" \
      --out $(call quote,$(value OUT)) --threshold $(call quote,$(value THRESHOLD)) --ignore $(call quote,$(value IGNORE)) $(if $(KEEP_DISTURBED),--keep-disturbed); \
  ) >&2; echo $$?)
ifeq ($(COMPARE_RC),1)
MAKEFLAGS += -q
else ifeq ($(COMPARE_RC),3)
$(error make compare: nothing decided: no gate row (findings.json's numbers) has 2 undisturbed runs a side (compare_results.py exit 3))
else ifneq ($(COMPARE_RC),0)
$(error make compare: exit code $(COMPARE_RC) (bad input, said above))
endif
endif
compare:
	@:

# The run as one checkable archive, a Workflow Run RO-Crate (docs/bundle.md):
# make bundle [BUNDLE=results/run.crate.zip] [CONFIG=...: else the config the
# runs were measured with, results/measured-with.yaml]. make compare takes a bundle on
# either side (BASE=run.crate.zip), checked and unpacked under OUT first.
# BUNDLE, CONFIG, RESULTS, NAME, ADDRESS and SYSTEM are taken as written
# (given): a `$` in them is never expanded by make, and single quotes keep
# the shell off, as for make compare. None of these is put in a recipe's
# environment either: make would expand a command line's `$(shell ...)`
# to put it there.
given = $(if $(filter command environment,$(firstword $(origin $(1)))),$(value $(1)),$($(1)))
BUNDLE ?= $(if $(call given,RESULTS),$(call given,RESULTS)/results/run.crate.zip,results/run.crate.zip)
# after BUNDLE ?=: unexport names the variable, which ?= then takes as set
unexport BUNDLE CONFIG RESULTS NAME ADDRESS SYSTEM BASE NEW OUT THRESHOLD IGNORE
bundle: $(STAMP)
	$(BIN)/python workflow/scripts/run_bundle.py write --results $(call quote,$(if $(call given,RESULTS),$(call given,RESULTS)/results,results)) $(if $(filter command environment,$(origin CONFIG)),--config $(call quote,$(call given,CONFIG))) --out $(call quote,$(call given,BUNDLE))

# A checked bundle as a published machine of the atlas (docs/bundle.md):
# make reference BUNDLE=run.crate.zip NAME=slug ADDRESS=https://... [SYSTEM=s]
# writes references/machines/NAME.yaml; refused (nothing written) for a
# damaged bundle or a NAME the atlas has.
reference: $(STAMP)
	@[ -n $(call quote,$(call given,NAME)) ] && [ -n $(call quote,$(call given,ADDRESS)) ] || { echo "usage: make reference BUNDLE=run.crate.zip NAME=slug ADDRESS=https://where-it-is-published [SYSTEM=name]"; exit 2; }
	$(BIN)/python workflow/scripts/run_bundle.py reference $(call quote,$(call given,BUNDLE)) --name $(call quote,$(call given,NAME)) --address $(call quote,$(call given,ADDRESS)) $(if $(call given,SYSTEM),--system $(call quote,$(call given,SYSTEM)))

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow

clean:
	rm -rf .snakemake bin results logs
