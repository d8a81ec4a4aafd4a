package report

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheByObject is what the Reporter needs of the manager's cache, beside the
// namespaces, Services and nodes it shares with the webhook: pods as summaries
// (podSummary), and only the events it reads. Give NewInformer as the cache's
// NewInformer too.
func CacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:   {Transform: summarizePod},
		&corev1.Event{}: {Field: fields.OneTermEqualSelector("reason", "FailedPreStopHook")},
	}
}

// NewInformer is the cache's informer constructor: the pods' informer lists in pages
// and keeps summaries (pagedPods); the others are client-go's.
func NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
	return newInformer(lw, obj, resync, idx)
}
