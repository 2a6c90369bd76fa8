//go:build tools

// Package tools pins the Prometheus binary the local test cluster builds
// (tests/cluster/build): Debian's prometheus 2.42.0+ds is built without
// kubernetes_sd_configs, which the cluster's scrape config needs; and
// promtool of the same release, which checks and unit-tests the chart's
// alerting rules. Neither is ever compiled into Pilotlight.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
