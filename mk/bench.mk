# Benchmarks: `make bench` runs every measurement against its anchor and
# rewrites docs/benchmarks.md (bench/cmd/benchreport). The memory measurement
# needs GNU time, installed here once; the cold-start and batch runs need the
# RIE (make tools); the store cost needs moto, as make test does; the long
# call runs the call state machine in aws-local-stepfunctions (make e2e-deps).

BENCH_TARGETS += bench-report

.PHONY: bench-report bench-deps

bench-deps: $(GOBIN)/aws-lambda-rie
	@test -x /usr/bin/time || { \
	  echo "bench-deps: installing GNU time (/usr/bin/time)"; \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q time || { $$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q time; }; }
	@test -x /usr/bin/time || { echo "bench-deps: /usr/bin/time is still missing"; exit 1; }
	@python3 -c 'import moto.server' 2>/dev/null || { echo "bench-deps: moto is required (pip install 'moto[server]==5.2.1')"; exit 1; }

bench-report: bench-deps e2e-deps
	$(GO) run ./bench/cmd/benchreport -o docs/benchmarks.md
