// Package certs keeps the webhook's TLS without cert-manager: a CA and a serving
// certificate in one Secret of the controller's namespace, the CA bundle of the
// controller's MutatingWebhookConfiguration, both made at the first start and rotated
// long before they expire, in two phases so that the API server trusts a new CA before
// any replica serves a certificate it signed (Rotator).
package certs
