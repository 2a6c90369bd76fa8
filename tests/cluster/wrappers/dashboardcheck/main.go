// Command dashboard-check decodes Grafana dashboards (Classic JSON)
// strictly into the Grafana Foundation SDK's published dashboard types --
// unknown fields, wrong types and unknown panel options are errors -- so
// the tests check the chart's dashboard against Grafana's schema without a
// Grafana. Test tooling built by tests/cluster/build; never part of
// Pilotlight.
package main

import (
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dashboard-check DASHBOARD.json...")
		os.Exit(2)
	}
	// Panel options and queries decode into their plugins' types.
	plugins.RegisterDefaultPlugins()
	for _, path := range os.Args[1:] {
		raw, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var d dashboard.Dashboard
		err = d.UnmarshalJSONStrict(raw)
		// UnmarshalJSONStrict returns its error list typed even when it is
		// empty: no error.
		if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 {
			err = nil
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d panels decode strictly as dashboard.Dashboard\n",
			path, len(d.Panels))
	}
}
