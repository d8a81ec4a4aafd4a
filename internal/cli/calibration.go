package cli

import (
	"context"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/spf13/pflag"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/traffic"
)

// CalibrationFlag is --calibration FILE, for the commands that judge delays against what
// napctl calibrate --save measured: lint and status. Reading a cluster, they take the
// calibration kept in it (napctl calibrate --store) when no file is named.
func CalibrationFlag(fl *pflag.FlagSet, path *string) {
	fl.StringVar(path, "calibration", "", "a calibration napctl calibrate --save wrote: hold each workload's preStop delay to the tail of the slowest path that reaches its pods ("+lint.DelayBelowPath+"); default, reading a cluster: the one napctl calibrate --store kept in it")
}

// KeptCalibration is the calibration kept in the cluster of cfg (napctl calibrate
// --store: the ConfigMap kube.CalibrationConfigMap in nap's namespace); nil when there
// is none, or it may not be read.
func KeptCalibration(ctx context.Context, cfg *rest.Config) (*traffic.Calibration, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(ctx, kube.CalibrationConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return controller.ReadCalibrationConfigMap(cm)
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
