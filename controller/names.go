package controller

// The installation's fixed names. Name is the Deployment, ServiceAccount, RBAC objects,
// Service, PodDisruptionBudget, Lease and MutatingWebhookConfiguration.
const (
	Name          = "nap"
	TLSSecretName = "nap-webhook-tls"
	LeaseName     = "nap-controller"

	WebhookPort = 9443
	MetricsPort = 8080
	HealthPort  = 8081
)

// DefaultNamespace is where napctl install puts the controller.
const DefaultNamespace = "nap-system"

// MemoryLimitEnv is where the controller's Deployment hands its container's memory
// limit down (resourceFieldRef limits.memory, in bytes): the controller sets its Go
// memory limit from it.
const MemoryLimitEnv = "NAP_MEMORY_LIMIT"
