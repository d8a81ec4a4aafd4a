package version

// Version of nap. The ConfigMap and the controller record it.
var Version = "v0.1.0-dev"
