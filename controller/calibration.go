package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
)

// CalibrationSource holds the calibration kept in the cluster: the ConfigMap
// kube.CalibrationConfigMap in the controller's namespace, which napctl calibrate
// --store writes, as its own informer sees it (one object; the manager's cache holds
// only the nap ConfigMaps). The webhook reads it at every admission (Load): never an
// API call. A ConfigMap that is not a calibration is no calibration: the fleet's waits
// hold, and a Warning event on it and the log say why.
type CalibrationSource struct {
	Client    kubernetes.Interface
	Namespace string
	Recorder  record.EventRecorder // may be nil
	Log       logr.Logger
	// OnChange, when set, is called after each change of what Load returns (the
	// Reporter judges every namespace again).
	OnChange func()

	cur      atomic.Pointer[traffic.Calibration]
	informer toolscache.SharedIndexInformer
}

// Load is the calibration as last read; nil while there is none (or none valid).
func (s *CalibrationSource) Load() *traffic.Calibration { return s.cur.Load() }

// NeedLeaderElection: every replica's webhook reads it.
func (s *CalibrationSource) NeedLeaderElection() bool { return false }

// Informer makes the informer (once), so that the manager can ask whether it has
// synced before Start: a replica is ready only then.
func (s *CalibrationSource) Informer() toolscache.SharedIndexInformer {
	if s.informer != nil {
		return s.informer
	}
	s.informer = configMapInformer(s.Client, s.Namespace, kube.CalibrationConfigMap, s.set, func() { s.store(nil) })
	return s.informer
}

// Start runs the informer until ctx ends.
func (s *CalibrationSource) Start(ctx context.Context) error {
	s.Informer().RunWithContext(ctx)
	return nil
}

// set reads a ConfigMap the informer hands on.
func (s *CalibrationSource) set(cm *corev1.ConfigMap) {
	c, err := ReadCalibrationConfigMap(cm)
	if err != nil {
		s.Log.Error(err, "no calibration: every pod gets the fleet's wait")
		if s.Recorder != nil {
			s.Recorder.Event(cm, corev1.EventTypeWarning, "NapCalibrationInvalid", err.Error()+"; every pod gets the fleet's wait")
		}
	} else {
		var paths []string
		for _, p := range c.Paths {
			if p.Samples > 0 {
				paths = append(paths, fmt.Sprintf("%s %gs", p.Name, p.DelayS))
			}
		}
		s.Log.Info("calibration", "measured", c.Measured.Format(time.RFC3339), "paths", strings.Join(paths, ", "))
	}
	s.store(c)
}

func (s *CalibrationSource) store(c *traffic.Calibration) {
	s.cur.Store(c)
	calibratedDelay.Reset()
	if c != nil {
		for _, p := range c.Paths {
			if p.Samples > 0 {
				calibratedDelay.WithLabelValues(p.Name).Set(p.DelayS)
			}
		}
	}
	if s.OnChange != nil {
		s.OnChange()
	}
}

// ReadCalibrationConfigMap reads the calibration a ConfigMap keeps (napctl calibrate
// --store): traffic.ReadCalibration of its kube.CalibrationKey.
func ReadCalibrationConfigMap(cm *corev1.ConfigMap) (*traffic.Calibration, error) {
	name := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	doc, ok := cm.Data[kube.CalibrationKey]
	if !ok {
		return nil, fmt.Errorf("%s: no key %s (napctl calibrate --store writes it)", name, kube.CalibrationKey)
	}
	return traffic.ReadCalibration(strings.NewReader(doc), name+" key "+kube.CalibrationKey)
}

// CalibrationConfigMap is the ConfigMap that keeps c in namespace ns.
func CalibrationConfigMap(ns string, doc []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: kube.CalibrationConfigMap, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/managed-by": "napctl"}},
		Data:       map[string]string{kube.CalibrationKey: string(doc)},
	}
}

// StoreCalibration keeps c in the cluster: the ConfigMap kube.CalibrationConfigMap in
// namespace ns (the controller's), created or replaced.
func StoreCalibration(ctx context.Context, cs kubernetes.Interface, ns string, c *traffic.Calibration) error {
	doc, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	want := CalibrationConfigMap(ns, append(doc, '\n'))
	if err := keepConfigMap(ctx, cs, want); err != nil {
		return fmt.Errorf("keeping the calibration in ConfigMap %s/%s: %w", ns, want.Name, err)
	}
	return nil
}

// keepConfigMap creates want, or replaces the data of the ConfigMap of its name and
// adds its labels.
func keepConfigMap(ctx context.Context, cs kubernetes.Interface, want *corev1.ConfigMap) error {
	cms := cs.CoreV1().ConfigMaps(want.Namespace)
	have, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		have.Data, have.BinaryData = want.Data, nil
		if have.Labels == nil {
			have.Labels = map[string]string{}
		}
		maps.Copy(have.Labels, want.Labels)
		_, err = cms.Update(ctx, have, metav1.UpdateOptions{})
	}
	return err
}
