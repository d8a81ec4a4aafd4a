package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestImagePullFailure(t *testing.T) {
	waiting := func(image, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Image: image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m " + reason}}}
	}
	for _, tc := range []struct {
		name   string
		pods   []corev1.Pod
		image  string
		reason string
	}{
		{name: "none"},
		{name: "creating", pods: []corev1.Pod{{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("a", "ContainerCreating")}}}}},
		{name: "back-off", pods: []corev1.Pod{{}, {Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("a", "ContainerCreating"), waiting("r/b:1", "ImagePullBackOff")}}}},
			image: "r/b:1", reason: "ImagePullBackOff"},
		{name: "init container", pods: []corev1.Pod{{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{waiting("r/i:1", "ErrImagePull")}}}},
			image: "r/i:1", reason: "ErrImagePull"},
		{name: "invalid", pods: []corev1.Pod{{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("R/x", "InvalidImageName")}}}},
			image: "R/x", reason: "InvalidImageName"},
	} {
		image, reason, msg := ImagePullFailure(tc.pods)
		if image != tc.image || reason != tc.reason || (reason != "" && msg != "m "+reason) {
			t.Errorf("%s: got %q %q %q, want %q %q", tc.name, image, reason, msg, tc.image, tc.reason)
		}
	}
}
