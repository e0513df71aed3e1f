#!/usr/bin/env bash
# The shipped Prometheus rules (docs/prometheus): valid (promtool check rules),
# behaving as their unit tests say (promtool test rules), and reading only
# metrics the library exposes (every grpc_resilience_* name they use is in a
# table of docs/metrics.md, which tests/metrics/metric_catalog_test.cc holds
# to the code).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
promtool=${1:-promtool}
dir=docs/prometheus
"$promtool" check rules "$dir/recording_rules.yml" "$dir/alerting_rules.yml"
(cd "$dir" && "$promtool" test rules rules_test.yml)
missing=0
# Recorded series have a colon in their name; the metrics read have none.
for name in $(grep -ohE '(^|[^:a-z_])grpc_resilience_[a-z_]+' "$dir"/recording_rules.yml "$dir"/alerting_rules.yml \
                | grep -oE 'grpc_resilience_[a-z_]+' | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
  if ! grep -q "| \`$name\` |" docs/metrics.md; then
    echo "$dir: $name is not a metric of docs/metrics.md" >&2
    missing=1
  fi
done
exit $missing
