package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Measurement is one probing session as napctl probe runs it: the prober's Options,
// for Options.Duration or while a command runs, with what else happened meanwhile.
type Measurement struct {
	Options
	// During, when set, is a shell command (a rollout): probing ends Settle after it
	// exits, and Options.Duration is not used. Its output goes to CommandOutput.
	During        string
	Settle        time.Duration
	CommandOutput io.Writer
	// Bucket is the timeline's bucket (0: automatic, see NewReport).
	Bucket time.Duration
	// Progress, when set, is told the totals so far every second (a live line).
	Progress func(elapsed time.Duration, total Counts)
	// Events, when set, is asked at the end for what happened meanwhile (observe's
	// watcher); Watch names what it watched, for the report.
	Events func(start time.Time) []Event
	Watch  string
}

// DefaultRate, DefaultDuration, DefaultSettle and DefaultTimeout are napctl probe's.
const (
	DefaultRate     = 100.0
	DefaultDuration = 60 * time.Second
	DefaultSettle   = 5 * time.Second
	DefaultTimeout  = 2 * time.Second
)

// Measure runs m until it is done or ctx ends (what was measured until then is
// reported), and returns the summary. An error that stops it (options, a command that
// cannot start, the prober's) comes with no summary; a command that failed while it ran
// comes beside the summary as a *CommandError.
func Measure(ctx context.Context, m Measurement) (Summary, error) {
	opts := m.Options
	if err := opts.Validate(); err != nil {
		return Summary{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var cmdResult *CommandResult
	var cmdErr error
	var wg sync.WaitGroup
	if m.During != "" {
		c := exec.CommandContext(ctx, "/bin/sh", "-c", m.During)
		c.Stdout, c.Stderr = m.CommandOutput, m.CommandOutput
		began := time.Now()
		if err := c.Start(); err != nil {
			return Summary{}, fmt.Errorf("--during: %w", err)
		}
		opts.Duration = 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				code, cmdErr = -1, &CommandError{Err: err}
			}
			cmdResult = &CommandResult{Command: m.During, ExitCode: code, Seconds: time.Since(began).Seconds()}
			select {
			case <-ctx.Done():
			case <-time.After(m.Settle):
			}
			cancel()
		}()
	}

	start := time.Now()
	rep := NewReport(start, m.Bucket)
	var mu sync.Mutex
	if m.Progress != nil {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					mu.Lock()
					tot := rep.Total()
					mu.Unlock()
					m.Progress(time.Since(start), tot)
				}
			}
		}()
	}
	var streams *StreamReport
	var err error
	if opts.Streams > 0 {
		streams, err = RunStreams(ctx, opts)
	} else {
		err = Run(ctx, opts, func(r Result) {
			mu.Lock()
			rep.Add(r)
			mu.Unlock()
		})
	}
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if err != nil {
		return Summary{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	s := rep.Summarize(opts, elapsed, cmdResult)
	s.Streams = streams
	if m.Events != nil {
		s.Watch, s.Events = m.Watch, m.Events(start)
	}
	return s, cmdErr
}

// CommandError is a Measurement's command that failed while it ran (not its exit code,
// which the summary holds).
type CommandError struct{ Err error }

func (e *CommandError) Error() string { return "--during: " + e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }
