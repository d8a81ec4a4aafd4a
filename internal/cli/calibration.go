package cli

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/traffic"
)

// CalibrationFlag is --calibration FILE, for the commands that judge delays against what
// napctl calibrate --save measured: lint and status.
func CalibrationFlag(fl *pflag.FlagSet, path *string) {
	fl.StringVar(path, "calibration", "", "a calibration napctl calibrate --save wrote: hold each workload's preStop delay to the tail of the slowest path that reaches its pods ("+lint.DelayBelowPath+")")
}

// ReadCalibration reads the stored calibration at path ("" none: nil).
func ReadCalibration(path string) (*traffic.Calibration, error) {
	if path == "" {
		return nil, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return traffic.ReadCalibration(fh, path)
}
