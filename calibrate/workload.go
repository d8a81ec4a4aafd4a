package calibrate

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/serve"
)

func prepareNamespace(ctx context.Context, cs kubernetes.Interface, opts Options) (created bool, err error) {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, opts.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace,
			Labels: map[string]string{ManagedLabel: managedBy}}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("namespace %s: %w", opts.Namespace, err)
	case ns.Labels[ManagedLabel] == managedBy:
		return true, nil // left by an interrupted run of ours
	case !opts.UseExisting:
		return false, fmt.Errorf("namespace %s exists and calibrate did not create it: name another (-n), or allow it (--use-existing-namespace; then only calibrate's own objects are deleted)", opts.Namespace)
	}
	return false, nil
}

// cleanup deletes what Run made, on its own context: ctx may be what ended. Pods first,
// at once: their preStop holds would keep the namespace terminating for a minute.
func cleanup(cs kubernetes.Interface, opts Options, createdNamespace bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	now := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	bg := metav1.DeletePropagationBackground
	cs.AppsV1().Deployments(opts.Namespace).Delete(ctx, Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	cs.CoreV1().Pods(opts.Namespace).DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: "app=" + Name})
	cs.CoreV1().Services(opts.Namespace).Delete(ctx, Name, metav1.DeleteOptions{})
	for _, p := range Enabled(opts.Paths) {
		if err := Close(ctx, cs, p, target(opts)); err != nil {
			opts.Log("removing the %s path: %v", p.Name, err)
		}
	}
	if createdNamespace {
		cs.CoreV1().Namespaces().Delete(ctx, opts.Namespace, metav1.DeleteOptions{})
	}
	opts.Log("cleaned up %s", opts.Namespace)
}

// deploy creates the workload, its Service (ClusterIP and NodePort) and the Ingress,
// waits until every replica is ready, and returns the paths to probe.
func deploy(ctx context.Context, cs kubernetes.Interface, opts Options) ([]Path, error) {
	ns := opts.Namespace
	labels := map[string]string{"app": Name}
	grace := int64((opts.Hold + 30*time.Second).Seconds())
	env := func(name, field string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: field}}}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: Name}, Spec: appsv1.DeploymentSpec{
		Replicas: &opts.Replicas,
		// What Deployments default to for a few replicas, written out: each round
		// replaces pods as a user's rollout would.
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
			Containers: []corev1.Container{{
				Name: "serve", Image: opts.Image, Args: []string{"serve", "--addr", ":8080"},
				Env:            []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
				// The hold keeps the pod serving while every route forgets it: what
				// reaches it meanwhile is the tail.
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: serve.PreStopPath + "?hold=" + opts.Hold.String(), Port: intstr.FromInt32(8080)}}},
			}},
		}},
	}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the calibration Deployment: %w", err)
	}
	enabled := Enabled(opts.Paths)
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: Name}, Spec: corev1.ServiceSpec{
		Type: serviceType(enabled), Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the calibration Service: %w", err)
	}
	var paths []Path
	for _, p := range enabled {
		url, err := Open(ctx, cs, p, opts.Paths, target(opts), svc)
		if err != nil {
			return nil, fmt.Errorf("the %s path: %w", p.Name, err)
		}
		paths = append(paths, Path{Name: p.Name, URL: url})
	}
	opts.Log("deployed %d replicas of napctl serve in %s; paths: %v", opts.Replicas, ns, paths)
	if err := waitReady(ctx, cs, opts); err != nil {
		return nil, err
	}
	return paths, nil
}

// target is the calibration workload as the traffic paths reach it.
func target(opts Options) Target {
	return Target{Namespace: opts.Namespace, Service: Name, Prefix: "/" + Name}
}

// ImagePullError is calibrate's pods failing to pull their image: said as soon as the
// kubelet says so, not at the readiness deadline.
type ImagePullError struct {
	Image, Reason, Message string
}

func (e *ImagePullError) Error() string {
	return fmt.Sprintf("the calibration pods cannot pull their image %s (%s: %s)", e.Image, e.Reason, e.Message)
}

// waitReady waits until the Deployment has every replica ready and no other pod; it
// ends early with an ImagePullError.
func waitReady(ctx context.Context, cs kubernetes.Interface, opts Options) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		d, err := cs.AppsV1().Deployments(opts.Namespace).Get(ctx, Name, metav1.GetOptions{})
		pods, perr := cs.CoreV1().Pods(opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + Name})
		if perr == nil {
			if image, reason, msg := kube.ImagePullFailure(pods.Items); reason != "" {
				return &ImagePullError{Image: image, Reason: reason, Message: msg}
			}
		}
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == opts.Replicas && d.Status.Replicas == opts.Replicas {
			if perr == nil && len(pods.Items) == int(opts.Replicas) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the calibration workload in %s has not got %d ready replicas after 3 minutes (image %s)", opts.Namespace, opts.Replicas, opts.Image)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podNames are the calibration pods there are now.
func podNames(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]bool, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + Name})
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, p := range pods.Items {
		names[p.Name] = true
	}
	return names, nil
}

// readyInSlices tells whether pod is a ready endpoint in any EndpointSlice of the
// Service. A terminating pod stays in them, serving but not ready, until it is gone:
// routes leave it when it is no longer ready.
func readyInSlices(ctx context.Context, cs kubernetes.Interface, ns, pod string) (bool, error) {
	l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + Name})
	if err != nil {
		return false, err
	}
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.TargetRef.Name == pod && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				return true, nil
			}
		}
	}
	return false, nil
}
