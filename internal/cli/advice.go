package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/advice"
	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/store"
)

type adviseOptions struct {
	DB, Campaign            string
	MaxSlowdown             string
	Services                string
	ServicesFile            string
	ContainerCase, HostCase string
	Format                  string
}

// DefaultMaxSlowdown is the tolerance of advice unless told otherwise.
const DefaultMaxSlowdown = "10%"

func newAdviseCmd() *cobra.Command {
	o := adviseOptions{}
	c := &cobra.Command{
		Use:   "advise",
		Short: "From a co-location campaign: which kinds of workload may share a container or a host, and a packing of your services",
		Long: `advise reads a co-location campaign (S0's design: targets beside neighbours, in one container and in
separate containers) and says, for every pair of workload kinds it measured, whether they may share a
container, share a host in separate containers, or must be apart, at a tolerance judged at the worse end
of each 95% interval. With --services it packs those services into the fewest hosts, then containers,
that keep every predicted slowdown within the tolerance. See docs/interference.md.`,
		Example: `  ctrbench advise --campaign jha2018 --max-slowdown 10%
  ctrbench advise --services api=N,db=B,cache=S,worker=L
  ctrbench advise --services-file services.yaml --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAdvise(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVar(&o.DB, "db", DefaultDB, "results database (SQLite)")
	f.StringVar(&o.Campaign, "campaign", "", "campaign ID or unique prefix (default: the latest)")
	f.StringVar(&o.MaxSlowdown, "max-slowdown", DefaultMaxSlowdown, "the largest slowdown of a service's headline metric allowed: a percent (10%) or a fraction (0.1)")
	f.StringVar(&o.Services, "services", "", "services to pack, name=kind,… where a kind is a workload the campaign measured, e.g. api=N,db=B,cache=S,worker=L")
	f.StringVar(&o.ServicesFile, "services-file", "", "services to pack from a YAML file: a mapping of name: kind (or under a key services:)")
	f.StringVar(&o.ContainerCase, "container-case", "", "which same-container case backs sharing a container, when the campaign has several: part of its name, e.g. cpus=none")
	f.StringVar(&o.HostCase, "host-case", "", "which separate-containers case backs sharing a host, when the campaign has several (e.g. with and without limits): part of its name, e.g. cpus=1")
	f.StringVar(&o.Format, "format", "text", "text, json or markdown")
	return c
}

func runAdvise(ctx context.Context, o adviseOptions, w io.Writer) error {
	tol, err := parseSlowdown(o.MaxSlowdown)
	if err != nil {
		return usageError{err}
	}
	write, ok := map[string]func(io.Writer, advice.Advice) error{
		"text": advice.WriteText, "json": advice.WriteJSON, "markdown": advice.WriteMarkdown,
	}[o.Format]
	if !ok {
		return usageError{fmt.Errorf("--format %q: allowed: json, markdown, text", o.Format)}
	}
	if o.Services != "" && o.ServicesFile != "" {
		return usageError{errors.New("--services and --services-file: give one")}
	}
	var services []advice.Service
	switch {
	case o.Services != "":
		if services, err = parseServices(o.Services); err != nil {
			return usageError{err}
		}
	case o.ServicesFile != "":
		if services, err = readServices(o.ServicesFile); err != nil {
			return usageError{err}
		}
	}
	db, err := openResults(ctx, o.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.Campaign == "" {
		c, err := db.LatestCampaign(ctx)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no campaign in %s yet: run a co-location experiment (experiments/jha2018.yaml) first", o.DB)
		}
		if err != nil {
			return err
		}
		o.Campaign = c.ID
	}
	l, err := analysis.Load(ctx, db, analysis.Query{Campaign: o.Campaign})
	if err != nil {
		return err
	}
	a, err := advice.Advise(l.Campaign.ID, analysis.Rows(l.Series), advice.Options{MaxSlowdown: tol, Services: services, ContainerCase: o.ContainerCase, HostCase: o.HostCase})
	var bad *advice.InputError
	switch {
	case errors.As(err, &bad):
		return usageError{err}
	case err != nil:
		return fmt.Errorf("campaign %s: %w", l.Campaign.ID, err)
	}
	return write(w, a)
}

// parseSlowdown reads "10%" or "0.1" as 0.1.
func parseSlowdown(s string) (float64, error) {
	bad := fmt.Errorf("--max-slowdown %q: want a percent above 0 (10%%) or a fraction between 0 and 1 (0.1)", s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil {
		return 0, bad
	}
	if pct {
		v /= 100
	}
	if !(v > 0 && v < 1) {
		return 0, bad
	}
	return v, nil
}

// parseServices reads "api=N,db=B".
func parseServices(s string) ([]advice.Service, error) {
	var out []advice.Service
	for _, part := range strings.Split(s, ",") {
		name, kind, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || kind == "" {
			return nil, fmt.Errorf("--services: %q is not name=kind (e.g. api=N,db=B)", part)
		}
		out = append(out, advice.Service{Name: name, Kind: kind})
	}
	return out, nil
}

// readServices reads a YAML mapping of name: kind, at the top or under
// services:.
func readServices(path string) ([]advice.Service, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: want a mapping of service name: kind", path)
	}
	m := doc.Content[0]
	if m.Kind == yaml.MappingNode && len(m.Content) == 2 && m.Content[0].Value == "services" {
		m = m.Content[1]
	}
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of service name: kind (e.g. api: N)", path, m.Line)
	}
	var out []advice.Service
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			return nil, fmt.Errorf("%s:%d: service %s: want its kind, a workload of the campaign (e.g. %s: N)", path, v.Line, k.Value, k.Value)
		}
		out = append(out, advice.Service{Name: k.Value, Kind: v.Value})
	}
	return out, nil
}
