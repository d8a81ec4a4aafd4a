package lint

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// Config is the optional configuration file of `napctl lint --config`, or the same
// built in code:
//
//	disable: [no-pdb]                # checks not to run
//	severity: {single-replica: error} # severities to change, up or down
//	shellless: ["registry.example/slim-"] # more image name prefixes with no shell
//	drainMargin: 10s                 # grace period beyond the preStop delay (default 5s)
type Config struct {
	Disable     []string            `json:"disable,omitempty"`
	Severity    map[string]Severity `json:"severity,omitempty"`
	Shellless   []string            `json:"shellless,omitempty"`
	DrainMargin time.Duration       `json:"-"`
	RawMargin   string              `json:"drainMargin,omitempty"`
}

// LoadConfig reads and checks a configuration file.
func LoadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if c.RawMargin != "" {
		if c.DrainMargin, err = time.ParseDuration(c.RawMargin); err != nil || c.DrainMargin < 0 {
			return Config{}, fmt.Errorf("%s: drainMargin %q: want a duration such as 5s", path, c.RawMargin)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Validate checks that every check c names exists and every severity is one.
func (c Config) Validate() error {
	known := map[string]bool{}
	for _, chk := range Checks() {
		known[chk.ID] = true
	}
	for _, id := range c.Disable {
		if !known[id] {
			return fmt.Errorf("disable: unknown check %q", id)
		}
	}
	for id, sev := range c.Severity {
		if !known[id] {
			return fmt.Errorf("severity: unknown check %q", id)
		}
		if sev != Warning && sev != Error {
			return fmt.Errorf("severity: %s: %v is not a severity", id, int(sev))
		}
	}
	if c.DrainMargin < 0 {
		return fmt.Errorf("drainMargin %v: must not be negative", c.DrainMargin)
	}
	return nil
}

func (c Config) disabled(id string) bool {
	for _, d := range c.Disable {
		if d == id {
			return true
		}
	}
	return false
}

// severity is the severity of a finding of chk that asked for sev (0: the check's):
// a configured severity wins either way, up or down; otherwise a finding may raise its
// check's own.
func (c Config) severity(chk Check, sev Severity) Severity {
	if s, ok := c.Severity[chk.ID]; ok {
		return s
	}
	return max(sev, chk.Severity)
}
