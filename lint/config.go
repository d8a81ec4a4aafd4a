package lint

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// Config is the optional configuration file of `napctl lint --config`:
//
//	disable: [no-pdb]                # checks not to run
//	severity: {single-replica: error} # severities to change
//	shellless: ["registry.example/slim-"] # more image name prefixes with no shell
//	drainMargin: 10s                 # grace period beyond the preStop delay (default 5s)
type Config struct {
	Disable     []string            `json:"disable,omitempty"`
	Severity    map[string]string   `json:"severity,omitempty"`
	Shellless   []string            `json:"shellless,omitempty"`
	DrainMargin time.Duration       `json:"-"`
	RawMargin   string              `json:"drainMargin,omitempty"`
	severities  map[string]Severity `json:"-"`
}

// LoadConfig reads and checks a configuration file.
func LoadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	known := map[string]bool{}
	for _, chk := range registry {
		known[chk.ID] = true
	}
	for _, id := range c.Disable {
		if !known[id] {
			return c, fmt.Errorf("%s: disable: unknown check %q", path, id)
		}
	}
	c.severities = map[string]Severity{}
	for id, s := range c.Severity {
		if !known[id] {
			return c, fmt.Errorf("%s: severity: unknown check %q", path, id)
		}
		sev, err := ParseSeverity(s)
		if err != nil {
			return c, fmt.Errorf("%s: severity: %s: %w", path, id, err)
		}
		c.severities[id] = sev
	}
	if c.RawMargin != "" {
		if c.DrainMargin, err = time.ParseDuration(c.RawMargin); err != nil || c.DrainMargin < 0 {
			return c, fmt.Errorf("%s: drainMargin %q: want a duration such as 5s", path, c.RawMargin)
		}
	}
	return c, nil
}

func (c Config) disabled(id string) bool {
	for _, d := range c.Disable {
		if d == id {
			return true
		}
	}
	return false
}

func (c Config) severity(chk Check) Severity {
	if s, ok := c.severities[chk.ID]; ok {
		return s
	}
	return chk.Severity
}
